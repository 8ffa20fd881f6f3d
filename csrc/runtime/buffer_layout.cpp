#include "runtime/buffer_layout.h"

#include <cstdlib>

#include "common/error.h"
#include "ir/expr.h"

namespace luminal::runtime {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

int64_t byte_count(const std::vector<int64_t>& shape, ir::DType dtype) {
  return element_count(shape) * static_cast<int64_t>(ir::dtype_size(dtype));
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d > 0; --d) {
    strides[d - 1] = stride;
    stride *= shape[d - 1];
  }
  return strides;
}

bool is_dense(const BufferRef& buffer) {
  int64_t expected = 1;
  for (size_t d = buffer.sizes.size(); d > 0; --d) {
    if (buffer.sizes[d - 1] != 1 && buffer.strides[d - 1] != expected) return element_count(buffer.sizes) == 0;
    expected *= buffer.sizes[d - 1];
  }
  return true;
}

int64_t span_bytes(const BufferRef& buffer) {
  int64_t last = 0;
  for (size_t d = 0; d < buffer.sizes.size(); ++d) {
    if (buffer.sizes[d] == 0) return 0;
    last += (buffer.sizes[d] - 1) * std::abs(buffer.strides[d]);
  }
  return (last + 1) * static_cast<int64_t>(ir::dtype_size(buffer.dtype));
}

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto a_begin = reinterpret_cast<uintptr_t>(a);
  const auto b_begin = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && a_begin < b_begin + static_cast<uintptr_t>(b_bytes) &&
         b_begin < a_begin + static_cast<uintptr_t>(a_bytes);
}

bool overlaps(const BufferRef& a, const BufferRef& b) {
  return overlaps(a.data, span_bytes(a), b.data, span_bytes(b));
}

void check_buffer(const char* kind, const std::string& name, const BufferRef& buffer, ir::DType dtype) {
  USER_CHECK(buffer.dtype == dtype) << kind << " '" << name << "' is " << ir::dtype_name(buffer.dtype)
                                    << " but the compiled graph expects " << ir::dtype_name(dtype);
  USER_CHECK(buffer.strides.size() == buffer.sizes.size())
      << kind << " '" << name << "' has " << buffer.sizes.size() << " sizes but " << buffer.strides.size() << " strides";
  USER_CHECK(buffer.data != nullptr || element_count(buffer.sizes) == 0) << kind << " '" << name << "' has no data";
}

void check_weight(const ir::Node& node, const BufferRef& buffer) {
  check_buffer("weight", node.name, buffer, node.dtype);
  if (!ir::is_static(node.shape)) return;
  const std::vector<int64_t> expected = ir::evaluate_shape(node.shape, {});
  USER_CHECK(buffer.sizes == expected) << "weight '" << node.name << "' has shape " << sizes_text(buffer.sizes)
                                       << " but the compiled graph expects " << sizes_text(expected);
}

void check_weight_shape(const ir::Node& node, const BufferRef& buffer, const std::vector<int64_t>& shape) {
  USER_CHECK(buffer.sizes == shape) << "weight '" << node.name << "' has shape " << sizes_text(buffer.sizes)
                                    << " but this call expects " << sizes_text(shape);
}

void check_outputs(const ir::Graph& graph, const std::vector<BufferRef>& outputs, const OutputShapes& shapes) {
  USER_CHECK(outputs.size() == graph.outputs().size())
      << "the compiled graph has " << graph.outputs().size() << " outputs but " << outputs.size() << " were passed";
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!shapes[k]) {
      USER_CHECK(outputs[k].data == nullptr && outputs[k].sizes.empty())
          << "output " << k << "'s shape depends on tensor data: pass an empty buffer and allocate it when run() asks";
      continue;
    }
    check_buffer("output", std::to_string(k), outputs[k], graph.node(graph.outputs()[k].node).dtype);
    USER_CHECK(outputs[k].sizes == *shapes[k]) << "output " << k << " has shape " << sizes_text(outputs[k].sizes)
                                               << " but this call produces " << sizes_text(*shapes[k]);
    USER_CHECK(is_dense(outputs[k])) << "output " << k << " must be a contiguous buffer";
  }
}

}  // namespace luminal::runtime
