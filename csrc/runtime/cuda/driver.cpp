#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

#include "common/error.h"

namespace luminal::runtime::cuda {

namespace {

using codegen::cuda::LaunchSpec;

// Grid-stride kernels need no more blocks than fill the device several times over.
constexpr int64_t kMaxBlocks = 65535;

template <class F>
void bind(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  USER_CHECK(fn != nullptr) << "libcuda.so.1 has no " << symbol << ": the NVIDIA driver is too old for luminal";
}

std::unique_ptr<DriverApi> load_driver() {
  const char* override_path = std::getenv("LUMINAL_LIBCUDA_PATH");
  const std::string path = override_path && *override_path ? override_path : "libcuda.so.1";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    throw_error(ErrorKind::User, "the NVIDIA driver (" + path + ") could not be loaded, so luminal cannot run on a " +
                                     "GPU: " + (why ? why : "not found") + ". Run on the CPU, or install the driver.");
  }
  auto api = std::make_unique<DriverApi>();
  // The versioned names cuda.h's macros map to (cuMemAlloc -> cuMemAlloc_v2, ...).
  bind(lib, "cuInit", api->Init);
  bind(lib, "cuGetErrorString", api->GetErrorString);
  bind(lib, "cuDeviceGet", api->DeviceGet);
  bind(lib, "cuDeviceGetAttribute", api->DeviceGetAttribute);
  bind(lib, "cuDevicePrimaryCtxRetain", api->DevicePrimaryCtxRetain);
  bind(lib, "cuDevicePrimaryCtxRelease_v2", api->DevicePrimaryCtxRelease);
  bind(lib, "cuCtxSetCurrent", api->CtxSetCurrent);
  bind(lib, "cuModuleLoadData", api->ModuleLoadData);
  bind(lib, "cuModuleUnload", api->ModuleUnload);
  bind(lib, "cuModuleGetFunction", api->ModuleGetFunction);
  bind(lib, "cuLaunchKernel", api->LaunchKernel);
  bind(lib, "cuMemAlloc_v2", api->MemAlloc);
  bind(lib, "cuMemFree_v2", api->MemFree);
  bind(lib, "cuMemcpyDtoH_v2", api->MemcpyDtoH);
  bind(lib, "cuMemcpyHtoD_v2", api->MemcpyHtoD);
  bind(lib, "cuMemsetD8_v2", api->MemsetD8);
  bind(lib, "cuStreamSynchronize", api->StreamSynchronize);
  bind(lib, "cuStreamCreate", api->StreamCreate);
  bind(lib, "cuStreamDestroy_v2", api->StreamDestroy);
  bind(lib, "cuStreamBeginCapture_v2", api->StreamBeginCapture);
  bind(lib, "cuStreamEndCapture", api->StreamEndCapture);
  bind(lib, "cuGraphInstantiateWithFlags", api->GraphInstantiate);
  bind(lib, "cuGraphLaunch", api->GraphLaunch);
  bind(lib, "cuGraphExecDestroy", api->GraphExecDestroy);
  bind(lib, "cuGraphDestroy", api->GraphDestroy);
  bind(lib, "cuMemcpyDtoDAsync_v2", api->MemcpyDtoDAsync);
  bind(lib, "cuMemcpyDtoHAsync_v2", api->MemcpyDtoHAsync);
  bind(lib, "cuMemsetD8Async", api->MemsetD8Async);
  bind(lib, "cuMemAllocHost_v2", api->MemAllocHost);
  bind(lib, "cuMemFreeHost", api->MemFreeHost);
  bind(lib, "cuPointerGetAttribute", api->PointerGetAttribute);
  bind(lib, "cuCtxSynchronize", api->CtxSynchronize);
  const CUresult rc = api->Init(0);
  if (rc != CUDA_SUCCESS) {
    const char* message = nullptr;
    api->GetErrorString(rc, &message);
    throw_error(ErrorKind::User, std::string("the NVIDIA driver is installed but cuInit failed (") +
                                     (message ? message : "unknown error") + "): no usable GPU");
  }
  return api;
}

}  // namespace

const DriverApi& driver() {
  static std::mutex mutex;
  static std::unique_ptr<DriverApi> api;
  std::lock_guard<std::mutex> lock(mutex);
  if (!api) api = load_driver();  // a failure is not remembered: it throws every time
  return *api;
}

void check_cuda(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* message = nullptr;
  driver().GetErrorString(result, &message);
  INTERNAL_ERROR() << what << ": " << (message ? message : "unknown CUDA error") << " (" << static_cast<int>(result)
                   << ")";
}

int device_of_pointer(const void* pointer, const std::string& what) {
  int ordinal = -1;
  const CUresult rc = driver().PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                   reinterpret_cast<CUdeviceptr>(pointer));
  USER_CHECK(rc == CUDA_SUCCESS && ordinal >= 0)
      << what << " is not in CUDA device memory (its pointer is unknown to the driver); pass a CUDA tensor";
  return ordinal;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const CUresult rc = driver().MemAlloc(&pointer_, bytes);
  USER_CHECK(rc == CUDA_SUCCESS) << "out of GPU memory: luminal needs " << bytes
                                 << " bytes more for this model's intermediate buffers";
}

DeviceBuffer::~DeviceBuffer() {
  if (pointer_) driver().MemFree(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : pointer_(other.pointer_), bytes_(other.bytes_) {
  other.pointer_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_) driver().MemFree(pointer_);
    pointer_ = other.pointer_;
    bytes_ = other.bytes_;
    other.pointer_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(size_t bytes) { check_cuda(driver().MemAllocHost(&pointer_, bytes), "cuMemAllocHost"); }

PinnedBuffer::~PinnedBuffer() {
  if (pointer_) driver().MemFreeHost(pointer_);
}

Stream::Stream() { check_cuda(driver().StreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); }

Stream::~Stream() {
  if (stream_) driver().StreamDestroy(stream_);
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  const DriverApi& api = driver();
  check_cuda(api.DeviceGet(&device_, ordinal), "cuDeviceGet");
  int major = 0, minor = 0;
  check_cuda(api.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_), "cc major");
  check_cuda(api.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_), "cc minor");
  arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
  check_cuda(api.DevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
}

CudaDevice::~CudaDevice() {
  if (context_) driver().DevicePrimaryCtxRelease(device_);
}

void CudaDevice::make_current() const { check_cuda(driver().CtxSetCurrent(context_), "cuCtxSetCurrent"); }

KernelModules::~KernelModules() {
  for (auto& [name, loaded] : loaded_) driver().ModuleUnload(loaded.first);
}

CUfunction KernelModules::function(const codegen::cuda::CudaKernelSource& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = loaded_.find(kernel.name); it != loaded_.end()) return it->second.second;
  auto image = compiler_.compile(kernel.source, kernel.name, device_.arch(), ImageKind::Cubin, kernel.uses_halves);
  INTERNAL_CHECK(image->ok) << "NVRTC rejected generated kernel " << kernel.name << ":\n" << image->log;
  device_.make_current();
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  check_cuda(driver().ModuleLoadData(&module, image->image.data()), "cuModuleLoadData");
  check_cuda(driver().ModuleGetFunction(&function, module, kernel.name.c_str()), "cuModuleGetFunction");
  loaded_[kernel.name] = {module, function};
  return function;
}

unsigned grid_blocks(const LaunchSpec& launch, const ir::SymbolBindings& symbols) {
  const int64_t work = launch.work.evaluate(symbols);
  int64_t per_block = 1;
  switch (launch.kind) {
    case LaunchSpec::Kind::Elementwise: per_block = launch.block_threads; break;
    case LaunchSpec::Kind::Row: per_block = 1; break;
    case LaunchSpec::Kind::Warp: per_block = launch.block_threads / 32; break;
    case LaunchSpec::Kind::Single: return 1;
    case LaunchSpec::Kind::Attention: per_block = 1; break;
  }
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

void launch_kernel(CUfunction function, const codegen::cuda::CudaKernelSource& kernel,
                   const std::vector<CUdeviceptr>& buffers, const ir::SymbolBindings& symbols, CUdeviceptr info,
                   CUstream stream) {
  // cuLaunchKernel takes a pointer to each argument: buffers, then symbol values, then info.
  std::vector<int64_t> symbol_values;
  for (const std::string& s : kernel.symbols) {
    auto it = symbols.find(s);
    INTERNAL_CHECK(it != symbols.end()) << "kernel " << kernel.name << " needs symbol " << s << ", which is unbound";
    symbol_values.push_back(it->second);
  }
  std::vector<void*> args;
  std::vector<CUdeviceptr> pointers = buffers;
  pointers.push_back(info);
  for (size_t i = 0; i + 1 < pointers.size(); ++i) args.push_back(&pointers[i]);
  for (int64_t& v : symbol_values) args.push_back(&v);
  args.push_back(&pointers.back());
  const unsigned grid = grid_blocks(kernel.launch, symbols);
  if (kernel.launch.work.evaluate(symbols) == 0) return;  // nothing to compute; launching 0 blocks is an error
  check_cuda(driver().LaunchKernel(function, grid, 1, 1, static_cast<unsigned>(kernel.launch.block_threads), 1, 1, 0,
                                   stream, args.data(), nullptr),
             kernel.name.c_str());
}

}  // namespace luminal::runtime::cuda
