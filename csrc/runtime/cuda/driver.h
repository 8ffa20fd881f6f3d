// The CUDA driver API, loaded on first use with dlopen("libcuda.so.1"): luminal never links
// the driver, so the module imports on machines without one; a missing driver is a UserError
// when something needs a device. A skeleton for the CUDA runtime (docs/cuda.md): compiled,
// not yet exercised by any test (no GPU in CI).
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
  decltype(&::cuMemsetD8) MemsetD8 = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
};

// Loads libcuda.so.1 ($LUMINAL_LIBCUDA_PATH first) and calls cuInit once; UserError naming the
// fix when there is no driver or no device.
const DriverApi& driver();

// Throws InternalError "what: <driver message>" unless `result` is CUDA_SUCCESS.
void check_cuda(CUresult result, const char* what);

// A device's primary context, current on the calling thread while it is used.
class CudaDevice {
 public:
  explicit CudaDevice(int ordinal = 0);
  ~CudaDevice();
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;
  void make_current() const;
  const std::string& arch() const { return arch_; }  // "sm_90"

 private:
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
