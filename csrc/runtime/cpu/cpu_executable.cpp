#include "runtime/cpu/cpu_executable.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "codegen/cpp/emit.h"
#include "common/error.h"
#include "ir/bind_symbols.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/memory_plan.h"

namespace luminal::runtime::cpu {

namespace {

constexpr size_t kAlignment = 64;
// Below this many elements per call a kernel runs on the calling thread: waking a worker costs
// more than it saves.
constexpr int64_t kParallelThreshold = 32768;

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

bool is_dense(const BufferRef& buffer) {
  int64_t expected = 1;
  for (size_t d = buffer.sizes.size(); d > 0; --d) {
    if (buffer.sizes[d - 1] != 1 && buffer.strides[d - 1] != expected) return element_count(buffer.sizes) == 0;
    expected *= buffer.sizes[d - 1];
  }
  return true;
}

void check_buffer(const char* kind, const std::string& name, const BufferRef& buffer, ir::DType dtype) {
  USER_CHECK(buffer.dtype == dtype) << kind << " '" << name << "' is " << ir::dtype_name(buffer.dtype)
                                    << " but the compiled graph expects " << ir::dtype_name(dtype);
  USER_CHECK(buffer.strides.size() == buffer.sizes.size())
      << kind << " '" << name << "' has " << buffer.sizes.size() << " sizes but " << buffer.strides.size() << " strides";
  USER_CHECK(buffer.data != nullptr || element_count(buffer.sizes) == 0) << kind << " '" << name << "' has no data";
}

// Copies `count` elements addressed by (shape, strides, offset) from src to a contiguous dst.
void strided_copy(const std::byte* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  int64_t offset, size_t element, std::byte* dst) {
  const int64_t count = element_count(shape);
  if (count == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t at = offset;
  // Innermost dim contiguous: copy runs of it.
  const bool inner_dense = rank > 0 && (strides[rank - 1] == 1 || shape[rank - 1] == 1);
  const int64_t run = inner_dense ? shape[rank - 1] : 1;
  const size_t outer_rank = inner_dense ? rank - 1 : rank;
  for (int64_t written = 0; written < count; written += run) {
    std::memcpy(dst + written * element, src + at * static_cast<int64_t>(element), static_cast<size_t>(run) * element);
    for (size_t d = outer_rank; d-- > 0;) {
      at += strides[d];
      if (++index[d] < shape[d]) break;
      at -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
}

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + static_cast<uintptr_t>(b_bytes) && y < x + static_cast<uintptr_t>(a_bytes);
}

int64_t buffer_bytes(const BufferRef& b) {
  // The span a strided buffer covers, in bytes.
  int64_t hi = 1;
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (b.sizes[d] == 0) return 0;
    hi += (b.sizes[d] - 1) * std::abs(b.strides[d]);
  }
  return hi * static_cast<int64_t>(ir::dtype_size(b.dtype));
}

struct KernelTask {
  KernelFn fn;
  void* const* params;
  const int64_t* symbols;
  std::atomic<int64_t> status{0};
  int64_t info[2] = {0, 0};
  std::mutex info_mutex;
};

void run_kernel_chunk(void* context, int64_t begin, int64_t end) {
  auto* task = static_cast<KernelTask*>(context);
  int64_t info[2] = {0, 0};
  const int64_t status = task->fn(task->params, task->symbols, begin, end, info);
  if (status != 0) {
    std::lock_guard<std::mutex> lock(task->info_mutex);
    if (task->status.load() == 0) {
      task->info[0] = info[0];
      task->info[1] = info[1];
      task->status.store(status);
    }
  }
}

}  // namespace

struct CpuExecutable::CallPlan {
  MemoryPlan memory;
  std::vector<int64_t> slot_bytes;
  std::vector<std::vector<int64_t>> step_symbols;
  std::vector<int64_t> step_items;
  std::vector<bool> step_parallel;
  std::vector<StridedLayout> gemm_a, gemm_b;
  std::vector<std::vector<int64_t>> output_shapes;
  std::vector<StridedLayout> output_layouts;  // the output's view of its node's buffer
};

struct CpuExecutable::Arena {
  std::byte* data = nullptr;
  size_t capacity = 0;
  std::vector<void*> pointers;
  std::vector<void*> params;
  ~Arena() {
    if (data) ::operator delete[](data, std::align_val_t{kAlignment});
  }
  void reserve(size_t bytes) {
    if (bytes <= capacity && data) return;
    if (data) ::operator delete[](data, std::align_val_t{kAlignment});
    capacity = std::max<size_t>(bytes, 64);
    data = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t{kAlignment}));
  }
};

CpuExecutable::CpuExecutable(Program program, std::map<std::string, BufferRef> weights, int threads)
    : program_(std::move(program)), weights_(std::move(weights)), pool_(threads) {
  for (const Slot& slot : program_.slots) {
    if (slot.kind != Slot::Kind::Weight) continue;
    const ir::Node& node = program_.graph.node(slot.node);
    auto it = weights_.find(node.name);
    USER_CHECK(it != weights_.end()) << "node %" << slot.node << " Weight '" << node.name
                                     << "': no buffer is bound to this weight";
    check_buffer("weight", node.name, it->second, node.dtype);
    if (ir::is_static(node.shape)) {
      const std::vector<int64_t> expected = ir::evaluate_shape(node.shape, {});
      USER_CHECK(it->second.sizes == expected) << "weight '" << node.name << "' has shape " << sizes_text(it->second.sizes)
                                               << " but the compiled graph expects " << sizes_text(expected);
    }
  }
}

CpuExecutable::~CpuExecutable() = default;

std::vector<std::vector<int64_t>> CpuExecutable::output_shapes(const std::vector<BufferRef>& inputs) const {
  std::vector<std::vector<int64_t>> sizes;
  for (const BufferRef& b : inputs) sizes.push_back(b.sizes);
  const ir::SymbolBindings bindings = ir::bind_symbols(program_.graph, sizes);
  std::vector<std::vector<int64_t>> shapes;
  for (const OutputSpec& o : program_.outputs) shapes.push_back(ir::evaluate_shape(o.ref.view.shape(), bindings));
  return shapes;
}

void CpuExecutable::rebind_weight(const std::string& name, const BufferRef& buffer) {
  bool found = false;
  for (ir::NodeId id : program_.graph.weight_nodes()) {
    const ir::Node& node = program_.graph.node(id);
    if (node.name != name) continue;
    check_buffer("weight", name, buffer, node.dtype);
    if (ir::is_static(node.shape)) {
      USER_CHECK(buffer.sizes == ir::evaluate_shape(node.shape, {}))
          << "weight '" << name << "' has shape " << sizes_text(buffer.sizes) << " but the compiled graph expects "
          << ir::shape_to_string(node.shape);
    }
    found = true;
  }
  USER_CHECK(found) << "the compiled graph has no weight named '" << name << "'";
  std::lock_guard<std::mutex> lock(mutex_);
  weights_[name] = buffer;
}

std::shared_ptr<const CpuExecutable::CallPlan> CpuExecutable::plan_for(const ir::SymbolBindings& bindings) const {
  std::vector<int64_t> key;
  for (const std::string& s : program_.symbols) {
    auto it = bindings.find(s);
    key.push_back(it == bindings.end() ? -1 : it->second);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  auto plan = std::make_shared<CallPlan>();
  std::vector<MemoryRequest> requests;
  for (const Slot& slot : program_.slots) {
    const int64_t bytes = slot.kind == Slot::Kind::Arena ? slot.bytes.evaluate(bindings) : 0;
    plan->slot_bytes.push_back(bytes);
    requests.push_back(MemoryRequest{slot.kind == Slot::Kind::Arena ? bytes : -1, slot.first_step, slot.last_step});
  }
  plan->memory = plan_memory(requests, kAlignment);
  for (const Step& step : program_.steps) {
    std::vector<int64_t> values;
    for (const std::string& s : step.symbols) values.push_back(bindings.at(s));
    plan->step_symbols.push_back(values);
    if (step.kind == Step::Kind::Kernel) {
      const int64_t items = step.items.evaluate(bindings);
      plan->step_items.push_back(items);
      plan->step_parallel.push_back(items > 1 && items * step.work_per_item.evaluate(bindings) >= kParallelThreshold);
      plan->gemm_a.emplace_back();
      plan->gemm_b.emplace_back();
    } else {
      plan->step_items.push_back(0);
      plan->step_parallel.push_back(false);
      auto layout = [&](const ir::View& v) {
        return StridedLayout{ir::evaluate_shape(v.shape(), bindings), ir::evaluate_shape(v.strides(), bindings),
                             v.offset().evaluate(bindings)};
      };
      plan->gemm_a.push_back(layout(step.a));
      plan->gemm_b.push_back(layout(step.b));
    }
  }
  for (const OutputSpec& o : program_.outputs) {
    plan->output_shapes.push_back(ir::evaluate_shape(o.ref.view.shape(), bindings));
    plan->output_layouts.push_back(StridedLayout{ir::evaluate_shape(o.ref.view.shape(), bindings),
                                                 ir::evaluate_shape(o.ref.view.strides(), bindings),
                                                 o.ref.view.offset().evaluate(bindings)});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() > 64) plans_.clear();  // a bound on distinct shapes kept
  plans_[key] = plan;
  return plan;
}

std::unique_ptr<CpuExecutable::Arena> CpuExecutable::take_arena(size_t bytes) const {
  std::unique_ptr<Arena> arena;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!arenas_.empty()) {
      arena = std::move(arenas_.back());
      arenas_.pop_back();
    }
  }
  if (!arena) arena = std::make_unique<Arena>();
  arena->reserve(bytes);
  return arena;
}

void CpuExecutable::give_back(std::unique_ptr<Arena> arena) const {
  std::lock_guard<std::mutex> lock(mutex_);
  arenas_.push_back(std::move(arena));
}

void CpuExecutable::run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& outputs) const {
  const ir::Graph& graph = program_.graph;
  std::vector<std::vector<int64_t>> input_sizes;
  input_sizes.reserve(inputs.size());
  for (const BufferRef& b : inputs) input_sizes.push_back(b.sizes);
  const ir::SymbolBindings bindings = ir::bind_symbols(graph, input_sizes);
  const std::shared_ptr<const CallPlan> plan = plan_for(bindings);

  USER_CHECK(outputs.size() == program_.outputs.size())
      << "the compiled graph has " << program_.outputs.size() << " outputs but " << outputs.size() << " were passed";
  for (size_t k = 0; k < outputs.size(); ++k) {
    check_buffer("output", std::to_string(k), outputs[k], graph.node(program_.outputs[k].ref.node).dtype);
    USER_CHECK(outputs[k].sizes == plan->output_shapes[k])
        << "output " << k << " has shape " << sizes_text(outputs[k].sizes) << " but this call produces "
        << sizes_text(plan->output_shapes[k]);
    USER_CHECK(is_dense(outputs[k])) << "output " << k << " must be a contiguous buffer";
  }

  std::unique_ptr<Arena> arena = take_arena(plan->memory.total_bytes);
  std::vector<void*>& ptr = arena->pointers;
  ptr.assign(program_.slots.size(), nullptr);
  std::vector<std::vector<std::byte>> dense_copies;  // non-contiguous caller buffers (rare)
  auto source = [&](const BufferRef& b) -> void* {
    if (is_dense(b)) return b.data;
    const size_t element = ir::dtype_size(b.dtype);
    dense_copies.emplace_back(static_cast<size_t>(element_count(b.sizes)) * element);
    strided_copy(static_cast<const std::byte*>(b.data), b.sizes, b.strides, 0, element, dense_copies.back().data());
    return dense_copies.back().data();
  };
  std::vector<const BufferRef*> caller_buffers;
  {
    std::unique_lock<std::mutex> lock(mutex_);  // weights_ may be rebound concurrently
    for (size_t s = 0; s < program_.slots.size(); ++s) {
      const Slot& slot = program_.slots[s];
      const ir::Node& node = graph.node(slot.node);
      if (slot.kind == Slot::Kind::Input) {
        check_buffer("input", node.name, inputs[slot.input_index], node.dtype);
        ptr[s] = source(inputs[slot.input_index]);
        caller_buffers.push_back(&inputs[slot.input_index]);
      } else if (slot.kind == Slot::Kind::Weight) {
        const BufferRef& w = weights_.at(node.name);
        USER_CHECK(w.sizes == ir::evaluate_shape(node.shape, bindings))
            << "weight '" << node.name << "' has shape " << sizes_text(w.sizes) << " but this call expects "
            << ir::shape_to_string(node.shape);
        ptr[s] = source(w);
        caller_buffers.push_back(&w);
      } else {
        ptr[s] = arena->data + plan->memory.offsets[s];
      }
    }
  }
  // Outputs the producing kernel writes in place, when the caller's buffer aliases nothing.
  std::vector<bool> written_directly(outputs.size(), false);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!program_.outputs[k].direct) continue;
    const int64_t bytes = buffer_bytes(outputs[k]);
    bool alias = false;
    for (const BufferRef* b : caller_buffers) alias = alias || overlaps(outputs[k].data, bytes, b->data, buffer_bytes(*b));
    for (size_t j = 0; j < outputs.size(); ++j)
      if (j != k) alias = alias || overlaps(outputs[k].data, bytes, outputs[j].data, buffer_bytes(outputs[j]));
    if (alias) continue;
    ptr[program_.slot_of_node[program_.outputs[k].ref.node]] = outputs[k].data;
    written_directly[k] = true;
  }

  for (size_t s = 0; s < program_.steps.size(); ++s) {
    const Step& step = program_.steps[s];
    if (step.kind == Step::Kind::Gemm) {
      blas_matmul(step.dtype, ptr[step.slots[0]], plan->gemm_a[s], ptr[step.slots[1]], plan->gemm_b[s], ptr[step.slots[2]]);
      continue;
    }
    std::vector<void*>& params = arena->params;
    params.clear();
    for (int slot : step.slots) params.push_back(ptr[slot]);
    KernelTask task;
    task.fn = step.fn;
    task.params = params.data();
    task.symbols = plan->step_symbols[s].data();
    if (plan->step_parallel[s])
      pool_.parallel_for(plan->step_items[s], run_kernel_chunk, &task);
    else
      run_kernel_chunk(&task, 0, plan->step_items[s]);
    const int64_t status = task.status.load();
    if (status != 0) {
      give_back(std::move(arena));
      switch (status) {
        case codegen::cpp::kKernelIndexOutOfRange:
          USER_ERROR() << step.what << ": index " << task.info[0] << " is out of bounds for a dimension with size "
                       << task.info[1];
          break;
        case codegen::cpp::kKernelEmptyReduction:
          USER_ERROR() << step.what << ": max/min over an axis of size 0 has no identity";
          break;
        case codegen::cpp::kKernelDivisionByZero: USER_ERROR() << step.what << ": integer division by zero"; break;
        default: INTERNAL_ERROR() << step.what << ": kernel failed with status " << status;
      }
    }
  }

  // Copy the remaining outputs. A source that is caller memory (an input returned as is) may be
  // overwritten by another output: snapshot such sources first.
  std::vector<const void*> sources(outputs.size(), nullptr);
  std::vector<std::vector<std::byte>> snapshots;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const ir::NodeId node = program_.outputs[k].ref.node;
    const int slot = program_.slot_of_node[node];
    sources[k] = ptr[slot];
    if (program_.slots[slot].kind == Slot::Kind::Arena) continue;
    const int64_t bytes = element_count(ir::evaluate_shape(graph.node(node).shape, bindings)) *
                          static_cast<int64_t>(ir::dtype_size(graph.node(node).dtype));
    for (const BufferRef& destination : outputs) {
      if (!overlaps(sources[k], bytes, destination.data, buffer_bytes(destination))) continue;
      snapshots.emplace_back(static_cast<size_t>(bytes));
      std::memcpy(snapshots.back().data(), sources[k], static_cast<size_t>(bytes));
      sources[k] = snapshots.back().data();
      break;
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const StridedLayout& l = plan->output_layouts[k];
    strided_copy(static_cast<const std::byte*>(sources[k]), l.shape, l.strides, l.offset,
                 ir::dtype_size(outputs[k].dtype), static_cast<std::byte*>(outputs[k].data));
  }
  give_back(std::move(arena));
}

}  // namespace luminal::runtime::cpu
