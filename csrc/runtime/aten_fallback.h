// The ATen fallback's seam: runtimes run an AtenCall node through an executor that the Python
// module registers, so the core never includes torch.
//
// Needs: a registered executor (luminal._C registers the c10-dispatcher one when imported).
// Guarantees: run_aten_call writes the node's result into `output` or throws a luminal Error
// naming the op; with no executor registered (a C++ program without the Python module) it
// throws UnsupportedError saying so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/aten_call.h"
#include "ir/expr.h"
#include "runtime/runtime.h"

namespace luminal::runtime {

class AtenCallExecutor {
 public:
  virtual ~AtenCallExecutor() = default;
  // `inputs` parallel Node::inputs (strided views of their producers' buffers); `output` is
  // contiguous, of the node's dtype and of the shape the program declared for this result.
  virtual void run(const ir::AtenCall& call, const std::vector<BufferRef>& inputs, const ir::SymbolBindings& bindings,
                   const BufferRef& output) const = 0;
  // Whether ATen's matmul in this f16/bf16 dtype runs on the CPU's own half-precision dot
  // products (oneDNN with AVX512-BF16/FP16 or AMX): then it is faster than widening to f32.
  virtual bool has_native_half_matmul(ir::DType dtype) const = 0;
  // Runs task over [0, items) on `threads` threads of ATen's intra-op team (torch's OpenMP
  // runtime), in chunks of work_chunk_items(items, threads, min_chunk) claimed one at a time,
  // and returns true; returns false, having run nothing, where it cannot split the work (no
  // OpenMP team in this process). The cpu runtime's kernels run there whenever it can: two
  // pools on the same cores each spin after their work while the other needs the cores.
  using Task = void (*)(void* context, int64_t begin, int64_t end);
  virtual bool parallel_for(int64_t items, int threads, int64_t min_chunk, Task task, void* context) const = 0;
  // Whether `op` ("aten::foo") with `overload` ("default", "Tensor") can be called in this
  // process; asked at compile, so that an unknown op fails there and not at the first call.
  // An executor that cannot tell says true.
  virtual bool has_op(const std::string& op, const std::string& overload) const { return true; }
};

// Installs the process-wide executor (not owned; it must outlive every compiled model).
void set_aten_call_executor(const AtenCallExecutor* executor);
bool has_aten_call_executor();
// False without an executor.
bool aten_has_native_half_matmul(ir::DType dtype);
// `overload_key` is "aten::foo.default"; true without an executor (the call then says why).
bool aten_op_exists(const std::string& overload_key);

// Through the executor's parallel_for (false: nothing ran, use another pool); the caller checks
// has_aten_call_executor() first.
bool aten_parallel_for(int64_t items, int threads, int64_t min_chunk, AtenCallExecutor::Task task, void* context);

void run_aten_call(const ir::AtenCall& call, const std::vector<BufferRef>& inputs, const ir::SymbolBindings& bindings,
                   const BufferRef& output);

}  // namespace luminal::runtime
