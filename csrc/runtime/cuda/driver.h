// The CUDA driver API, loaded on first use with dlopen("libcuda.so.1"): luminal never links
// the driver, so the module imports on machines without one; a missing driver is a UserError
// when something needs a device (docs/cuda.md). Exercised only by tests/cuda's GPU tests, which
// skip without a device.
#pragma once

#include <cuda.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/cuda/emit.h"
#include "ir/expr.h"
#include "runtime/cuda/nvrtc.h"

namespace luminal::runtime::cuda {

struct DriverApi {
  decltype(&::cuInit) Init = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDeviceGet) DeviceGet = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease = nullptr;
  decltype(&::cuCtxSetCurrent) CtxSetCurrent = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuMemAlloc) MemAlloc = nullptr;
  decltype(&::cuMemFree) MemFree = nullptr;
  decltype(&::cuMemcpyDtoH) MemcpyDtoH = nullptr;
  decltype(&::cuMemcpyHtoD) MemcpyHtoD = nullptr;
  decltype(&::cuMemsetD8) MemsetD8 = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuStreamCreate) StreamCreate = nullptr;
  decltype(&::cuStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cuStreamBeginCapture) StreamBeginCapture = nullptr;
  decltype(&::cuStreamEndCapture) StreamEndCapture = nullptr;
  decltype(&::cuGraphInstantiateWithFlags) GraphInstantiate = nullptr;
  decltype(&::cuGraphLaunch) GraphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) GraphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) GraphDestroy = nullptr;
  decltype(&::cuMemcpyDtoDAsync) MemcpyDtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync = nullptr;
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuMemAllocHost) MemAllocHost = nullptr;
  decltype(&::cuMemFreeHost) MemFreeHost = nullptr;
  decltype(&::cuPointerGetAttribute) PointerGetAttribute = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
};

// Loads libcuda.so.1 ($LUMINAL_LIBCUDA_PATH first) and calls cuInit once; UserError naming the
// fix when there is no driver or no device.
const DriverApi& driver();

// Throws InternalError "what: <driver message>" unless `result` is CUDA_SUCCESS.
void check_cuda(CUresult result, const char* what);

// The ordinal of the device whose memory `pointer` is in; UserError naming `what` when it is
// not device memory.
int device_of_pointer(const void* pointer, const std::string& what);

// Device memory, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  CUdeviceptr get() const { return pointer_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr pointer_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory (an asynchronous copy's destination), freed on destruction.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
};

// A stream of our own (non-blocking: it never waits on the legacy default stream implicitly).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

// A device's primary context, current on the calling thread while it is used.
class CudaDevice {
 public:
  explicit CudaDevice(int ordinal = 0);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;
  void make_current() const;
  const std::string& arch() const { return arch_; }  // "sm_90"
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string arch_;
};

// Generated kernels loaded on one device, compiled by NVRTC for its arch (cached by the
// compiler) and loaded once each.
class KernelModules {
 public:
  KernelModules(const CudaDevice& device, NvrtcCompiler& compiler) : device_(device), compiler_(compiler) {}
  ~KernelModules();
  KernelModules(const KernelModules&) = delete;
  KernelModules& operator=(const KernelModules&) = delete;
  CUfunction function(const codegen::cuda::CudaKernelSource& kernel);

 private:
  const CudaDevice& device_;
  NvrtcCompiler& compiler_;
  std::mutex mutex_;
  std::map<std::string, std::pair<CUmodule, CUfunction>> loaded_;
};

// The grid for a kernel's LaunchSpec at these symbol values (capped: every kernel grid-strides).
unsigned grid_blocks(const codegen::cuda::LaunchSpec& launch, const ir::SymbolBindings& symbols);

// Launches `kernel` on `stream` with its buffers (device pointers, in param order), its
// symbols' values and `info` (a zeroed 3 x int64 device buffer the caller reads back).
void launch_kernel(CUfunction function, const codegen::cuda::CudaKernelSource& kernel,
                   const std::vector<CUdeviceptr>& buffers, const ir::SymbolBindings& symbols, CUdeviceptr info,
                   CUstream stream);

}  // namespace luminal::runtime::cuda
