// What every runtime checks and asks about the caller's buffers (BufferRef): element and byte
// counts, row-major density, overlap, and the checks a bound input, output or weight must pass.
// Shared by the reference and cpu runtimes so that both accept and reject the same buffers
// with the same messages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "runtime/runtime.h"

namespace luminal::runtime {

int64_t element_count(const std::vector<int64_t>& shape);
int64_t byte_count(const std::vector<int64_t>& shape, ir::DType dtype);
// Row-major strides (in elements) of a dense buffer of this shape.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// "[2, 3]", for error messages.
std::string sizes_text(const std::vector<int64_t>& sizes);

// Row-major and dense, ignoring the strides of size-1 dims (which never advance).
bool is_dense(const BufferRef& buffer);
// The bytes from buffer.data to the end of its last element; 0 when empty. Strides are
// non-negative (torch has no negative strides).
int64_t span_bytes(const BufferRef& buffer);
// Whether two byte ranges (or two caller buffers' spans) share a byte.
bool overlaps(const BufferRef& a, const BufferRef& b);
bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes);

// A caller's buffer bound to a graph input, output or weight (`kind` names which, `name` which
// one): its dtype is the node's, it has one stride per size, and data unless it is empty.
void check_buffer(const char* kind, const std::string& name, const BufferRef& buffer, ir::DType dtype);
// check_buffer for a Weight node's buffer, and its shape when the node's shape is static (a
// symbolic weight shape is checked per run, by check_weight_shape).
void check_weight(const ir::Node& node, const BufferRef& buffer);
// A weight's buffer against `shape`, its node's shape as this call binds it.
void check_weight_shape(const ir::Node& node, const BufferRef& buffer, const std::vector<int64_t>& shape);
// The caller's output buffers: one per graph output, of its dtype, of the shape this call
// produces (`shapes`, in output order), and contiguous; an empty BufferRef where the shape is
// known only during the run (nullopt).
void check_outputs(const ir::Graph& graph, const std::vector<BufferRef>& outputs, const OutputShapes& shapes);

}  // namespace luminal::runtime
