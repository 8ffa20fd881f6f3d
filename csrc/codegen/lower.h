// Lowering: a group of IR nodes chosen by fusion (passes/fusion) -> one kernel IR loop nest.
//
// Needs: the group's nodes in topological order, all elementwise / Gather / reductions over
// `reduce_axis` of `domain`, with in-group edges that fusion's legality accepted (identity
// views, or a per-row value broadcast along the reduce axis). Constant and Iota producers are
// always inlined (as literals / index arithmetic through their view), never loaded.
// Guarantees: a kernel whose params are the buffers of `param_nodes` (inputs read through
// their views, outputs written contiguously), computing every node in `stored`.
#pragma once

#include <vector>

#include "codegen/kernel.h"
#include "ir/graph.h"
#include "passes/attention.h"
#include "passes/group_quantized_gemv.h"

namespace luminal::codegen {

struct LoweredKernel {
  Kernel kernel;
  std::vector<ir::NodeId> param_nodes;  // the node whose buffer each param is
};

LoweredKernel lower_loop_group(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes, const ir::Shape& domain,
                               int reduce_axis, const std::vector<ir::NodeId>& stored);

// A Matmul as a row kernel over [batch.., M, N, K] reducing K: integer matmuls, and M = 1
// products whose strides the GEMV pattern kernel does not take.
LoweredKernel lower_matmul_loop(const ir::Graph& graph, ir::NodeId node);

// A Matmul for which passes::is_gemv holds, as the GEMV pattern kernel.
LoweredKernel lower_gemv(const ir::Graph& graph, ir::NodeId node);

// `gemv` (lower_gemv's, with one row-major product, not the column form) computing `add` =
// product + `bias` (passes::linear_bias), or `add` = `mul` + `bias` after add_gemv_output_scale,
// instead: the bias becomes its last param and `add` its output...
void add_gemv_bias(const ir::Graph& graph, LoweredKernel& gemv, ir::NodeId add, const ir::TensorRef& bias);

// ... and (first, where both) `mul` = product x `scale` (passes::output_scale: a Weight or Input
// read per output column): the scale becomes its last param and `mul` its output.
void add_gemv_output_scale(const ir::Graph& graph, LoweredKernel& gemv, ir::NodeId mul, const ir::TensorRef& scale);

// The symbol lower_expert_gemv's kernel reads one expert's row count from.
inline constexpr const char* kExpertRowsSymbol = "lm_expert_rows";

// One expert's rows of an f32 or bf16 GroupedMatmul for which passes::is_expert_gemv holds, as
// the GEMV pattern kernel (bf16 as bf16 pairs, GemvSpec::bf16_pairs): a [kExpertRowsSymbol, K]
// (a's rows from the expert's first) times the expert's
// weight, out [kExpertRowsSymbol, N] (out's rows from the expert's first). The caller points the
// params at the expert's rows and weight; indices within them are the node's views' (offsets
// included, the expert dim left out).
LoweredKernel lower_expert_gemv(const ir::Graph& graph, ir::NodeId grouped_matmul);

// A matched group-quantized GEMV as the GEMV pattern kernel, dequantizing in registers.
LoweredKernel lower_group_quantized_gemv(const ir::Graph& graph, const passes::GroupQuantizedGemv& pattern);

LoweredKernel lower_scatter(const ir::Graph& graph, ir::NodeId node);

// A CumSum as the scan pattern kernel (ScanSpec): one work item per row, the input read through
// its view.
LoweredKernel lower_scan(const ir::Graph& graph, ir::NodeId node);

// A matched attention pattern as the attention pattern kernel (AttentionSpec).
LoweredKernel lower_attention(const ir::Graph& graph, const passes::AttentionPattern& pattern);

// The contiguous strides of a shape.
std::vector<ir::Expr> contiguous_strides(const ir::Shape& shape);

}  // namespace luminal::codegen
