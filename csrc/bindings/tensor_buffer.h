// torch.Tensor <-> runtime::BufferRef. The only place that maps between c10's dtypes and
// luminal's; dtype or device mismatches become UserErrors naming the tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime/runtime.h"

namespace luminal::bindings {

ir::DType to_ir_dtype(c10::ScalarType t, const std::string& what);
c10::ScalarType to_torch_dtype(ir::DType t);

// A view of the tensor's memory (no copy). `what` names it in errors ("input 'x'").
// `device` is the runtime's device type ("cpu"): a tensor elsewhere is a UserError.
runtime::BufferRef buffer_of(const at::Tensor& t, const std::string& what, const std::string& device);

// A tensor over the buffer's memory, through its sizes and strides (no copy; the buffer must
// outlive it).
at::Tensor tensor_of(const runtime::BufferRef& buffer);

// A new contiguous tensor of this shape and dtype on `device` (on the CPU, a large one in the
// mapping of the last large one freed, if it fits: large_output_allocator.h).
at::Tensor empty_tensor(const std::vector<int64_t>& sizes, ir::DType dtype, const c10::Device& device = c10::kCPU);

}  // namespace luminal::bindings
