#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/error.h"
#include "runtime/cpu/jit.h"

namespace luminal::runtime::cuda {

namespace fs = std::filesystem;

namespace {

// NVRTC's C API, declared here rather than from nvrtc.h: the toolkit's headers need not ship it
// (pip's nvidia-cuda-nvrtc does), and the ABI of these entry points is stable across releases.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct NvrtcApi {
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  std::string path;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, ':');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// NVRTC dlopens libnvrtc-builtins by its soname; from a directory that is not on the loader's
// path (a pip wheel) it finds it only if that library is already loaded.
void preload_builtins(const fs::path& nvrtc) {
  std::error_code ec;
  const fs::path dir = nvrtc.parent_path();
  if (dir.empty() || !fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("libnvrtc-builtins.so", 0) == 0) dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
}

template <class F>
void bind(void* lib, const char* symbol, F& fn, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  USER_CHECK(fn != nullptr) << path << " has no " << symbol
                            << ": not an NVRTC library, or too old (luminal needs CUDA 12+)";
}

// Loaded once per process (a dlopen handle is process-wide anyway); a failed search is not
// remembered, so a later call with better candidates can still succeed.
const NvrtcApi& nvrtc_api(const std::vector<std::string>& extra_candidates) {
  static std::mutex mutex;
  static std::unique_ptr<NvrtcApi> api;
  std::lock_guard<std::mutex> lock(mutex);
  if (api) return *api;
  std::vector<std::string> candidates;
  if (!env("LUMINAL_NVRTC_PATH").empty()) candidates.push_back(env("LUMINAL_NVRTC_PATH"));
  candidates.insert(candidates.end(), extra_candidates.begin(), extra_candidates.end());
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) candidates.push_back(name);
  if (!env("CUDA_HOME").empty()) candidates.push_back(env("CUDA_HOME") + "/lib64/libnvrtc.so");
#ifdef LUMINAL_CUDA_TOOLKIT_DIR
  candidates.push_back(std::string(LUMINAL_CUDA_TOOLKIT_DIR) + "/lib64/libnvrtc.so");
#endif
  std::string tried;
  for (const std::string& candidate : candidates) {
    const bool is_path = candidate.find('/') != std::string::npos;
    std::error_code ec;
    if (is_path && !fs::exists(candidate, ec)) continue;
    if (is_path) preload_builtins(candidate);
    void* lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      tried += "\n  " + candidate + ": " + (why ? why : "not loadable");
      continue;
    }
    auto loaded = std::make_unique<NvrtcApi>();
    loaded->path = candidate;
    bind(lib, "nvrtcGetErrorString", loaded->GetErrorString, candidate);
    bind(lib, "nvrtcVersion", loaded->Version, candidate);
    bind(lib, "nvrtcCreateProgram", loaded->CreateProgram, candidate);
    bind(lib, "nvrtcDestroyProgram", loaded->DestroyProgram, candidate);
    bind(lib, "nvrtcCompileProgram", loaded->CompileProgram, candidate);
    bind(lib, "nvrtcGetProgramLogSize", loaded->GetProgramLogSize, candidate);
    bind(lib, "nvrtcGetProgramLog", loaded->GetProgramLog, candidate);
    bind(lib, "nvrtcGetPTXSize", loaded->GetPTXSize, candidate);
    bind(lib, "nvrtcGetPTX", loaded->GetPTX, candidate);
    bind(lib, "nvrtcGetCUBINSize", loaded->GetCUBINSize, candidate);
    bind(lib, "nvrtcGetCUBIN", loaded->GetCUBIN, candidate);
    api = std::move(loaded);
    return *api;
  }
  throw_error(ErrorKind::User,
              "NVRTC (libnvrtc.so) was not found, so luminal cannot compile CUDA kernels. Install it with "
              "`pip install nvidia-cuda-nvrtc` (CUDA 13) or point LUMINAL_NVRTC_PATH at libnvrtc.so." +
                  (tried.empty() ? std::string() : " Tried:" + tried));
}

bool holds_fp16_header(const std::string& dir) {
  std::error_code ec;
  return !dir.empty() && fs::exists(fs::path(dir) / "cuda_fp16.h", ec);
}

}  // namespace

NvrtcCompiler::NvrtcCompiler(NvrtcConfig config) : config_(std::move(config)) {}

std::pair<int, int> NvrtcCompiler::version() {
  const NvrtcApi& api = nvrtc_api(config_.library_candidates);
  int major = 0, minor = 0;
  api.Version(&major, &minor);
  return {major, minor};
}

std::vector<std::string> NvrtcCompiler::base_options(const std::string& arch, ImageKind kind) {
  const bool well_formed =
      arch.rfind("sm_", 0) == 0 && arch.size() > 3 && arch.find_first_not_of("0123456789a", 3) == std::string::npos;
  USER_CHECK(well_formed) << "CUDA architecture '" << arch << "' is not of the form sm_NN (sm_80, sm_90, ...)";
  const std::string virtual_arch = "compute_" + arch.substr(3);
  return {"--gpu-architecture=" + (kind == ImageKind::Cubin ? arch : virtual_arch), "--std=c++17", "--fmad=false"};
}

std::string NvrtcCompiler::include_dir() {
  for (const std::string& dir : split_paths(env("LUMINAL_CUDA_INCLUDE")))
    if (holds_fp16_header(dir)) return dir;
  for (const std::string& dir : config_.include_dirs)
    if (holds_fp16_header(dir)) return dir;
  const std::string cuda_home = env("CUDA_HOME");
  if (!cuda_home.empty() && holds_fp16_header(cuda_home + "/include")) return cuda_home + "/include";
#ifdef LUMINAL_CUDA_INCLUDE_DIR
  if (holds_fp16_header(LUMINAL_CUDA_INCLUDE_DIR)) return LUMINAL_CUDA_INCLUDE_DIR;
#endif
  if (holds_fp16_header("/usr/local/cuda/include")) return "/usr/local/cuda/include";
  return "";
}

std::shared_ptr<const CompiledImage> NvrtcCompiler::compile(const std::string& source, const std::string& name,
                                                            const std::string& arch, ImageKind kind,
                                                            bool needs_cuda_headers) {
  std::vector<std::string> options = base_options(arch, kind);
  if (needs_cuda_headers) {
    const std::string dir = include_dir();
    USER_CHECK(!dir.empty()) << "f16/bf16 kernels include cuda_fp16.h and cuda_bf16.h, which were not found: set "
                             << "LUMINAL_CUDA_INCLUDE or CUDA_HOME to a CUDA toolkit's include directory";
    options.push_back("--include-path=" + dir);
  }
  std::string key_text = source + '\0' + name;
  for (const std::string& o : options) key_text += '\0' + o;
  const std::string key = cpu::content_hash(key_text);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++stats_.cache_hits;
      return it->second;
    }
  }

  const NvrtcApi& api = nvrtc_api(config_.library_candidates);
  auto result = std::make_shared<CompiledImage>();
  nvrtcProgram program = nullptr;
  nvrtcResult rc = api.CreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  INTERNAL_CHECK(rc == kNvrtcSuccess) << "nvrtcCreateProgram failed: " << api.GetErrorString(rc);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());
  rc = api.CompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  size_t log_size = 0;
  if (api.GetProgramLogSize(program, &log_size) == kNvrtcSuccess && log_size > 1) {
    result->log.resize(log_size);
    api.GetProgramLog(program, result->log.data());
    result->log.resize(log_size - 1);  // the trailing NUL
  }
  result->has_warnings = result->log.find("warning") != std::string::npos;
  result->ok = rc == kNvrtcSuccess;
  if (!result->ok && result->log.empty()) result->log = api.GetErrorString(rc);
  if (result->ok) {
    size_t size = 0;
    const bool cubin = kind == ImageKind::Cubin;
    rc = cubin ? api.GetCUBINSize(program, &size) : api.GetPTXSize(program, &size);
    INTERNAL_CHECK(rc == kNvrtcSuccess) << "NVRTC compiled " << name << " but has no image: " << api.GetErrorString(rc);
    result->image.resize(size);
    rc = cubin ? api.GetCUBIN(program, result->image.data()) : api.GetPTX(program, result->image.data());
    INTERNAL_CHECK(rc == kNvrtcSuccess) << "reading " << name << "'s image: " << api.GetErrorString(rc);
  }
  api.DestroyProgram(&program);

  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.compiled;
  auto [it, inserted] = cache_.emplace(key, result);
  return it->second;
}

NvrtcStats NvrtcCompiler::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace luminal::runtime::cuda
