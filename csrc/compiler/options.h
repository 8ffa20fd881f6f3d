// Compile options, validated on the Python side (luminal/options.py) and passed down here.
#pragma once

#include <string>

namespace luminal {

struct CompileOptions {
  int num_threads = 0;       // 0: the runtime's default
  int search_iterations = 0;  // bound on schedule search; the reference runtime does none
  std::string fallback = "aten";  // an op with no native translation: "aten" runs it through ATen, "error" raises
  std::string debug_dir;     // when set: IR text and stats are written here
  std::string cache_dir;     // kernel cache (used by generating runtimes)
  std::string cpu_isa = "native";  // the cpu runtime's kernels: every extension of this CPU, or "avx2"
  bool profile = false;  // time each step of every call (stats' step_ms_last_run)
  bool pack_int4_weights = false;  // decode GEMVs read int4 weights packed two a byte (runtime.h)
};

}  // namespace luminal
