#include "runtime/cpu/cpu_executable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <sstream>

#include "codegen/kernel.h"
#include "codegen/lower.h"
#include "common/error.h"
#include "ir/bind_symbols.h"
#include "runtime/aligned_buffer.h"
#include "runtime/aten_fallback.h"
#include "runtime/buffer_layout.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/jit.h"
#include "runtime/cpu/memory_plan.h"
#include "runtime/cpu/scratch_calls.h"
#include "runtime/cpu/search.h"
#include "runtime/kernel_status.h"

namespace luminal::runtime::cpu {

namespace {

constexpr size_t kAlignment = 64;
// Below this many elements per call a kernel runs on the calling thread: waking a worker costs
// more than it saves.
constexpr int64_t kParallelThreshold = 32768;

// Whether a kernel's work items split across the pool (enough elements in all to pay for it).
bool splits_across_threads(int64_t items, int64_t work_per_item) {
  return items > 1 && items * work_per_item >= kParallelThreshold;
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

// Input i of a step that reads its inputs' buffers (slots[i]) through the edges' views.
BufferRef input_view(const ir::Graph& graph, const ir::Node& node, size_t i, const Step& step,
                     const std::vector<void*>& ptr, const ir::SymbolBindings& bindings) {
  const ir::View& view = node.inputs[i].view;
  BufferRef input;
  input.dtype = graph.node(node.inputs[i].node).dtype;
  input.data = static_cast<std::byte*>(ptr[step.slots[i]]) +
               view.offset().evaluate(bindings) * static_cast<int64_t>(ir::dtype_size(input.dtype));
  input.sizes = ir::evaluate_shape(view.shape(), bindings);
  input.strides = ir::evaluate_shape(view.strides(), bindings);
  return input;
}

// The step's own contiguous slot (its last), holding `node`.
BufferRef output_buffer(const ir::Node& node, const Step& step, const std::vector<void*>& ptr,
                        const ir::SymbolBindings& bindings) {
  BufferRef output;
  output.dtype = node.dtype;
  output.data = ptr[step.slots.back()];
  output.sizes = ir::evaluate_shape(node.shape, bindings);
  output.strides = contiguous_strides(output.sizes);
  return output;
}

// Runs an AtenCall step: its inputs are its producers' buffers read through the edges' views,
// its output its own contiguous slot.
void run_aten_call_step(const ir::Graph& graph, const ir::Node& node, const Step& step, const std::vector<void*>& ptr,
                        const ir::SymbolBindings& bindings) {
  std::vector<BufferRef> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) inputs.push_back(input_view(graph, node, i, step, ptr, bindings));
  run_aten_call(*node.aten_call, inputs, bindings, output_buffer(node, step, ptr, bindings));
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

std::vector<InPlaceScatter> in_place_scatters(const Program& program) {
  return find_in_place_scatters(program.graph, program);
}

namespace {
// A view's shape, strides and offset for one call.
StridedLayout strided_layout(const ir::View& view, const ir::SymbolBindings& bindings) {
  return StridedLayout{ir::evaluate_shape(view.shape(), bindings), ir::evaluate_shape(view.strides(), bindings),
                       view.offset().evaluate(bindings)};
}

// out = a x b through ATen's matmul.out, which writes the product into `out` itself (no result
// to copy over).
void run_aten_matmul(const BufferRef& a, const BufferRef& b, const BufferRef& out, const ir::SymbolBindings& bindings) {
  static const ir::AtenCall matmul = [] {
    ir::AtenCall call;
    call.op = "aten::matmul";
    call.overload = "out";
    for (const char* name : {"self", "other", "out"}) {
      ir::AtenArg arg;
      arg.name = name;
      arg.kind = ir::AtenArg::Kind::Tensor;
      arg.tensors = {static_cast<int>(call.args.size())};
      call.args.push_back(arg);
    }
    return call;
  }();
  run_aten_call(matmul, {a, b, out}, bindings, out);
}
}  // namespace

// What one step needs from the call's symbol values.
struct CpuExecutable::StepPlan {
  std::vector<int64_t> symbols;  // the kernel's symbol arguments
  int64_t items = 0;
  bool parallel = false;             // the work items split across the thread pool
  // A Gemm step through ATen's matmul: the schedule search's pick, or an f16/bf16 one (which
  // only ATen computes; see passes::legalize_matmul).
  bool matmul_through_aten = false;
  // A Gemm step with few enough rows for its GEMV kernel (Step::few_rows), which runs instead:
  // symbols, items and parallel are that kernel's.
  bool few_rows = false;
  // A GroupedGemm's expert GEMV (Step::few_rows): the position of the expert's row count among
  // symbols, and the work per item of each of its rows (the kernel reads K per row and item).
  int expert_rows_symbol = -1;
  int64_t expert_work_per_row = 0;
  int variant = -1;  // a Kernel step: the variant (Step::variants) the search chose; -1: none
  StridedLayout a, b, offs;  // Gemm and GroupedGemm steps
  // Scatter steps updating a caller's buffer: the bytes of the copy of that buffer (none when
  // in place) and of the elements written.
  int64_t scatter_copy_bytes = 0, scatter_write_bytes = 0;
};

namespace {
// A kernel step's symbol values, work items and whether they split across the pool.
void plan_kernel(const Step& kernel, const ir::SymbolBindings& bindings, std::vector<int64_t>& symbols, int64_t& items,
                 bool& parallel) {
  symbols.clear();
  for (const std::string& s : kernel.symbols) symbols.push_back(bindings.at(s));
  items = kernel.items.evaluate(bindings);
  parallel = splits_across_threads(items, kernel.work_per_item.evaluate(bindings));
}
}  // namespace

CpuExecutable::StepPlan CpuExecutable::plan_step(const Step& step, const ir::SymbolBindings& bindings) const {
  StepPlan plan;
  if (step.scatter >= 0 && program_.slots[step.slots[1]].kind != Slot::Kind::Arena) {
    const ir::Node& node = program_.graph.node(step.scatter);
    plan.scatter_copy_bytes = byte_count(ir::evaluate_shape(node.shape, bindings), node.dtype);
    plan.scatter_write_bytes = byte_count(ir::evaluate_shape(node.inputs[1].view.shape(), bindings), node.dtype);
  }
  if (step.kind == Step::Kind::Kernel) plan_kernel(step, bindings, plan.symbols, plan.items, plan.parallel);
  const bool gemm = step.kind == Step::Kind::Gemm || step.kind == Step::Kind::GroupedGemm;
  auto layout = [&](const ir::View& v) {
    return !gemm || v.rank() == 0 ? StridedLayout{} : strided_layout(v, bindings);
  };
  plan.a = layout(step.a);
  plan.b = layout(step.b);
  plan.offs = layout(step.offs);
  if (step.kind == Step::Kind::GroupedGemm && step.few_rows) {
    // Planned for an expert of one row; expert_gemvs sets each expert's count.
    ir::SymbolBindings expert = bindings;
    expert[codegen::kExpertRowsSymbol] = 1;
    plan_kernel(*step.few_rows, expert, plan.symbols, plan.items, plan.parallel);
    const std::vector<std::string>& symbols = step.few_rows->symbols;
    const auto rows_symbol = std::find(symbols.begin(), symbols.end(), codegen::kExpertRowsSymbol);
    INTERNAL_CHECK(rows_symbol != symbols.end()) << step.what << ": the expert GEMV reads no row count";
    plan.expert_rows_symbol = static_cast<int>(rows_symbol - symbols.begin());
    plan.expert_work_per_row = step.few_rows->work_per_item.evaluate(expert);
  } else if (step.few_rows && plan.a.shape[plan.a.shape.size() - 2] <= step.few_rows_limit) {
    plan.few_rows = true;
    plan_kernel(*step.few_rows, bindings, plan.symbols, plan.items, plan.parallel);
  }
  // Only ATen multiplies a half dtype, but for the few rows the GEMV kernel takes.
  plan.matmul_through_aten = step.kind == Step::Kind::Gemm && ir::is_half(step.dtype) && !plan.few_rows;
  return plan;
}

// Everything computed once per distinct set of input symbol values. Steps and outputs whose sizes
// mention a data symbol are planned during the run instead (their entries stay empty here).
struct CpuExecutable::CallPlan {
  MemoryPlan memory;
  // The arena when every in-place Scatter writes into the caller's buffer: their results take
  // no arena space (a decode step's caches would otherwise be reserved twice over).
  MemoryPlan memory_in_place;
  std::vector<StepPlan> steps;
  OutputShapes output_shapes;
  std::vector<StridedLayout> output_layouts;  // the output's view of its node's buffer
  bool searched = false;  // the steps' choices came from the schedule search (or its disk cache)
};

CpuExecutable::CpuExecutable(Program program, std::map<std::string, BufferRef> weights, int threads,
                             SearchOptions search, bool time_steps)
    : program_(std::move(program)), weights_(std::move(weights)), search_(std::move(search)), pool_(threads),
      threads_(threads), time_steps_(time_steps), input_nodes_(program_.graph.input_nodes()) {
  // Each Weight slot's buffer, found once: rebind_weight assigns into the same map entry. A
  // decode step's call looked up its ~170-340 weights by name (a walk through cold map nodes
  // after the last call's weight stream): ~0.1-0.2 ms a call.
  slot_weights_.resize(program_.slots.size());
  for (size_t s = 0; s < program_.slots.size(); ++s) {
    const Slot& slot = program_.slots[s];
    if (slot.kind != Slot::Kind::Weight) continue;
    const ir::Node& node = program_.graph.node(slot.node);
    auto it = weights_.find(node.name);
    USER_CHECK(it != weights_.end()) << "node %" << slot.node << " Weight '" << node.name
                                     << "': no buffer is bound to this weight";
    check_weight(node, it->second);
    slot_weights_[s] = {&it->second, ir::is_static(node.shape), is_dense(it->second), span_bytes(it->second)};
  }
  for (const Slot& slot : program_.slots) {
    if (slot.kind != Slot::Kind::Int4Pairs) continue;
    const std::string& name = program_.graph.node(slot.node).name;
    int4_pairs_[name] = pack_int4_pairs(weights_.at(name));
  }
  in_place_ = in_place_scatters(program_);
}

void CpuExecutable::pack_settled_int4_pairs() const {
  for (auto it = int4_pairs_rebound_.begin(); it != int4_pairs_rebound_.end();) {
    if (it->second++ == 0) {
      ++it;
      continue;
    }
    int4_pairs_[it->first] = pack_int4_pairs(weights_.at(it->first));
    it = int4_pairs_rebound_.erase(it);
  }
}

std::vector<std::string> CpuExecutable::copied_weights() const {
  std::vector<std::string> names;
  for (const auto& [name, pairs] : int4_pairs_) names.push_back(name);
  return names;
}

int64_t CpuExecutable::copied_weight_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t bytes = 0;
  for (const auto& [name, pairs] : int4_pairs_) bytes += pairs ? pairs->bytes : 0;
  return bytes;
}

CpuExecutable::~CpuExecutable() = default;

OutputShapes CpuExecutable::output_shapes(const std::vector<BufferRef>& inputs) const {
  std::vector<std::vector<int64_t>> sizes;
  for (const BufferRef& b : inputs) sizes.push_back(b.sizes);
  const ir::SymbolBindings bindings = ir::bind_symbols(program_.graph, input_nodes_, sizes);
  OutputShapes shapes;
  for (const OutputSpec& o : program_.outputs)
    shapes.push_back(ir::evaluate_shape_if_bound(o.ref.view.shape(), bindings));
  return shapes;
}

void CpuExecutable::rebind_weight(const std::string& name, const BufferRef& buffer) {
  bool found = false;
  for (ir::NodeId id : program_.graph.weight_nodes()) {
    const ir::Node& node = program_.graph.node(id);
    if (node.name != name) continue;
    check_weight(node, buffer);
    found = true;
  }
  USER_CHECK(found) << "the compiled graph has no weight named '" << name << "'";
  std::lock_guard<std::mutex> lock(mutex_);
  BufferRef& bound = weights_[name];
  bound = buffer;
  for (SlotWeight& w : slot_weights_)
    if (w.buffer == &bound) {
      w.dense = is_dense(bound);
      w.bytes = span_bytes(bound);
    }
  auto pairs = int4_pairs_.find(name);
  if (pairs != int4_pairs_.end()) {
    pairs->second = nullptr;  // until the weight has stayed bound through a run
    int4_pairs_rebound_[name] = 0;
  }
}

std::vector<int64_t> CpuExecutable::plan_key(const ir::SymbolBindings& bindings) const {
  std::vector<int64_t> key;
  for (const std::string& s : program_.symbols) {
    auto it = bindings.find(s);
    key.push_back(it == bindings.end() ? -1 : it->second);
  }
  return key;
}

std::shared_ptr<const CpuExecutable::CallPlan> CpuExecutable::plan_for(const ir::SymbolBindings& bindings) const {
  const std::vector<int64_t> key = plan_key(bindings);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  auto plan = std::make_shared<CallPlan>();
  std::vector<MemoryRequest> requests;
  for (const Slot& slot : program_.slots) {
    const int64_t bytes = slot.kind == Slot::Kind::Arena ? slot.bytes.evaluate(bindings) : -1;
    requests.push_back(MemoryRequest{bytes, slot.first_step, slot.last_step});
  }
  plan->memory = plan_memory(requests, kAlignment);
  for (const InPlaceScatter& scatter : in_place_) requests[scatter.out_slot].bytes = -1;
  plan->memory_in_place = in_place_.empty() ? plan->memory : plan_memory(requests, kAlignment);
  for (const Step& step : program_.steps)
    plan->steps.push_back(step.late ? StepPlan{} : plan_step(step, bindings));
  for (const OutputSpec& o : program_.outputs) {
    plan->output_shapes.push_back(ir::evaluate_shape_if_bound(o.ref.view.shape(), bindings));
    plan->output_layouts.push_back(plan->output_shapes.back() ? strided_layout(o.ref.view, bindings) : StridedLayout{});
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() > 64) plans_.clear();  // a bound on distinct shapes kept
  plans_[key] = plan;
  return plan;
}

std::shared_ptr<const CpuExecutable::CallPlan> CpuExecutable::searched_plan(std::shared_ptr<const CallPlan> plan,
                                                                            const ir::SymbolBindings& bindings,
                                                                            const std::vector<BufferRef>& inputs,
                                                                            const std::vector<BufferRef>& outputs) const {
  std::lock_guard<std::mutex> one_search(search_mutex_);
  const std::vector<int64_t> key = plan_key(bindings);
  {
    // Another call may have searched these shapes while this one waited.
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end() && it->second->searched) return it->second;
  }
  const size_t steps = program_.steps.size();
  std::vector<StepChoice> heuristic(steps);
  SearchSpace space{std::vector<bool>(steps, false), std::vector<bool>(steps, false), std::vector<int>(steps, 0)};
  // What the result depends on: the machine and its threads, the program's steps, the shapes.
  std::ostringstream identity;
  identity << "schedule search 2\n" << toolchain_identity(search_.isa) << "\nthreads " << threads_ << " aten "
           << has_aten_call_executor() << "\n";
  for (size_t s = 0; s < steps; ++s) {
    const Step& step = program_.steps[s];
    const StepPlan& sp = plan->steps[s];
    heuristic[s].parallel = sp.parallel;
    heuristic[s].matmul_through_aten = sp.matmul_through_aten;
    space.splittable[s] = step.kind == Step::Kind::Kernel && !step.late && sp.items > 1;
    space.aten_matmul[s] = step.kind == Step::Kind::Gemm && !step.late && !sp.matmul_through_aten &&
                           has_aten_call_executor();
    space.variants[s] = step.kind == Step::Kind::Kernel && !step.late ? static_cast<int>(step.variants.size()) : 0;
    identity << static_cast<int>(step.kind) << " " << step.kernel_name << " " << step.what;
    for (const KernelVariant& variant : step.variants) identity << " " << variant.kernel_name;
    identity << "\n";
  }
  for (const auto& [name, value] : bindings) identity << name << "=" << value << "\n";
  const std::string path = search_entry_path(search_.cache_dir, identity.str(), ".txt");

  std::vector<StepChoice> choices;
  std::string log;
  if (load_choices(path, space, choices)) {
    log = "search: choices from " + path + "\n";
  } else {
    forget_unreadable_entry(path);
    ScratchCalls scratch(inputs, outputs, plan->output_shapes,
                         [&](size_t k) { return program_.graph.node(program_.outputs[k].ref.node).dtype; });
    const TimeCall time_call = [&](const std::vector<StepChoice>& trial_choices) {
      CallPlan trial = *plan;
      for (size_t s = 0; s < steps; ++s) {
        trial.steps[s].parallel = trial_choices[s].parallel;
        trial.steps[s].matmul_through_aten = trial_choices[s].matmul_through_aten;
        trial.steps[s].variant = trial_choices[s].variant;
      }
      scratch.reset();
      TimedCall timed;
      timed.step_us.assign(steps, 0.0);
      const auto start = std::chrono::steady_clock::now();
      execute(trial, bindings, scratch.inputs(), scratch.outputs(), scratch.allocate_late(), &timed.step_us);
      timed.total_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      return timed;
    };
    choices = search_schedule(heuristic, space, search_.calls, time_call, log);
    store_choices(path, choices);
  }
  if (!search_.debug_dir.empty()) append_search_log(search_.debug_dir, log);
  auto searched = std::make_shared<CallPlan>(*plan);
  for (size_t s = 0; s < steps; ++s) {
    searched->steps[s].parallel = choices[s].parallel;
    searched->steps[s].matmul_through_aten = choices[s].matmul_through_aten;
    searched->steps[s].variant = choices[s].variant;
  }
  searched->searched = true;
  std::lock_guard<std::mutex> lock(mutex_);
  plans_[key] = searched;
  return searched;
}

void CpuExecutable::aten_matmul(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                                const ir::SymbolBindings& bindings) const {
  const int64_t element = static_cast<int64_t>(ir::dtype_size(step.dtype));
  const auto operand = [&](int slot, const StridedLayout& l) {
    return BufferRef{static_cast<std::byte*>(ptr[slot]) + l.offset * element, step.dtype, l.shape, l.strides};
  };
  BufferRef out{ptr[step.slots[2]], step.dtype, plan.a.shape, {}};
  out.sizes.back() = plan.b.shape.back();
  out.strides = contiguous_strides(out.sizes);
  run_aten_matmul(operand(step.slots[0], plan.a), operand(step.slots[1], plan.b), out, bindings);
}

void CpuExecutable::aten_group_product(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                                       const ir::SymbolBindings& bindings, int64_t g, int64_t begin,
                                       int64_t end) const {
  const int64_t element = static_cast<int64_t>(ir::dtype_size(step.dtype));
  const StridedLayout& a = plan.a;
  const StridedLayout& b = plan.b;
  const int64_t k = a.shape[1], n = b.shape[2];
  auto* a_data = static_cast<std::byte*>(ptr[step.slots[0]]);
  auto* b_data = static_cast<std::byte*>(ptr[step.slots[1]]);
  auto* out_data = static_cast<std::byte*>(ptr[step.slots[3]]);
  const BufferRef group_rows{a_data + (a.offset + begin * a.strides[0]) * element, step.dtype, {end - begin, k},
                             {a.strides[0], a.strides[1]}};
  const BufferRef expert{b_data + (b.offset + g * b.strides[0]) * element, step.dtype, {k, n},
                         {b.strides[1], b.strides[2]}};
  const BufferRef product{out_data + begin * n * element, step.dtype, {end - begin, n}, {n, 1}};
  run_aten_matmul(group_rows, expert, product, bindings);
}

int64_t CpuExecutable::aten_grouped_matmul(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                                           const ir::SymbolBindings& bindings) const {
  const int64_t rows = plan.a.shape[0], n = plan.b.shape[2];
  // Rows in no group are zero; the groups overwrite theirs.
  std::memset(ptr[step.slots[3]], 0, static_cast<size_t>(rows * n) * ir::dtype_size(step.dtype));
  if (n == 0) return 0;
  int64_t calls = 0;
  for_each_row_group(static_cast<const int64_t*>(ptr[step.slots[2]]), plan.offs, rows,
                     [&](int64_t g, int64_t begin, int64_t end) {
                       aten_group_product(step, plan, ptr, bindings, g, begin, end);
                       ++calls;
                     });
  return calls;
}

int64_t CpuExecutable::expert_gemvs(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                                    const ir::SymbolBindings& bindings, Arena& arena) const {
  const Step& gemv = *step.few_rows;
  const StridedLayout& a = plan.a;
  const StridedLayout& b = plan.b;
  const int64_t rows = a.shape[0], k = a.shape[1], n = b.shape[2];
  const int64_t element = static_cast<int64_t>(ir::dtype_size(step.dtype));
  auto* a_data = static_cast<std::byte*>(ptr[step.slots[0]]);
  auto* b_data = static_cast<std::byte*>(ptr[step.slots[1]]);
  auto* out = static_cast<std::byte*>(ptr[step.slots[3]]);
  // Rows in no group are zero; the groups overwrite theirs.
  std::memset(out, 0, static_cast<size_t>(rows * n * element));
  if (n == 0 || k == 0) return 0;
  const bool bf16_pairs = step.dtype == ir::DType::BF16;
  std::vector<int64_t> symbols = plan.symbols;
  std::vector<void*>& params = arena.params;
  int64_t aten_calls = 0;
  for_each_row_group(
      static_cast<const int64_t*>(ptr[step.slots[2]]), plan.offs, rows, [&](int64_t g, int64_t begin, int64_t end) {
        const int64_t count = end - begin;
        // One f32 row streams the weight through BLAS's GEMV at full rate, where the strips would
        // compute 16 rows' worth of products for it; one bf16 row's pairs (8 rows' worth) still
        // outrun the weight's bytes, and oneDNN would wake torch's threads for it.
        if (count > step.few_rows_limit || (count < 2 && !bf16_pairs)) {
          if (step.groups_through_aten) {
            pool_.rest();  // torch's own threads run the op
            aten_group_product(step, plan, ptr, bindings, g, begin, end);
            ++aten_calls;
          } else {
            blas_group_product(step.dtype, a_data, a, b_data, b, g, begin, end, out, blas_columns_split());
          }
          return;
        }
        // The kernel's indices are the views' within the expert: its rows and weight start here.
        params = {a_data + begin * a.strides[0] * element, b_data + g * b.strides[0] * element,
                  out + begin * n * element};
        symbols[plan.expert_rows_symbol] = count;
        launch(gemv, gemv.fn, params.data(), symbols.data(), plan.items,
               splits_across_threads(plan.items, plan.expert_work_per_row * count));
      });
  return aten_calls;
}

void CpuExecutable::run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& caller_outputs,
                        const LateOutputAllocator& allocate_late) const {
  std::vector<std::vector<int64_t>> input_sizes;
  input_sizes.reserve(inputs.size());
  for (const BufferRef& b : inputs) input_sizes.push_back(b.sizes);
  const ir::SymbolBindings bindings = ir::bind_symbols(program_.graph, input_nodes_, input_sizes);
  std::shared_ptr<const CallPlan> plan = plan_for(bindings);
  check_outputs(program_.graph, caller_outputs, plan->output_shapes);
  // No search with collectives: each rank would time its own number of calls, and every call
  // issues collectives its peers must match.
  if (search_.calls > 0 && !plan->searched && program_.collectives == 0)
    plan = searched_plan(plan, bindings, inputs, caller_outputs);
  if (!time_steps_) {
    execute(*plan, bindings, inputs, caller_outputs, allocate_late, nullptr);
    return;
  }
  std::vector<double> step_us(program_.steps.size(), 0.0);
  execute(*plan, bindings, inputs, caller_outputs, allocate_late, &step_us);
  std::lock_guard<std::mutex> lock(steps_mutex_);
  last_step_us_ = std::move(step_us);
}

RunStats CpuExecutable::last_run_stats() const {
  RunStats stats{last_bytes_copied_.load(), last_collective_wait_ns_.load(), last_aten_matmuls_.load(), {}};
  std::lock_guard<std::mutex> lock(steps_mutex_);
  for (size_t s = 0; s < last_step_us_.size(); ++s)
    stats.steps.push_back(runtime::StepTime{program_.steps[s].what, last_step_us_[s] / 1e3});
  return stats;
}

void CpuExecutable::execute(const CallPlan& call_plan, ir::SymbolBindings bindings, const std::vector<BufferRef>& inputs,
                            const std::vector<BufferRef>& caller_outputs, const LateOutputAllocator& allocate_late,
                            std::vector<double>* step_us) const {
  const CallPlan* plan = &call_plan;
  const ir::Graph& graph = program_.graph;
  std::vector<BufferRef> outputs = caller_outputs;  // outputs sized by a data symbol are allocated last

  int64_t bytes_copied = 0;
  std::vector<void*> ptr(program_.slots.size(), nullptr);
  std::vector<const BufferRef*> caller_buffer(program_.slots.size(), nullptr);  // Input and Weight slots
  // Where each caller buffer lies, for the overlap checks below: read from one array rather than
  // from each BufferRef's sizes and strides (cold after a weight stream: 16 scatters checked
  // against a decode graph's ~500 slots took 53 us a call).
  struct Span {
    const void* data = nullptr;
    int64_t bytes = 0;
  };
  std::vector<Span> caller_span(program_.slots.size());
  std::vector<std::vector<std::byte>> dense_copies;  // non-contiguous caller buffers (rare)
  std::vector<std::shared_ptr<const Int4Pairs>> pairs_read;  // held for the call
  auto source = [&](const BufferRef& b) -> void* {
    if (is_dense(b)) return b.data;
    const size_t element = ir::dtype_size(b.dtype);
    dense_copies.emplace_back(static_cast<size_t>(element_count(b.sizes)) * element);
    strided_copy(static_cast<const std::byte*>(b.data), b.sizes, b.strides, 0, element, dense_copies.back().data());
    bytes_copied += static_cast<int64_t>(dense_copies.back().size());
    return dense_copies.back().data();
  };
  {
    std::unique_lock<std::mutex> lock(mutex_);  // weights_ may be rebound concurrently
    if (!int4_pairs_rebound_.empty()) pack_settled_int4_pairs();
    for (size_t s = 0; s < program_.slots.size(); ++s) {
      const Slot& slot = program_.slots[s];
      if (slot.kind == Slot::Kind::Input) {
        const ir::Node& node = graph.node(slot.node);
        const BufferRef& input = inputs[slot.input_index];
        check_buffer("input", node.name, input, node.dtype);
        caller_buffer[s] = &input;
        caller_span[s] = {input.data, span_bytes(input)};
        ptr[s] = source(input);
      } else if (slot.kind == Slot::Kind::Weight) {
        // What check_weight found when the weight was bound, its static shape included.
        const SlotWeight& w = slot_weights_[s];
        if (!w.static_shape) {
          const ir::Node& node = graph.node(slot.node);
          check_weight_shape(node, *w.buffer, ir::evaluate_shape(node.shape, bindings));
        }
        caller_buffer[s] = w.buffer;
        caller_span[s] = {w.buffer->data, w.bytes};
        ptr[s] = w.dense ? w.buffer->data : source(*w.buffer);
      } else if (slot.kind == Slot::Kind::Int4Pairs) {
        pairs_read.push_back(int4_pairs_.at(graph.node(slot.node).name));
        if (pairs_read.back()) ptr[s] = pairs_read.back()->data.data();
      }
    }
  }
  // An in-place Scatter writes into output k's buffer when the caller passed exactly the dense
  // buffer its data operand reads (the cache tensor as its own mutation's output) and that
  // buffer overlaps no other input, weight or output; otherwise it scatters into the arena.
  std::vector<bool> written_directly(outputs.size(), false);
  size_t in_place_count = 0;
  for (const InPlaceScatter& scatter : in_place_) {
    const BufferRef& destination = outputs[scatter.output];
    const BufferRef& updated = *caller_buffer[scatter.data_slot];
    if (destination.data == nullptr || ptr[scatter.data_slot] != destination.data || !is_dense(updated) ||
        byte_count(updated.sizes, updated.dtype) != byte_count(destination.sizes, destination.dtype))
      continue;
    bool shared = false;
    const int64_t destination_bytes = span_bytes(destination);
    for (size_t s = 0; s < caller_span.size() && !shared; ++s)
      shared = static_cast<int>(s) != scatter.data_slot &&
               overlaps(caller_span[s].data, caller_span[s].bytes, destination.data, destination_bytes);
    for (size_t j = 0; j < outputs.size() && !shared; ++j)
      shared = static_cast<int>(j) != scatter.output && overlaps(outputs[j], destination);
    if (shared) continue;
    ptr[scatter.out_slot] = destination.data;  // later steps read the updated cache from there
    written_directly[scatter.output] = true;
    ++in_place_count;
  }
  const MemoryPlan& memory = in_place_count == in_place_.size() ? plan->memory_in_place : plan->memory;
  ArenaPool::Lease lease = arenas_->take(memory.total_bytes);
  Arena& arena = lease.arena();
  for (size_t s = 0; s < program_.slots.size(); ++s)
    if (ptr[s] == nullptr && memory.offsets[s] >= 0) ptr[s] = arena.data + memory.offsets[s];
  // Outputs the producing kernel writes in place, when the caller's buffer aliases nothing.
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!program_.outputs[k].direct || written_directly[k] || outputs[k].data == nullptr) continue;
    bool alias = false;
    const int64_t output_bytes = span_bytes(outputs[k]);
    for (const Span& b : caller_span) alias = alias || overlaps(outputs[k].data, output_bytes, b.data, b.bytes);
    for (size_t j = 0; j < outputs.size(); ++j) alias = alias || (j != k && overlaps(outputs[k], outputs[j]));
    if (alias) continue;
    ptr[program_.slot_of_node[program_.outputs[k].ref.node]] = outputs[k].data;
    written_directly[k] = true;
  }

  // Data symbols: bound from their value's buffer once the step writing it has run; what is
  // sized by them is allocated (late slots) and planned (late steps) only then.
  std::vector<AlignedBuffer> late_buffers;
  const auto bind_symbols_after = [&](int step) {
    for (const SymbolRead& read : program_.symbol_reads) {
      if (read.after_step != step) continue;
      int64_t value = 0;
      std::memcpy(&value, static_cast<const std::byte*>(ptr[read.slot]) + read.offset.evaluate(bindings) * 8, 8);
      ir::bind_data_symbol(graph, graph.data_symbols()[read.symbol], value, bindings);
    }
  };
  bind_symbols_after(-1);
  StepPlan late_plan;
  // Destroyed before the arena and the late buffers: a collective still in flight when a step
  // throws is waited for before its buffers can be reused.
  std::vector<std::unique_ptr<InFlightCollective>> in_flight(program_.collectives > 0 ? program_.steps.size() : 0);
  int64_t collective_wait_ns = 0, aten_matmuls = 0;
  for (size_t s = 0; s < program_.steps.size(); ++s) {
    const Step& step = program_.steps[s];
    for (int slot : step.slots) {
      if (program_.slots[slot].kind != Slot::Kind::Late || ptr[slot] != nullptr) continue;
      late_buffers.emplace_back(static_cast<size_t>(program_.slots[slot].bytes.evaluate(bindings)));
      ptr[slot] = late_buffers.back().data();
    }
    if (step.late) late_plan = plan_step(step, bindings);
    const StepPlan& sp = step.late ? late_plan : plan->steps[s];
    const auto start = std::chrono::steady_clock::now();
    run_step(s, sp, ptr, bindings, arena, bytes_copied, aten_matmuls, in_flight);
    if (step_us || step.kind == Step::Kind::CollectiveWait) {
      const auto elapsed = std::chrono::steady_clock::now() - start;
      if (step_us) (*step_us)[s] = std::chrono::duration<double, std::micro>(elapsed).count();
      if (step.kind == Step::Kind::CollectiveWait)
        collective_wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    }
    bind_symbols_after(static_cast<int>(s));
  }

  // Outputs sized by a data symbol, now that every symbol is bound.
  std::vector<StridedLayout> late_layouts(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (plan->output_shapes[k]) continue;
    const ir::View& view = program_.outputs[k].ref.view;
    late_layouts[k] = strided_layout(view, bindings);
    outputs[k] = allocate_late(k, late_layouts[k].shape);
  }

  // Copy the remaining outputs. A source that is caller memory (an input returned as is) may be
  // overwritten by another output: snapshot such sources first. Outputs already written are
  // not written again, so they clobber nothing.
  std::vector<const void*> sources(outputs.size(), nullptr);
  std::vector<std::vector<std::byte>> snapshots;
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const ir::NodeId node = program_.outputs[k].ref.node;
    const int slot = program_.slot_of_node[node];
    sources[k] = ptr[slot];
    if (program_.slots[slot].kind == Slot::Kind::Arena || program_.slots[slot].kind == Slot::Kind::Late) continue;
    const int64_t bytes = byte_count(ir::evaluate_shape(graph.node(node).shape, bindings), graph.node(node).dtype);
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (written_directly[j] || !overlaps(sources[k], bytes, outputs[j].data, span_bytes(outputs[j]))) continue;
      snapshots.emplace_back(static_cast<size_t>(bytes));
      std::memcpy(snapshots.back().data(), sources[k], static_cast<size_t>(bytes));
      bytes_copied += bytes;
      sources[k] = snapshots.back().data();
      break;
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const StridedLayout& l = plan->output_shapes[k] ? plan->output_layouts[k] : late_layouts[k];
    strided_copy(static_cast<const std::byte*>(sources[k]), l.shape, l.strides, l.offset,
                 ir::dtype_size(outputs[k].dtype), static_cast<std::byte*>(outputs[k].data));
    bytes_copied += byte_count(outputs[k].sizes, outputs[k].dtype);
  }
  last_bytes_copied_.store(bytes_copied);
  last_collective_wait_ns_.store(collective_wait_ns);
  last_aten_matmuls_.store(aten_matmuls);
}

void CpuExecutable::run_step(size_t index, const StepPlan& plan, const std::vector<void*>& ptr,
                             const ir::SymbolBindings& bindings, Arena& arena, int64_t& bytes_copied,
                             int64_t& aten_matmuls,
                             std::vector<std::unique_ptr<InFlightCollective>>& in_flight) const {
  const Step& step = program_.steps[index];
  if (step.kind == Step::Kind::Collective) {
    const ir::Node& node = program_.graph.node(step.collective);
    in_flight[index] = start_collective(*node.collective, input_view(program_.graph, node, 0, step, ptr, bindings),
                                        output_buffer(node, step, ptr, bindings), bindings);
    return;
  }
  if (step.kind == Step::Kind::CollectiveWait) {
    std::unique_ptr<InFlightCollective> pending = std::move(in_flight[static_cast<size_t>(step.waits_for)]);
    INTERNAL_CHECK(pending != nullptr) << "waiting for a collective that was not issued: " << step.what;
    pending->wait();
    return;
  }
  if (step.kind == Step::Kind::Gemm && plan.few_rows && !plan.matmul_through_aten)
    return run_kernel(*step.few_rows, plan, ptr, arena);
  if (step.kind == Step::Kind::Gemm) {
    if (plan.matmul_through_aten) {
      pool_.rest();  // torch's own threads run the op
      aten_matmul(step, plan, ptr, bindings);
      ++aten_matmuls;
    } else {
      blas_matmul(step.dtype, ptr[step.slots[0]], plan.a, ptr[step.slots[1]], plan.b, ptr[step.slots[2]],
                  blas_columns_split());
    }
    return;
  }
  if (step.kind == Step::Kind::GroupedGemm) {
    if (step.few_rows) {
      aten_matmuls += expert_gemvs(step, plan, ptr, bindings, arena);
      return;
    }
    if (step.groups_through_aten) {
      pool_.rest();  // torch's own threads run the op
      aten_matmuls += aten_grouped_matmul(step, plan, ptr, bindings);
      return;
    }
    blas_grouped_matmul(step.dtype, ptr[step.slots[0]], plan.a, ptr[step.slots[1]], plan.b,
                        static_cast<const int64_t*>(ptr[step.slots[2]]), plan.offs, ptr[step.slots[3]],
                        blas_columns_split());
    return;
  }
  if (step.kind == Step::Kind::AtenCall) {
    pool_.rest();  // torch's own threads run the op
    run_aten_call_step(program_.graph, program_.graph.node(step.aten_call), step, ptr, bindings);
    return;
  }
  // A Scatter copies its data into its result first, unless they are one buffer (in place).
  if (step.scatter >= 0 && ptr[step.slots[0]] != ptr[step.slots[1]]) bytes_copied += plan.scatter_copy_bytes;
  bytes_copied += plan.scatter_write_bytes;
  run_kernel(step, plan, ptr, arena);
}

void CpuExecutable::run_kernel(const Step& step, const StepPlan& plan, const std::vector<void*>& ptr,
                               Arena& arena) const {
  std::vector<void*>& params = arena.params;
  params.clear();
  for (int slot : step.slots) params.push_back(ptr[slot]);
  launch(step, plan.variant >= 0 ? step.variants[plan.variant].fn : step.fn, params.data(), plan.symbols.data(),
         plan.items, plan.parallel);
}

void CpuExecutable::launch(const Step& step, KernelFn fn, void** params, const int64_t* symbols, int64_t items,
                           bool parallel) const {
  KernelTask task;
  task.fn = fn;
  task.params = params;
  task.symbols = symbols;
  if (!parallel || items <= 1)
    run_kernel_chunk(&task, 0, items);
  else
    split_across_threads(items, step.min_chunk_items, run_kernel_chunk, &task);
  raise_kernel_status(step.what, task.status.load(), task.info[0], task.info[1]);
}

void CpuExecutable::split_across_threads(int64_t items, int64_t min_chunk, ThreadPool::Task task,
                                         void* context) const {
  // On torch's OpenMP team wherever torch has one: a pool of our own beside it put three busy
  // threads on two cores whenever either spun after its work (libgomp's workers ~9 ms after each
  // parallel region of the caller's or of our ATen steps, ours 1 ms), and the caller waited a
  // scheduler tick for a descheduled worker: BERT's bf16 prefill took 15 or 20-24 ms by process
  // (docs/lessons.md, 2026-12-06 (morning)). One team spins for its own next work.
  if (has_aten_call_executor() && aten_parallel_for(items, pool_.threads(), min_chunk, task, context)) return;
  pool_.parallel_for(items, task, context, min_chunk);
}

ColumnSplit CpuExecutable::blas_columns_split() const {
  return [this](int64_t m, int64_t n, int64_t k, const std::function<void(int64_t, int64_t)>& columns) {
    // Blocks of a multiple of 16 columns (whole vectors of BLAS's kernels), one per thread, for
    // products OpenBLAS itself would thread: m n k of 2^18 or more, a GEMV's n k of 9,216 (its
    // interface's thresholds). A smaller one is over before a parallel region would start: GPT-2's
    // attention products (32 x 64 x 32 per head) split in two took its f32 prefill 10% slower.
    const int64_t threads = pool_.threads();
    const int64_t block = ((n + threads - 1) / threads + 15) & ~int64_t{15};
    const bool big = m == 1 ? n * k >= 9216 : m * n * k >= (int64_t{1} << 18);
    if (threads == 1 || n <= block || !big) return columns(0, n);
    struct Blocks {
      const std::function<void(int64_t, int64_t)>* columns;
      int64_t n, block;
    } blocks{&columns, n, block};
    split_across_threads(
        (n + block - 1) / block, 1,
        [](void* context, int64_t begin, int64_t end) {
          const auto& b = *static_cast<const Blocks*>(context);
          (*b.columns)(begin * b.block, std::min(b.n, end * b.block));
        },
        &blocks);
  };
}

}  // namespace luminal::runtime::cpu
