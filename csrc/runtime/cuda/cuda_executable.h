// Runs a CudaProgram on the GPU whose memory holds the model's weights (or, without weights,
// its first input).
//
// Per distinct set of symbol values, a call plan lays out one device arena (intermediates,
// staged inputs, packed GEMM operands) and the cuBLASLt calls. Each segment of steps without a
// host step is captured once as a CUDA graph and replayed while the addresses it was captured
// with hold: weights and large inputs (a KV cache) are bound by their device pointer; small
// inputs (token ids, positions) are copied into the arena first, and outputs are copied out
// last, so that a decode loop's new small tensors every step do not defeat the graph. A
// StaticCache update writes into the caller's cache tensor (no copy of the cache).
//
// Work is enqueued on the caller's stream (call_stream.h: torch's current stream), and run()
// returns once it has finished, having checked the kernels' error reports.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cuda {

class CublasLt;

struct CudaExecutableOptions {
  bool graphs = true;  // capture segments as CUDA graphs; false: launch every step each call
  // Inputs up to this size that no step updates in place are staged (copied into the arena).
  int64_t stage_input_bytes = int64_t{1} << 16;
};

class CudaExecutable : public Executable {
 public:
  CudaExecutable(CudaProgram program, std::map<std::string, BufferRef> weights, NvrtcCompiler& compiler,
                 CudaExecutableOptions options);
  ~CudaExecutable() override;

  OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
           const LateOutputAllocator& allocate_late) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;
  RunStats last_run_stats() const override;

  // Counters for tests: CUDA graphs captured and replayed, steps launched outside graphs.
  struct GraphStats {
    int64_t captured = 0, replayed = 0, direct_steps = 0;
  };
  GraphStats graph_stats() const;

 private:
  struct CallPlan;
  struct Device;
  struct RunState;

  // Opens the device holding `pointer` and compiles every kernel for its architecture.
  void open_device(const void* pointer, const std::string& what) const;
  // Copies weights in host memory (constants the archive carried) to the device, once.
  void upload_host_weights() const;
  std::shared_ptr<const CallPlan> plan_for(const ir::SymbolBindings& bindings) const;
  void enqueue_step(size_t s, RunState& state, CUstream stream) const;
  void run_segment(size_t index, RunState& state, CUstream stream) const;
  void run_host_step(size_t s, RunState& state, CUstream stream) const;
  void check_kernel_errors() const;
  // Enqueues a copy of the strided view at `source` (shape, strides in elements) into dense
  // memory at `destination`: one memcpy when the view is dense, else the strided copy kernel.
  void copy_strided(CUdeviceptr source, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    size_t element, CUdeviceptr destination, CUstream stream) const;

  CudaProgram program_;
  mutable std::map<std::string, BufferRef> weights_;  // host ones repointed at their upload
  NvrtcCompiler& compiler_;
  CudaExecutableOptions options_;
  // One run at a time: the arena, the graphs and the cuBLASLt workspace are shared by all.
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Device> device_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const CallPlan>> plans_;
  mutable RunStats last_stats_;
  mutable GraphStats graph_stats_;
};

}  // namespace luminal::runtime::cuda
