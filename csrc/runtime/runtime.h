// The pluggable runtime interface: a Runtime turns an optimised IR graph into an Executable.
//
// Buffers cross this boundary as raw pointers with explicit sizes and strides (in elements),
// never as torch tensors: the core does not include torch. The caller keeps every bound
// buffer alive while the Executable may read or write it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace luminal::runtime {

struct BufferRef {
  void* data = nullptr;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  int device_index = -1;         // -1: host memory; otherwise the CUDA device whose memory holds it
};

struct CompileOptions {
  int num_threads = 0;        // 0: the runtime's default
  int search_iterations = 0;  // bound on schedule search; 0: heuristics only
  std::string cache_dir;      // generated-kernel cache; empty: the runtime's default
  std::string debug_dir;      // when set: IR after each pass, kernel sources, stats
  std::string cpu_isa = "native";  // the cpu runtime's generated kernels: "native" or "avx2" (no AVX-512)
  bool time_steps = false;         // time every step of each call (RunStats::steps); runtimes may ignore it
  // Decode GEMVs may read a copy of an int4 weight packed two values a byte, made when the weight
  // is bound (Executable::copied_weights); runtimes may ignore it.
  bool pack_int4_weights = false;
};

// One step of a run and its time (CompileOptions::time_steps).
struct StepTime {
  std::string what;  // what the step computes and the node it came from, as debug_dir's stats name it
  double ms = 0.0;
};

// What the most recent run() did, for tests and benchmarks that must prove a property of a
// run (a KV-cache step copies a row, not the cache).
struct RunStats {
  // Bytes the runtime copied rather than computed: strided caller buffers materialised, a
  // Scatter's copy of the caller buffer it updates plus the elements it writes, results copied
  // into the caller's output buffers (a kernel computing straight into one copies nothing).
  int64_t bytes_copied = 0;
  // Time the call spent blocked in collective waits: the communication no compute hid.
  int64_t collective_wait_ns = 0;
  // Calls the run made to ATen's matmul (each expert of a grouped product one): half-precision
  // products of more rows than the runtime's own kernels take, where ATen multiplies that dtype
  // natively.
  int64_t aten_matmuls = 0;
  // Each step's time, in order, where the executable was compiled with time_steps; else empty.
  std::vector<StepTime> steps;
};

// Each graph output's shape for one call, or nullopt for an output whose shape mentions a data
// symbol (nonzero's row count): that shape is known only during the run.
using OutputShapes = std::vector<std::optional<std::vector<int64_t>>>;

// Allocates graph output `output`, of `shape`, during run(): for the outputs whose shape
// output_shapes could not tell. Returns a contiguous buffer of the output's dtype.
using LateOutputAllocator = std::function<BufferRef(size_t output, const std::vector<int64_t>& shape)>;

class Executable {
 public:
  virtual ~Executable() = default;
  // Binds the graph's symbols from the user inputs' shapes (in Input-node order), checks the
  // program's assertions on them, and returns the outputs' shapes. Throws UserError naming the
  // input whose shape contradicts the graph, or with the message of the assertion that fails.
  virtual OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const = 0;
  // Runs the graph. `outputs` are caller-allocated contiguous buffers of the shapes that
  // output_shapes returned; where it returned nullopt, an empty BufferRef (no data, no sizes),
  // and run() allocates that output through `allocate_late` once its shape is known (a graph
  // without data symbols never calls it). An output may alias an input (an in-place KV-cache
  // update); the runtime must then read that input fully before writing the output.
  // Safe to call from several threads at once on distinct buffers.
  virtual void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
                   const LateOutputAllocator& allocate_late) const = 0;
  // Replaces the buffer bound to a weight (a parameter re-assigned by the user).
  virtual void rebind_weight(const std::string& name, const BufferRef& buffer) = 0;
  // The counters of the most recent run() on any thread; zeros from a runtime that keeps none.
  virtual RunStats last_run_stats() const { return {}; }
  // The weights this executable keeps a copy of in another layout (CompileOptions::
  // pack_int4_weights), made from the weight's buffer when it is bound (after a rebind, perhaps
  // some runs later) and never compared with that buffer again: a caller that writes such a
  // weight in place must rebind it before the next run.
  virtual std::vector<std::string> copied_weights() const { return {}; }
  // The bytes those copies take now.
  virtual int64_t copied_weight_bytes() const { return 0; }
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string name() const = 0;
  // `weights` binds every Weight node by name; the buffers must outlive the Executable.
  virtual std::unique_ptr<Executable> compile(const ir::Graph& graph, const std::map<std::string, BufferRef>& weights,
                                              const CompileOptions& options) const = 0;
};

}  // namespace luminal::runtime
