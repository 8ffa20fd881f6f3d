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
#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/runtime.h"

namespace luminal::runtime::cuda {

class CublasLt;

class CudaExecutable : public Executable {
 public:
  CudaExecutable(CudaProgram program, std::map<std::string, BufferRef> weights, NvrtcCompiler& compiler);
  ~CudaExecutable() override;

  OutputShapes output_shapes(const std::vector<BufferRef>& inputs) const override;
  void run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs,
           const LateOutputAllocator& allocate_late) const override;
  void rebind_weight(const std::string& name, const BufferRef& buffer) override;
  RunStats last_run_stats() const override;

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
  // The address cuBLASLt reads a GEMM operand at `base` (viewed through `layout`) from: `base`
  // itself, or a dense copy enqueued into `into` (a new buffer of the run's when 0).
  CUdeviceptr readable_operand(CUdeviceptr base, const OperandLayout& layout, size_t element, CUdeviceptr into,
                               RunState& state, CUstream stream) const;

  CudaProgram program_;
  mutable std::map<std::string, BufferRef> weights_;  // host ones repointed at their upload
  NvrtcCompiler& compiler_;
  // One run at a time: the arena, the graphs and the cuBLASLt workspace are shared by all.
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Device> device_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const CallPlan>> plans_;
  mutable RunStats last_stats_;
};

}  // namespace luminal::runtime::cuda
