#include "runtime/buffer_layout.h"
#include "runtime/collectives.h"
#include "runtime/reference/kernel.h"

namespace luminal::runtime::reference {

// The oracle runs one node at a time: it issues the collective and waits for it at once.
Kernel collective_kernel(const ir::Node& node) {
  check_collective_group(*node.collective, node.origin);
  return [](const KernelCall& call) {
    const Operand& operand = call.inputs.at(0);
    const auto element_size = static_cast<int64_t>(ir::dtype_size(operand.dtype));
    const BufferRef input{const_cast<std::byte*>(operand.data) + operand.layout.offset * element_size, operand.dtype,
                          operand.layout.shape, operand.layout.strides};
    const BufferRef output{call.output, call.node.dtype, call.shape, contiguous_strides(call.shape)};
    start_collective(*call.node.collective, input, output, *call.bindings)->wait();
  };
}

}  // namespace luminal::runtime::reference
