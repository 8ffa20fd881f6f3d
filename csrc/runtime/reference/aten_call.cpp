#include "runtime/aten_fallback.h"
#include "runtime/buffer_layout.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

Kernel aten_call_kernel(const ir::Graph& graph, const ir::Node& node) {
  return [](const KernelCall& call) {
    std::vector<BufferRef> inputs;
    for (const Operand& operand : call.inputs) {
      const auto element_size = static_cast<int64_t>(ir::dtype_size(operand.dtype));
      inputs.push_back(BufferRef{const_cast<std::byte*>(operand.data) + operand.layout.offset * element_size,
                                 operand.dtype, operand.layout.shape, operand.layout.strides});
    }
    const BufferRef output{call.output, call.node.dtype, call.shape, contiguous_strides(call.shape)};
    run_aten_call(*call.node.aten_call, inputs, *call.bindings, output);
  };
}

}  // namespace luminal::runtime::reference
