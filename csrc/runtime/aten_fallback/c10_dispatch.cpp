#include "runtime/aten_fallback/c10_dispatch.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/Utils.h>
#include <c10/core/InferenceMode.h>

#include "bindings/tensor_buffer.h"
#include "common/error.h"
#include "runtime/aten_fallback.h"
#include "runtime/work_chunks.h"

namespace luminal::runtime::aten_fallback {
namespace {

// The parallel-region entry point of the OpenMP runtime torch loaded (libgomp's, which LLVM's
// libomp provides too): what a `#pragma omp parallel` compiles to. Looked up once in this
// process, so that a torch without OpenMP needs none; null where absent.
using OpenMpParallel = void (*)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
OpenMpParallel openmp_parallel_of_this_process() {
  static const OpenMpParallel parallel = reinterpret_cast<OpenMpParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
  return parallel;
}

using bindings::tensor_of;
using ir::AtenArg;

c10::MemoryFormat memory_format_of(AtenArg::MemoryFormat format) {
  switch (format) {
    case AtenArg::MemoryFormat::Contiguous: return c10::MemoryFormat::Contiguous;
    case AtenArg::MemoryFormat::ChannelsLast: return c10::MemoryFormat::ChannelsLast;
    case AtenArg::MemoryFormat::ChannelsLast3d: return c10::MemoryFormat::ChannelsLast3d;
    case AtenArg::MemoryFormat::Preserve: return c10::MemoryFormat::Preserve;
  }
  return c10::MemoryFormat::Contiguous;
}

c10::IValue value_of(const AtenArg& arg, const std::vector<at::Tensor>& tensors, const ir::SymbolBindings& bindings) {
  switch (arg.kind) {
    case AtenArg::Kind::None: return {};
    case AtenArg::Kind::Tensor: return tensors.at(static_cast<size_t>(arg.tensors.at(0)));
    case AtenArg::Kind::Tensors: {
      c10::List<at::Tensor> list;
      for (int t : arg.tensors) list.push_back(tensors.at(static_cast<size_t>(t)));
      return list;
    }
    case AtenArg::Kind::OptionalTensors: {
      c10::List<std::optional<at::Tensor>> list;
      for (int t : arg.tensors)
        list.push_back(t < 0 ? std::optional<at::Tensor>() : std::optional<at::Tensor>(tensors.at(static_cast<size_t>(t))));
      return list;
    }
    case AtenArg::Kind::Int: return arg.ints.at(0).evaluate(bindings);
    case AtenArg::Kind::Ints: {
      std::vector<int64_t> values;
      for (const ir::Expr& e : arg.ints) values.push_back(e.evaluate(bindings));
      return values;
    }
    case AtenArg::Kind::Float: return arg.floats.at(0);
    case AtenArg::Kind::Floats: return arg.floats;
    case AtenArg::Kind::Bool: return static_cast<bool>(arg.bools.at(0));
    case AtenArg::Kind::Bools: {
      c10::List<bool> list;
      for (bool b : arg.bools) list.push_back(b);
      return list;
    }
    case AtenArg::Kind::String: return arg.text;
    case AtenArg::Kind::ScalarType: return bindings::to_torch_dtype(arg.dtype);
    case AtenArg::Kind::Layout: return c10::kStrided;
    case AtenArg::Kind::MemoryFormat: return memory_format_of(arg.memory_format);
    case AtenArg::Kind::Device: return c10::Device(arg.text);
  }
  return {};
}

// The call's stack in schema order: the program's arguments by name, schema defaults for the
// ones export left out.
torch::jit::Stack build_stack(const ir::AtenCall& call, const c10::FunctionSchema& schema,
                              const std::vector<at::Tensor>& tensors, const ir::SymbolBindings& bindings) {
  torch::jit::Stack stack;
  for (const c10::Argument& parameter : schema.arguments()) {
    const AtenArg* given = nullptr;
    for (const AtenArg& arg : call.args)
      if (arg.name == parameter.name()) given = &arg;
    if (given != nullptr) {
      stack.push_back(value_of(*given, tensors, bindings));
    } else {
      USER_CHECK(parameter.default_value().has_value())
          << "the program passes no value for argument '" << parameter.name() << "', which has no default";
      stack.push_back(*parameter.default_value());
    }
  }
  return stack;
}

// The op's tensor results in order, a returned Tensor[] element by element (AtenCall's
// output_index counts the same way).
std::vector<at::Tensor> flat_results(const torch::jit::Stack& stack) {
  std::vector<at::Tensor> results;
  for (const c10::IValue& value : stack) {
    if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) results.push_back(t);
    } else if (value.isTensor()) {
      results.push_back(value.toTensor());
    } else {
      results.emplace_back();  // None or a number: counted, never bound
    }
  }
  return results;
}

class C10DispatchExecutor final : public AtenCallExecutor {
 public:
  void run(const ir::AtenCall& call, const std::vector<BufferRef>& inputs, const ir::SymbolBindings& bindings,
           const BufferRef& output) const override {
    const std::string overload = call.overload == "default" ? "" : call.overload;
    try {
      // Inference mode: no autograd bookkeeping for tensors that only live through the call.
      c10::InferenceMode inference;
      const std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findSchema({call.op, overload});
      UNSUPPORTED_CHECK(op.has_value()) << "no operator " << call.full_name()
                                        << " is registered with the dispatcher in this process (a custom op whose "
                                           "library is not loaded?)";
      std::vector<at::Tensor> tensors;
      for (const BufferRef& input : inputs) tensors.push_back(tensor_of(input));
      torch::jit::Stack stack = build_stack(call, op->schema(), tensors, bindings);
      op->callBoxed(&stack);
      const std::vector<at::Tensor> results = flat_results(stack);
      const auto index = static_cast<size_t>(call.output_index);
      INTERNAL_CHECK(index < results.size() && results[index].defined())
          << "result " << call.output_index << " is not a tensor (" << results.size() << " results)";
      const at::Tensor& result = results[index];
      USER_CHECK(result.sizes().vec() == output.sizes)
          << "result " << call.output_index << " has shape " << result.sizes() << " but the program declared "
          << sizes_of(output.sizes) << "; the exported shape metadata does not match what the op computes";
      USER_CHECK(result.scalar_type() == bindings::to_torch_dtype(output.dtype))
          << "result " << call.output_index << " has dtype " << result.scalar_type() << " but the program declared "
          << ir::dtype_name(output.dtype);
      // An out= overload computed into `output` itself: nothing to copy.
      if (result.data_ptr() != output.data || !result.is_contiguous()) tensor_of(output).copy_(result);
    } catch (const c10::Error& e) {
      USER_ERROR() << call.full_name() << " (ATen fallback) failed: " << e.what_without_backtrace();
    } catch (Error& e) {
      e.add_context(call.full_name() + " (ATen fallback)");
      throw;
    }
  }

  bool parallel_for(int64_t items, int threads, int64_t min_chunk, Task task, void* context) const override {
    // Not at::parallel_for: that header template splits work only where its includer is compiled
    // with OpenMP, and this module is not (it would link an OpenMP runtime of its own beside
    // torch's); here it ran every range on the calling thread (a bf16 prompt's attention after
    // its V projection: 25.6 ms against 12.9; docs/lessons.md, 2026-12-06). The team of the
    // OpenMP runtime torch loaded instead, through its parallel-region entry point, the chunks
    // claimed from a counter as our own pool claims them (a static half per thread made the
    // small Gemma 3's bf16 prefill 6% slower than the pool's chunks).
    const OpenMpParallel parallel = openmp_parallel_of_this_process();
    if (parallel == nullptr) return false;
    // No more threads than torch's own ops take (torch.set_num_threads): a DataLoader worker, a
    // forked child whose parent's team does not exist in it, sets one, and libgomp hangs there
    // in a region of two, as torch's own ops would with two.
    const int team_threads = std::min(threads, at::get_num_threads());
    if (team_threads <= 1) {
      task(context, 0, items);
      return true;
    }
    struct Work {
      Task task;
      void* context;
      int64_t items, chunk;
      std::atomic<int64_t> next{0};
    } work{task, context, items, work_chunk_items(items, team_threads, min_chunk)};
    parallel(
        [](void* data) {
          Work& w = *static_cast<Work*>(data);
          for (int64_t begin; (begin = w.next.fetch_add(w.chunk, std::memory_order_relaxed)) < w.items;)
            w.task(w.context, begin, std::min(w.items, begin + w.chunk));
        },
        &work, static_cast<unsigned>(team_threads), /*flags=*/0);
    return true;
  }

  bool has_op(const std::string& op, const std::string& overload) const override {
    return c10::Dispatcher::singleton().findSchema({op, overload == "default" ? "" : overload}).has_value();
  }

  bool has_native_half_matmul(ir::DType dtype) const override {
    // The instructions oneDNN's half-precision GEMMs need; without them torch emulates (slower
    // than widening to f32 ourselves).
    static const std::unordered_map<std::string, c10::IValue> cpu = at::cpu::get_cpu_capabilities();
    const auto has = [&](const char* feature) {
      const auto it = cpu.find(feature);
      return it != cpu.end() && it->second.isBool() && it->second.toBool();
    };
    if (dtype == ir::DType::BF16) return has("avx512_bf16") || has("amx_bf16");
    if (dtype == ir::DType::F16) return has("avx512_fp16") || has("amx_fp16");
    return false;
  }

 private:
  static std::string sizes_of(const std::vector<int64_t>& sizes) { return c10::str(c10::IntArrayRef(sizes)); }
};

}  // namespace

void install_c10_dispatch_executor() {
  static const C10DispatchExecutor executor;
  set_aten_call_executor(&executor);
}

}  // namespace luminal::runtime::aten_fallback
