// C++ kernels -> shared objects -> function pointers, through a content-addressed disk cache.
//
// Kernels are batched into a few translation units (g++ start-up dominates small kernels),
// compiled in parallel, and cached under `cache_dir` by a hash of the source, the compiler's
// identity, the flags and the CPU: identical kernels (identical layers) share one function,
// and a second process with the same graph compiles nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace luminal::runtime::cpu {

using KernelFn = int64_t (*)(void* const* params, const int64_t* symbols, int64_t begin, int64_t end, int64_t* info);

// The instruction sets generated kernels may use. Native: every extension of this CPU
// (-march=native). Avx2: none of AVX-512 (-mno-avx512f), the kernels an AVX2 machine runs; tests
// force it so that both forms of the ISA-specific kernels (lm_tile_strips) run on one machine.
enum class CpuIsa { Native, Avx2 };

// "native" or "avx2"; anything else is a UserError naming the valid values.
CpuIsa parse_cpu_isa(const std::string& name);

// Whether kernels built for `isa` here multiply bf16 pairs (AVX512-BF16's vdpbf16ps) and this
// CPU has no AMX-BF16 tiles, which ATen's oneDNN GEMMs use instead.
bool kernels_have_bf16_pairs_without_amx(CpuIsa isa);

// Whether kernels built for `isa` here multiply bf16 pairs on AMX tiles (lm_gemv_bf16_amx): the
// CPU has AMX-BF16 and Linux let this process use the tiles' state (asked for once, here: without
// that permission the first tile instruction kills the process).
bool kernels_have_amx_bf16(CpuIsa isa);

// Whether kernels built for `isa` here multiply a prompt's bf16 Linears as bf16 pairs, with
// vdpbf16ps or on AMX tiles: one of the two above.
bool kernels_multiply_bf16_pairs(CpuIsa isa);

// Whether kernels built for `isa` here have AVX-512 on an AMD CPU of family 1Ah or later (Zen
// 5), whose server and desktop cores run two 512-bit FMAs a cycle, twice AVX2's rate (Zen 4
// splits each in two; so do Zen 5's mobile cores, which this does not tell apart).
bool kernels_have_zen5_avx512(CpuIsa isa);

struct JitOptions {
  std::string cache_dir;  // empty: $LUMINAL_CACHE_DIR, $XDG_CACHE_HOME/luminal or ~/.cache/luminal
  int jobs = 0;           // parallel compiler processes; 0: hardware threads
  std::string debug_dir;  // when set, every translation unit's source is copied here
  CpuIsa isa = CpuIsa::Native;
};

struct JitStats {
  int translation_units = 0;
  int compiled = 0;  // translation units built this time (the rest came from the cache)
  double compile_ms = 0;
};

// Owns the loaded shared objects; function pointers stay valid while it lives.
class KernelLibrary {
 public:
  ~KernelLibrary();
  KernelFn function(const std::string& name) const;
  std::vector<void*> handles;
  std::vector<std::pair<std::string, KernelFn>> functions;
};

// `functions[i]` is the source of one extern "C" function named `names[i]` (names unique).
std::shared_ptr<KernelLibrary> build_kernels(const std::vector<std::string>& names,
                                             const std::vector<std::string>& functions, const JitOptions& options,
                                             JitStats& stats);

// A 128-bit content hash in hex, stable across processes and machines.
std::string content_hash(const std::string& text);

std::string default_cache_dir();

// The compiler's version and flags and the CPU's model and flags: what a kernel binary, or a
// schedule timed on this machine, is only valid for.
const std::string& toolchain_identity(CpuIsa isa);

}  // namespace luminal::runtime::cpu
