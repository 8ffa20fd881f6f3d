// NVRTC, loaded on first use with dlopen: luminal never links it, so the module imports on
// machines without it (or without a GPU); a missing library is a UserError naming the fix, and
// only when something needs to compile CUDA.
//
// NvrtcCompiler compiles one translation unit for one architecture ("sm_80", "sm_90") to a
// CUBIN (ptxas has run: resource errors show here, not at load time) or to PTX, and keeps what
// it compiled in memory keyed by the content hash of (source, arch, kind, options), so that
// identical kernels (every layer of a model) compile once per compiler.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace luminal::runtime::cuda {

struct NvrtcConfig {
  // Tried after $LUMINAL_NVRTC_PATH and before the loader's default search ("libnvrtc.so.13",
  // ..., then $CUDA_HOME/lib64 and the toolkit found at build time). The Python bindings add
  // the pip wheels' directories (nvidia-cuda-nvrtc) here.
  std::vector<std::string> library_candidates;
  // Searched for cuda_fp16.h after $LUMINAL_CUDA_INCLUDE (':'-separated), before $CUDA_HOME/include
  // and the build's toolkit. Only f16/bf16 kernels need them.
  std::vector<std::string> include_dirs;
};

enum class ImageKind { Cubin, Ptx };

struct CompiledImage {
  bool ok = false;
  bool has_warnings = false;  // the log reports a warning (the tests treat one as a failure)
  std::string log;            // NVRTC's program log
  std::string image;          // CUBIN bytes or PTX text (empty when !ok)
};

struct NvrtcStats {
  int64_t compiled = 0;    // NVRTC invocations
  int64_t cache_hits = 0;  // requests served from memory
};

class NvrtcCompiler {
 public:
  explicit NvrtcCompiler(NvrtcConfig config = {});
  // Loads NVRTC if needed; UserError when it cannot be found. (major, minor).
  std::pair<int, int> version();
  // Compiles `source` (kernel `name`) for `arch`. NVRTC's diagnostics come back in the result;
  // UserError when NVRTC is missing, or when `needs_cuda_headers` and no directory holds
  // cuda_fp16.h.
  std::shared_ptr<const CompiledImage> compile(const std::string& source, const std::string& name,
                                               const std::string& arch, ImageKind kind, bool needs_cuda_headers);
  NvrtcStats stats() const;
  // The NVRTC options used for `arch` (without include directories): --fmad=false keeps
  // multiply and add separate, rounding per op as the C++ kernels (-ffp-contract=off) do.
  static std::vector<std::string> base_options(const std::string& arch, ImageKind kind);

 private:
  std::string include_dir();  // "" when none holds cuda_fp16.h

  NvrtcConfig config_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const CompiledImage>> cache_;
  NvrtcStats stats_;
};

}  // namespace luminal::runtime::cuda
