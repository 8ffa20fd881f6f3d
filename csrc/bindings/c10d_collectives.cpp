// The collectives' executor (runtime/collectives.h): issues a Collective on the process group
// torch's registry holds under the collective's group name. When every rank of the group runs
// on this host, all_reduce and all_gather of CPU buffers go through shared memory
// (runtime/shared_memory_group.h), bootstrapped through the group at its first collective;
// everything else through torch's functional collectives (the _c10d_functional ops a traced
// graph names), waited for through wait_tensor.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>
#include <c10/core/InferenceMode.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "bindings/tensor_buffer.h"
#include "common/error.h"
#include "runtime/collectives.h"
#include "runtime/shared_memory_group.h"

namespace luminal::bindings {
namespace {

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

// ---- same-host groups: shared memory ----

using runtime::SharedMemoryGroup;

// This host and boot: ranks that share it can share memory.
int64_t host_key() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return static_cast<int64_t>(std::hash<std::string>{}(std::string(name) + "|" + boot) >> 1);
}

std::chrono::milliseconds group_timeout(const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  try {
    return group->getBackend(c10::DeviceType::CPU)->getBackendOptions()->timeout;
  } catch (const c10::Error&) {
    return std::chrono::minutes(30);  // c10d's default
  }
}

// Every rank calls this at the same point (its first shared-memory-eligible collective on the
// group), so the bootstrap's own collectives match up. nullptr: the group's ranks are not all on
// this host, or one of them could not map the segment; all ranks then agree on the fallback.
std::unique_ptr<SharedMemoryGroup> bootstrap(const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                             const std::string& group_name) {
  const int rank = group->getRank(), size = group->getSize();
  if (size < 2) return nullptr;
  std::vector<at::Tensor> key{at::tensor({host_key()}, at::kLong)};
  std::vector<std::vector<at::Tensor>> keys(1);
  for (int r = 0; r < size; ++r) keys[0].push_back(at::empty({1}, at::kLong));
  group->allgather(keys, key)->wait();
  for (const at::Tensor& k : keys[0])
    if (k.item<int64_t>() != key[0].item<int64_t>()) return nullptr;
  static std::atomic<int64_t> segments{0};
  // Rank 0 names and creates the segment; the others learn the name from it.
  std::vector<at::Tensor> id{at::tensor({static_cast<int64_t>(getpid()), segments.fetch_add(1), int64_t{0}}, at::kLong)};
  std::unique_ptr<SharedMemoryGroup> shm;
  const auto name = [&] {
    const auto* v = id[0].data_ptr<int64_t>();
    return "/luminal-" + std::to_string(v[0]) + "-" + std::to_string(v[1]);
  };
  const std::chrono::milliseconds timeout = group_timeout(group);
  if (rank == 0) {
    shm = SharedMemoryGroup::map(name(), true, rank, size, timeout, group_name);
    id[0].data_ptr<int64_t>()[2] = shm ? 1 : 0;
  }
  c10d::BroadcastOptions from_rank_0;
  from_rank_0.rootRank = 0;
  group->broadcast(id, from_rank_0)->wait();
  if (rank != 0 && id[0].data_ptr<int64_t>()[2] == 1) shm = SharedMemoryGroup::map(name(), false, rank, size, timeout, group_name);
  std::vector<at::Tensor> mapped{at::tensor({int64_t{shm ? 1 : 0}}, at::kLong)};
  c10d::AllreduceOptions minimum;
  minimum.reduceOp = c10d::ReduceOp::MIN;
  group->allreduce(mapped, minimum)->wait();
  if (rank == 0 && shm) shm->unlink_name();  // every rank has it mapped (or gave up): no file left
  if (mapped[0].item<int64_t>() == 0) return nullptr;
  return shm;
}

// The shared-memory group of each process group, made at its first use. A destroyed and
// re-created process group (the same name) gets a new one; old ones stay mapped, as a
// collective issued on one may still be completing.
SharedMemoryGroup* shared_memory_for(const std::string& group_name) {
  struct Entry {
    c10::weak_intrusive_ptr<c10d::ProcessGroup> group;
    std::unique_ptr<SharedMemoryGroup> shm;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> entries;
  static std::vector<std::unique_ptr<SharedMemoryGroup>> retired;
  const c10::intrusive_ptr<c10d::ProcessGroup> group = c10d::resolve_process_group(group_name);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(group_name);
  if (it != entries.end() && it->second.group.lock().get() == group.get()) return it->second.shm.get();
  if (it != entries.end() && it->second.shm) retired.push_back(std::move(it->second.shm));
  if (it != entries.end()) entries.erase(it);
  Entry entry{c10::weak_intrusive_ptr<c10d::ProcessGroup>(group), bootstrap(group, group_name)};
  return entries.emplace(group_name, std::move(entry)).first->second.shm.get();
}

class SharedMemoryInFlight final : public runtime::InFlightCollective {
 public:
  SharedMemoryInFlight(std::string what, SharedMemoryGroup* group, uint64_t call)
      : what_(std::move(what)), group_(group), call_(call) {}
  ~SharedMemoryInFlight() override {
    if (waited_) return;
    try {
      group_->complete(call_);
    } catch (...) {
      // The run already failed.
    }
  }
  void wait() override {
    waited_ = true;
    try {
      group_->complete(call_);
    } catch (Error& e) {
      e.add_context(what_ + " (through shared memory) failed");
      throw;
    }
  }

 private:
  std::string what_;
  SharedMemoryGroup* group_;
  uint64_t call_;
  bool waited_ = false;
};

// ---- the executor ----

class C10dCollectiveExecutor final : public runtime::CollectiveExecutor {
 public:
  std::unique_ptr<runtime::InFlightCollective> start(const ir::Collective& c, const runtime::BufferRef& input_buffer,
                                                     const runtime::BufferRef& output_buffer,
                                                     const ir::SymbolBindings& bindings) const override {
    using Kind = ir::Collective::Kind;
    if (std::unique_ptr<runtime::InFlightCollective> fast = through_shared_memory(c, input_buffer, output_buffer))
      return fast;
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

  // nullptr when the collective goes through the process group instead: not CPU buffers, not an
  // all_reduce or all_gather the shared memory computes, larger than a slot, or a group whose
  // ranks are not all on this host.
  static std::unique_ptr<runtime::InFlightCollective> through_shared_memory(const ir::Collective& c,
                                                                            const runtime::BufferRef& input,
                                                                            const runtime::BufferRef& output) {
    using Kind = ir::Collective::Kind;
    if (input.device_index >= 0 || output.device_index >= 0) return nullptr;
    if (c.kind != Kind::AllGather && !(c.kind == Kind::AllReduce && SharedMemoryGroup::can_reduce(c.reduce_op, input.dtype)))
      return nullptr;
    int64_t elements = 1;
    for (int64_t d : input.sizes) elements *= d;
    const size_t bytes = static_cast<size_t>(elements) * ir::dtype_size(input.dtype);
    if (bytes > SharedMemoryGroup::kSlotBytes) return nullptr;
    SharedMemoryGroup* group = nullptr;
    try {
      group = shared_memory_for(c.group_name);
    } catch (const c10::Error& e) {
      USER_ERROR() << c.describe() << " failed to start: " << e.what_without_backtrace();
    }
    if (group == nullptr) return nullptr;
    using Combine = SharedMemoryGroup::Combine;
    const Combine combine = c.kind == Kind::AllGather ? Combine::Gather
                            : c.reduce_op == "sum"     ? Combine::Sum
                            : c.reduce_op == "max"     ? Combine::Max
                            : c.reduce_op == "min"     ? Combine::Min
                                                       : Combine::Product;
    uint64_t call = 0;
    try {
      call = group->start(bytes, input.dtype, combine, output.data, [&](void* slot) {
        c10::InferenceMode inference;
        at::from_blob(slot, input.sizes, at::TensorOptions().dtype(to_torch_dtype(input.dtype))).copy_(tensor_of(input));
      });
    } catch (Error& e) {
      e.add_context(c.describe() + " (through shared memory) failed");
      throw;
    }
    return std::make_unique<SharedMemoryInFlight>(c.describe(), group, call);
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
