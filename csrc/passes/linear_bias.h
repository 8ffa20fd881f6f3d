// A Linear's bias as the GEMM that computes its product can add it: out = Add(a x b, bias) where
// bias is a vector along the product's last dim (a Weight or graph Input, broadcast over every
// other dim) of the product's dtype. A runtime whose GEMM adds the bias before it rounds and
// stores (the cpu runtime's strip GEMVs, cuBLASLt's bias epilogue on CUDA) drops the Add kernel
// and the product's buffer: one rounding of a x b + bias, as eager's addmm rounds.
#pragma once

#include <optional>

#include "ir/graph.h"

namespace luminal::passes {

// The bias `add` adds to `product` (read contiguously, as the product's own shape), or none when
// `add` is not product + bias vector in either operand order. With `through_reshape`, `add` may
// also read the product through a contiguous reshape that keeps its last dim (a Linear's output
// given its batch dims back: torchao's `(x2d @ w * scale).view(*batch, N) + bias`); the bias is
// read over `add`'s shape, a vector along its last dim either way.
std::optional<ir::TensorRef> linear_bias(const ir::Graph& graph, const ir::Node& add, ir::NodeId product,
                                         bool through_reshape = false);

}  // namespace luminal::passes
