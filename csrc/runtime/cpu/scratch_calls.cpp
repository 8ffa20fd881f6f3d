#include "runtime/cpu/scratch_calls.h"

#include <cstring>

#include "runtime/buffer_layout.h"

namespace luminal::runtime::cpu {

ScratchCalls::ScratchCalls(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
                           const OutputShapes& shapes, std::function<ir::DType(size_t output)> output_dtype)
    : inputs_(inputs), outputs_(outputs.size()) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!shapes[k]) continue;  // sized by a data symbol: allocated during the call
    const BufferRef& out = outputs[k];
    const int64_t bytes = byte_count(out.sizes, out.dtype);
    scratch_.emplace_back(static_cast<size_t>(bytes));
    for (size_t i = 0; i < inputs_.size(); ++i) {
      BufferRef& input = inputs_[i];
      if (input.data != out.data || !is_dense(input) || byte_count(input.sizes, input.dtype) != bytes) continue;
      restored_.emplace_back(&inputs[i], scratch_.back().data());
      input.data = scratch_.back().data();
    }
    outputs_[k] = BufferRef{scratch_.back().data(), out.dtype, out.sizes, out.strides};
  }
  allocate_late_ = [this, output_dtype = std::move(output_dtype)](size_t k, const std::vector<int64_t>& shape) {
    const ir::DType dtype = output_dtype(k);
    late_.emplace_back(static_cast<size_t>(byte_count(shape, dtype)));
    return BufferRef{late_.back().data(), dtype, shape, contiguous_strides(shape)};
  };
}

void ScratchCalls::reset() {
  late_.clear();
  for (const auto& [input, copy] : restored_)
    std::memcpy(copy, input->data, static_cast<size_t>(byte_count(input->sizes, input->dtype)));
}

}  // namespace luminal::runtime::cpu
