#include "bindings/tensor_buffer.h"

#include <ATen/EmptyTensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include "bindings/large_output_allocator.h"
#include "common/error.h"

namespace luminal::bindings {

ir::DType to_ir_dtype(c10::ScalarType t, const std::string& what) {
  switch (t) {
    case c10::ScalarType::Float: return ir::DType::F32;
    case c10::ScalarType::Half: return ir::DType::F16;
    case c10::ScalarType::BFloat16: return ir::DType::BF16;
    case c10::ScalarType::Double: return ir::DType::F64;
    case c10::ScalarType::Char: return ir::DType::I8;
    case c10::ScalarType::Short: return ir::DType::I16;
    case c10::ScalarType::Int: return ir::DType::I32;
    case c10::ScalarType::Long: return ir::DType::I64;
    case c10::ScalarType::Byte: return ir::DType::U8;
    case c10::ScalarType::Bool: return ir::DType::Bool;
    default: break;
  }
  UNSUPPORTED_ERROR() << what << " has dtype " << c10::toString(t)
                      << ", which luminal does not support (supported: float32, float16, bfloat16, float64, "
                         "int8, int16, int32, int64, uint8, bool)";
  return ir::DType::F32;
}

c10::ScalarType to_torch_dtype(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return c10::ScalarType::Float;
    case ir::DType::F16: return c10::ScalarType::Half;
    case ir::DType::BF16: return c10::ScalarType::BFloat16;
    case ir::DType::F64: return c10::ScalarType::Double;
    case ir::DType::I8: return c10::ScalarType::Char;
    case ir::DType::I16: return c10::ScalarType::Short;
    case ir::DType::I32: return c10::ScalarType::Int;
    case ir::DType::I64: return c10::ScalarType::Long;
    case ir::DType::U8: return c10::ScalarType::Byte;
    case ir::DType::Bool: return c10::ScalarType::Bool;
  }
  return c10::ScalarType::Float;
}

runtime::BufferRef buffer_of(const at::Tensor& t, const std::string& what, const std::string& device) {
  const std::string tensor_device = c10::DeviceTypeName(t.device().type(), /*lower_case=*/true);
  if (tensor_device != device) {
    USER_ERROR() << what << " is on device '" << t.device().str() << "' but this compiled model runs on '" << device
                 << "'"
                 << (tensor_device == "cuda"
                         ? ": this luminal build has no CUDA runtime (rebuild with -DLUMINAL_CUDA=ON on a machine with "
                           "the CUDA toolkit), or move the model and inputs to the CPU"
                         : ": move the tensor to that device");
  }
  USER_CHECK(t.layout() == c10::kStrided) << what << " has layout " << t.layout() << "; only strided tensors are supported";
  runtime::BufferRef ref;
  ref.dtype = to_ir_dtype(t.scalar_type(), what);
  ref.data = t.data_ptr();
  ref.sizes = t.sizes().vec();
  ref.strides = t.strides().vec();
  if (t.is_cuda()) ref.device_index = t.device().index();
  return ref;
}

at::Tensor tensor_of(const runtime::BufferRef& buffer) {
  at::TensorOptions options = at::TensorOptions().dtype(to_torch_dtype(buffer.dtype));
  if (buffer.device_index >= 0) options = options.device(c10::Device(c10::kCUDA, buffer.device_index));
  return at::from_blob(buffer.data, buffer.sizes, buffer.strides, options);
}

at::Tensor empty_tensor(const std::vector<int64_t>& sizes, ir::DType dtype, const c10::Device& device) {
  if (device.is_cpu())
    return at::detail::empty_generic(sizes, large_output_allocator(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                     to_torch_dtype(dtype), std::nullopt);
  return at::empty(sizes, at::TensorOptions().dtype(to_torch_dtype(dtype)).device(device));
}

}  // namespace luminal::bindings
