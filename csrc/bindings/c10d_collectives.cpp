// The collectives' executor (runtime/collectives.h): issues a Collective through torch's
// functional collectives (the _c10d_functional ops a traced graph names), on the process group
// torch's registry holds under the collective's group name, and waits through wait_tensor.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>

#include "bindings/tensor_buffer.h"
#include "common/error.h"
#include "runtime/collectives.h"

namespace luminal::bindings {
namespace {

at::Tensor tensor_of(const runtime::BufferRef& buffer) {
  at::TensorOptions options = at::TensorOptions().dtype(to_torch_dtype(buffer.dtype));
  if (buffer.device_index >= 0) options = options.device(c10::Device(c10::kCUDA, buffer.device_index));
  return at::from_blob(buffer.data, buffer.sizes, buffer.strides, options);
}

c10::OperatorHandle functional_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// The op's single tensor result, called on `stack`.
at::Tensor call(const char* name, torch::jit::Stack stack) {
  functional_op(name).callBoxed(&stack);
  return stack.at(0).toTensor();
}

std::vector<int64_t> evaluate(const std::vector<ir::Expr>& sizes, const ir::SymbolBindings& bindings) {
  std::vector<int64_t> values;
  for (const ir::Expr& e : sizes) values.push_back(e.evaluate(bindings));
  return values;
}

class InFlight final : public runtime::InFlightCollective {
 public:
  // `pending` is what torch's work registry knows the collective by; `result` is copied into
  // `output` after the wait unless the collective wrote `output` itself.
  InFlight(std::string what, at::Tensor input, at::Tensor pending, at::Tensor output)
      : what_(std::move(what)), input_(std::move(input)), pending_(std::move(pending)), output_(std::move(output)) {}

  ~InFlight() override {
    if (waited_) return;
    try {
      c10::InferenceMode inference;
      call("_c10d_functional::wait_tensor", {pending_});
    } catch (...) {
      // The run already failed; the buffers are safe to reuse once the collective has ended.
    }
  }

  void wait() override {
    waited_ = true;
    try {
      c10::InferenceMode inference;
      const at::Tensor done = call("_c10d_functional::wait_tensor", {pending_});
      if (done.data_ptr() != output_.data_ptr()) output_.copy_(done);
    } catch (const c10::Error& e) {
      fail(e.what_without_backtrace());
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

 private:
  void fail(const std::string& why) const {
    USER_ERROR() << what_ << " failed: " << why
                 << " (a peer process that died or stopped calling the model, or the process group's timeout)";
  }

  std::string what_;
  at::Tensor input_;  // read by the collective until it completes
  at::Tensor pending_;
  at::Tensor output_;
  bool waited_ = false;
};

class C10dCollectiveExecutor final : public runtime::CollectiveExecutor {
 public:
  std::unique_ptr<runtime::InFlightCollective> start(const ir::Collective& c, const runtime::BufferRef& input_buffer,
                                                     const runtime::BufferRef& output_buffer,
                                                     const ir::SymbolBindings& bindings) const override {
    using Kind = ir::Collective::Kind;
    const int64_t size = group_size(c.group_name);
    USER_CHECK(c.group_size == 0 || c.group_size == size)
        << c.describe() << " was traced for a group of " << c.group_size << " ranks, but that group has " << size
        << " now; recompile in a process whose process group matches the one the model was traced with";
    std::unique_ptr<runtime::InFlightCollective> in_flight;
    try {
      c10::InferenceMode inference;
      at::Tensor input = tensor_of(input_buffer);
      at::Tensor output = tensor_of(output_buffer);
      const c10::IValue group(c.group_name);
      at::Tensor pending;
      switch (c.kind) {
        case Kind::AllReduce:
          output.copy_(input);
          pending = call("_c10d_functional::all_reduce_", {output, c.reduce_op, group});
          break;
        case Kind::Broadcast:
          output.copy_(input);
          pending = call("_c10d_functional::broadcast_", {output, c.src, group});
          break;
        case Kind::AllGather:
          input = input.contiguous();
          pending = call("_c10d_functional::all_gather_into_tensor_out", {input, c.group_size, group, output});
          break;
        case Kind::ReduceScatter:
          input = input.contiguous();
          pending = call("_c10d_functional::reduce_scatter_tensor_out",
                         {input, c.reduce_op, c.group_size, group, output});
          break;
        case Kind::AllToAll:
          input = input.contiguous();
          pending = call("_c10d_functional::all_to_all_single",
                         {input, evaluate(c.output_split_sizes, bindings), evaluate(c.input_split_sizes, bindings),
                          group});
          break;
      }
      in_flight = std::make_unique<InFlight>(c.describe(), std::move(input), std::move(pending), std::move(output));
    } catch (const c10::Error& e) {
      USER_ERROR() << c.describe() << " failed to start: " << e.what_without_backtrace();
    }
    return in_flight;
  }

  int64_t group_size(const std::string& group_name) const override {
    c10::intrusive_ptr<c10d::ProcessGroup> group;
    try {
      group = c10d::resolve_process_group(group_name);
    } catch (const c10::Error&) {
      // Not registered: reported below.
    }
    USER_CHECK(group) << "no process group named '" << group_name
                      << "' exists in this process: call torch.distributed.init_process_group (and keep the group "
                         "the model was compiled with) before running it";
    return group->getSize();
  }
};

}  // namespace

void install_collective_executor() {
  static const C10dCollectiveExecutor executor;
  runtime::set_collective_executor(&executor);
}

}  // namespace luminal::bindings
