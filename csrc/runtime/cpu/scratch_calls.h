// Calls made only to be timed (the schedule search): every output goes to a scratch buffer, so
// the caller's tensors are written once, by the real call. An output the caller passed as an
// input's own buffer (a cache updated in place) gets a copy of that input as both, so that the
// in-place path is what gets timed, restored before every call: a call that advances a
// StaticCache's length must see the same length each time.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "runtime/aligned_buffer.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cpu {

class ScratchCalls {
 public:
  // `shapes`: the call's output shapes (nullopt: sized by a data symbol, allocated during the
  // call with `output_dtype`).
  ScratchCalls(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs, const OutputShapes& shapes,
               std::function<ir::DType(size_t output)> output_dtype);
  ScratchCalls(const ScratchCalls&) = delete;
  ScratchCalls& operator=(const ScratchCalls&) = delete;

  // Restores the copied inputs and drops the last call's late outputs: the next call starts
  // from the caller's state.
  void reset();

  const std::vector<BufferRef>& inputs() const { return inputs_; }
  const std::vector<BufferRef>& outputs() const { return outputs_; }
  const LateOutputAllocator& allocate_late() const { return allocate_late_; }

 private:
  std::vector<BufferRef> inputs_, outputs_;
  std::vector<AlignedBuffer> scratch_, late_;
  std::vector<std::pair<const BufferRef*, std::byte*>> restored_;  // (caller's input, its copy)
  LateOutputAllocator allocate_late_;
};

}  // namespace luminal::runtime::cpu
