#include "runtime/aten_fallback.h"

#include <atomic>

#include "common/error.h"

namespace luminal::runtime {

namespace {
std::atomic<const AtenCallExecutor*> g_executor{nullptr};
}  // namespace

void set_aten_call_executor(const AtenCallExecutor* executor) { g_executor.store(executor); }

bool has_aten_call_executor() { return g_executor.load() != nullptr; }

bool aten_has_native_half_matmul(ir::DType dtype) {
  const AtenCallExecutor* executor = g_executor.load();
  return executor != nullptr && executor->has_native_half_matmul(dtype);
}

bool aten_op_exists(const std::string& overload_key) {
  const AtenCallExecutor* executor = g_executor.load();
  const size_t dot = overload_key.rfind('.');
  if (executor == nullptr || dot == std::string::npos) return true;
  return executor->has_op(overload_key.substr(0, dot), overload_key.substr(dot + 1));
}

bool aten_parallel_for(int64_t items, int threads, int64_t min_chunk, AtenCallExecutor::Task task, void* context) {
  const AtenCallExecutor* executor = g_executor.load();
  INTERNAL_CHECK(executor != nullptr) << "aten_parallel_for without an ATen executor installed";
  return executor->parallel_for(items, threads, min_chunk, task, context);
}

void run_aten_call(const ir::AtenCall& call, const std::vector<BufferRef>& inputs, const ir::SymbolBindings& bindings,
                   const BufferRef& output) {
  const AtenCallExecutor* executor = g_executor.load();
  UNSUPPORTED_CHECK(executor != nullptr)
      << call.full_name() << " runs through the ATen fallback, which needs the luminal Python module (luminal._C) "
      << "loaded in this process";
  executor->run(call, inputs, bindings, output);
}

}  // namespace luminal::runtime
