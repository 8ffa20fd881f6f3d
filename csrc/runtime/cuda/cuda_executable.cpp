#include "runtime/cuda/cuda_executable.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "common/error.h"
#include "ir/bind_symbols.h"
#include "runtime/aten_fallback.h"
#include "runtime/collectives.h"
#include "runtime/buffer_layout.h"
#include "runtime/call_stream.h"
#include "runtime/kernel_status.h"
#include "runtime/cpu/memory_plan.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/strided_copy.h"

namespace luminal::runtime::cuda {

namespace {

// cuBLASLt and vectorised kernels want 256-byte aligned operands; the arena keeps every buffer so.
constexpr size_t kArenaAlignment = 256;
// A segment's graphs kept for distinct addresses (a caller alternating two KV caches, say).
constexpr size_t kGraphsPerSegment = 4;
// Inputs up to this size that no step updates in place are staged (copied into the arena), so
// that a decode loop's fresh token and position tensors do not change a graph's addresses.
constexpr int64_t kStagedInputBytes = int64_t{1} << 16;
constexpr int64_t kCopyBlockThreads = 256;
constexpr int64_t kMaxCopyBlocks = 65535;

CUdeviceptr device_pointer(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

OperandLayout operand_layout(const ir::View& view, const ir::SymbolBindings& bindings) {
  return OperandLayout{ir::evaluate_shape(view.shape(), bindings), ir::evaluate_shape(view.strides(), bindings),
                       view.offset().evaluate(bindings)};
}

OperandLayout dense_layout(const std::vector<int64_t>& shape) {
  return OperandLayout{shape, contiguous_strides(shape), 0};
}

// The layout cuBLASLt reads an operand through: its own, or a dense copy's where it cannot.
OperandLayout readable_layout(const OperandLayout& layout) {
  return lt_readable(layout) ? layout : dense_layout(layout.shape);
}

}  // namespace

// The device, its compiled kernels and what runs keep between calls.
struct CudaExecutable::Device {
  explicit Device(int ordinal) : device(ordinal) { device.make_current(); }
  CudaDevice device;
  std::unique_ptr<KernelModules> modules;
  std::vector<CUfunction> functions;  // per program step (kernels only)
  CUfunction copy_functions[4] = {};  // the strided copy for 1, 2, 4 and 8-byte elements
  std::unique_ptr<CublasLt> blas;
  std::unique_ptr<Stream> capture_stream;
  DeviceBuffer arena;
  DeviceBuffer info;  // 3 x int64 per step: the kernels' error reports
  std::unique_ptr<PinnedBuffer> info_host;
  // Per segment: graphs by the addresses and symbol values they were captured with, oldest first.
  struct Graph {
    std::vector<int64_t> key;
    CUgraphExec exec = nullptr;
  };
  std::vector<std::vector<Graph>> graphs;
  std::map<std::string, DeviceBuffer> uploaded;  // host weights (archive constants) on the device

  void drop_graphs() {
    for (auto& segment : graphs)
      for (Graph& g : segment) driver().GraphExecDestroy(g.exec);
    for (auto& segment : graphs) segment.clear();
  }
  ~Device() {
    try {
      device.make_current();  // the buffers and graphs below belong to its context
    } catch (const Error&) {
    }
    drop_graphs();
  }
};

// What a call needs from its symbol values, computed once per distinct set.
struct CudaExecutable::CallPlan {
  OutputShapes output_shapes;
  std::vector<OperandLayout> output_layouts;  // the views outputs are read through
  // Arena offsets per slot (-1: not in the arena), with and without the in-place updates.
  cpu::MemoryPlan memory, memory_in_place;
  // Requests after the slots: one per staged input slot, then two per Gemm step (packed a, b).
  std::vector<int> staged;  // per slot: its staging request index, or -1
  // A Matmul step's operands (as the graph views them) and its cuBLASLt plan, in which an
  // operand cuBLASLt cannot read in place is a packed dense copy (in the arena at request
  // scratch_a / scratch_b; -1 for a late step, which packs into buffers of its own).
  struct Gemm {
    Gemm(const ir::Node& matmul, const ir::SymbolBindings& bindings)
        : a(operand_layout(matmul.inputs[0].view, bindings)),
          b(operand_layout(matmul.inputs[1].view, bindings)),
          plan(plan_gemm(readable_layout(a), readable_layout(b))) {}
    OperandLayout a, b;
    GemmPlan plan;
    int64_t scratch_a = -1, scratch_b = -1;
  };
  std::map<size_t, Gemm> gemms;  // by step
};

// One run's buffers and symbol values.
struct CudaExecutable::RunState {
  ir::SymbolBindings bindings;
  const CallPlan* plan = nullptr;
  const cpu::MemoryPlan* memory = nullptr;
  std::vector<CUdeviceptr> ptr;  // per slot
  std::vector<DeviceBuffer> late_buffers;
  std::deque<CallPlan::Gemm> late_gemms;  // Gemm steps sized by a data symbol, planned as they run
  int64_t bytes_copied = 0;
};

CudaExecutable::CudaExecutable(CudaProgram program, std::map<std::string, BufferRef> weights, NvrtcCompiler& compiler)
    : program_(std::move(program)), weights_(std::move(weights)), compiler_(compiler) {
  const ir::Graph& graph = program_.plan.graph;
  for (ir::NodeId id : graph.weight_nodes()) {
    const ir::Node& node = graph.node(id);
    auto it = weights_.find(node.name);
    USER_CHECK(it != weights_.end()) << "no buffer bound for weight '" << node.name << "'";
    check_weight(node, it->second);
  }
  // The weights say which device: open it now, so that NVRTC runs at compile time. (Host
  // weights are constants the archive carried; they are uploaded once the device is known.)
  for (const auto& [name, buffer] : weights_) {
    if (buffer.data == nullptr || buffer.device_index < 0) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    open_device(buffer.data, "weight '" + name + "'");
    break;
  }
}

void CudaExecutable::upload_host_weights() const {
  for (auto& [name, buffer] : weights_) {
    if (buffer.device_index >= 0 || buffer.data == nullptr) continue;
    const size_t bytes = static_cast<size_t>(span_bytes(buffer));
    DeviceBuffer& copy = device_->uploaded[name];
    copy = DeviceBuffer(bytes);
    check_cuda(driver().MemcpyHtoD(copy.get(), buffer.data, bytes), "uploading a constant of the archive");
    buffer.data = reinterpret_cast<void*>(copy.get());
    buffer.device_index = device_->device.ordinal();
  }
}

CudaExecutable::~CudaExecutable() = default;

void CudaExecutable::open_device(const void* pointer, const std::string& what) const {
  const int ordinal = device_of_pointer(pointer, what);
  if (device_) {
    USER_CHECK(device_->device.ordinal() == ordinal)
        << what << " is on cuda:" << ordinal << " but this compiled model runs on cuda:" << device_->device.ordinal()
        << "; move every tensor to one device";
    return;
  }
  auto device = std::make_unique<Device>(ordinal);
  device->modules = std::make_unique<KernelModules>(device->device, compiler_);
  device->functions.assign(program_.steps.size(), nullptr);
  for (size_t s = 0; s < program_.steps.size(); ++s)
    if (program_.steps[s].kind == ProgramStep::Kind::Kernel)
      device->functions[s] = device->modules->function(program_.plan.steps[program_.steps[s].plan_step].cuda);
  for (size_t i = 0; i < 4; ++i) {
    codegen::cuda::CudaKernelSource copy;
    copy.name = strided_copy_kernel_name(size_t{1} << i);
    copy.source = strided_copy_source();
    device->copy_functions[i] = device->modules->function(copy);
  }
  device->blas = std::make_unique<CublasLt>();
  device->capture_stream = std::make_unique<Stream>();
  device->info = DeviceBuffer(std::max<size_t>(program_.steps.size(), 1) * 3 * sizeof(int64_t));
  device->info_host = std::make_unique<PinnedBuffer>(device->info.bytes());
  device->graphs.resize(program_.segments.size());
  device_ = std::move(device);
  upload_host_weights();
}

void CudaExecutable::copy_strided(CUdeviceptr source, const std::vector<int64_t>& shape,
                                  const std::vector<int64_t>& strides, size_t element, CUdeviceptr destination,
                                  CUstream stream) const {
  int64_t count = element_count(shape);
  if (count == 0) return;
  const CopyLayout copy = copy_layout(shape, strides);
  if (is_dense_layout(copy)) {
    check_cuda(driver().MemcpyDtoDAsync(destination, source, static_cast<size_t>(count) * element, stream),
               "cuMemcpyDtoDAsync");
    return;
  }
  void* args[] = {&source, &destination, const_cast<CopyLayout*>(&copy), &count};
  const unsigned blocks =
      static_cast<unsigned>(std::clamp<int64_t>((count + kCopyBlockThreads - 1) / kCopyBlockThreads, 1, kMaxCopyBlocks));
  const CUfunction fn = device_->copy_functions[element == 1 ? 0 : element == 2 ? 1 : element == 4 ? 2 : 3];
  check_cuda(driver().LaunchKernel(fn, blocks, 1, 1, kCopyBlockThreads, 1, 1, 0, stream, args, nullptr),
             "strided copy");
}

CUdeviceptr CudaExecutable::readable_operand(CUdeviceptr base, const OperandLayout& layout, size_t element,
                                             CUdeviceptr into, RunState& state, CUstream stream) const {
  if (lt_readable(layout)) return base;
  if (into == 0) {
    state.late_buffers.emplace_back(static_cast<size_t>(element_count(layout.shape)) * element);
    into = state.late_buffers.back().get();
  }
  copy_strided(base + static_cast<CUdeviceptr>(layout.offset) * element, layout.shape, layout.strides, element, into,
               stream);
  return into;
}

OutputShapes CudaExecutable::output_shapes(const std::vector<BufferRef>& inputs) const {
  std::vector<std::vector<int64_t>> sizes;
  for (const BufferRef& b : inputs) sizes.push_back(b.sizes);
  const ir::SymbolBindings bindings = ir::bind_symbols(program_.plan.graph, sizes);
  OutputShapes shapes;
  for (const OutputSpec& o : program_.outputs) shapes.push_back(ir::evaluate_shape_if_bound(o.ref.view.shape(), bindings));
  return shapes;
}

void CudaExecutable::rebind_weight(const std::string& name, const BufferRef& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ir::Graph& graph = program_.plan.graph;
  for (ir::NodeId id : graph.weight_nodes()) {
    if (graph.node(id).name != name) continue;
    check_weight(graph.node(id), buffer);
    if (buffer.data && buffer.device_index >= 0) open_device(buffer.data, "weight '" + name + "'");
    weights_[name] = buffer;
    if (device_) upload_host_weights();
    if (device_) device_->drop_graphs();  // they hold the old address
    return;
  }
  USER_ERROR() << "no weight named '" << name << "' in this compiled model";
}

RunStats CudaExecutable::last_run_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_stats_;
}

std::shared_ptr<const CudaExecutable::CallPlan> CudaExecutable::plan_for(const ir::SymbolBindings& bindings) const {
  std::vector<int64_t> key;
  for (const std::string& s : program_.symbols) {
    auto it = bindings.find(s);
    key.push_back(it == bindings.end() ? -1 : it->second);
  }
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  const ir::Graph& graph = program_.plan.graph;
  auto plan = std::make_shared<CallPlan>();
  for (const OutputSpec& o : program_.outputs) {
    plan->output_shapes.push_back(ir::evaluate_shape_if_bound(o.ref.view.shape(), bindings));
    plan->output_layouts.push_back(plan->output_shapes.back() ? operand_layout(o.ref.view, bindings) : OperandLayout{});
  }
  std::vector<cpu::MemoryRequest> requests;
  for (const Slot& slot : program_.slots) {
    cpu::MemoryRequest r;
    if (slot.kind == Slot::Kind::Arena) r = {slot.bytes.evaluate(bindings), slot.first_step, slot.last_step};
    requests.push_back(r);
  }
  const int end = static_cast<int>(program_.steps.size());
  plan->staged.assign(program_.slots.size(), -1);
  for (size_t s = 0; s < program_.slots.size(); ++s) {
    const Slot& slot = program_.slots[s];
    if (slot.kind != Slot::Kind::Input) continue;
    const ir::Node& node = graph.node(slot.node);
    const int64_t bytes = byte_count(ir::evaluate_shape(node.shape, bindings), node.dtype);
    // Staged when small, or when a caller passes it with strides (resolved per run: the
    // staging space is reserved for every input that may need it).
    plan->staged[s] = static_cast<int>(requests.size());
    requests.push_back({bytes, 0, end});
  }
  for (size_t s = 0; s < program_.steps.size(); ++s) {
    const ProgramStep& step = program_.steps[s];
    if (step.kind != ProgramStep::Kind::Gemm || step.late) continue;
    const ir::Node& node = graph.node(step.node);
    CallPlan::Gemm gemm(node, bindings);
    const auto scratch = [&](const OperandLayout& layout) -> int64_t {
      if (lt_readable(layout)) return -1;
      const int64_t bytes = element_count(layout.shape) * static_cast<int64_t>(ir::dtype_size(node.dtype));
      requests.push_back({bytes, static_cast<int>(s), static_cast<int>(s)});
      return static_cast<int64_t>(requests.size() - 1);
    };
    gemm.scratch_a = scratch(gemm.a);
    gemm.scratch_b = scratch(gemm.b);
    plan->gemms.emplace(s, std::move(gemm));
  }
  plan->memory = cpu::plan_memory(requests, kArenaAlignment);
  for (const InPlaceScatter& scatter : program_.in_place) requests[scatter.out_slot].bytes = -1;
  plan->memory_in_place = cpu::plan_memory(requests, kArenaAlignment);
  plans_.emplace(key, plan);
  return plan;
}

void CudaExecutable::enqueue_step(size_t s, RunState& state, CUstream stream) const {
  const ProgramStep& step = program_.steps[s];
  const CUdeviceptr info = device_->info.get() + s * 3 * sizeof(int64_t);
  if (step.kind == ProgramStep::Kind::Kernel) {
    const codegen::cuda::CudaKernelSource& kernel = program_.plan.steps[step.plan_step].cuda;
    std::vector<CUdeviceptr> buffers;
    for (int slot : step.slots) buffers.push_back(state.ptr[slot]);
    launch_kernel(device_->functions[s], kernel, buffers, state.bindings, info, stream);
    return;
  }
  INTERNAL_CHECK(step.kind == ProgramStep::Kind::Gemm) << "step " << s << " is not a device step";
  const ir::Node& node = program_.plan.graph.node(step.node);
  const auto planned = state.plan->gemms.find(s);
  // A late Gemm (sized by a data symbol) is planned now; it runs outside graphs.
  const CallPlan::Gemm* gemm =
      planned != state.plan->gemms.end() ? &planned->second : &state.late_gemms.emplace_back(node, state.bindings);
  const size_t element = ir::dtype_size(node.dtype);
  const auto operand = [&](int slot, const OperandLayout& layout, int64_t scratch) {
    const CUdeviceptr into =
        scratch >= 0 ? device_->arena.get() + static_cast<CUdeviceptr>(state.memory->offsets[scratch]) : 0;
    return readable_operand(state.ptr[slot], layout, element, into, state, stream);
  };
  const GemmPlan& plan = gemm->plan;
  const CUdeviceptr out = state.ptr[step.slots[2]];
  CUdeviceptr bias = 0;
  OperandLayout bias_layout;
  if (step.bias_add >= 0) {
    bias_layout = operand_layout(step.bias_view, state.bindings);
    bias = state.ptr[step.slots[3]] + static_cast<CUdeviceptr>(bias_layout.offset) * element;
  }
  if (plan.m == 0 || plan.n == 0) return;
  if (plan.k == 0) {
    // An empty sum: zeros, or the bias broadcast over the rows.
    if (bias != 0) {
      copy_strided(bias, bias_layout.shape, bias_layout.strides, element, out, stream);
    } else {
      const int64_t bytes =
          element_count(ir::evaluate_shape(node.shape, state.bindings)) * static_cast<int64_t>(element);
      check_cuda(driver().MemsetD8Async(out, 0, static_cast<size_t>(bytes), stream), "zeroing an empty matmul");
    }
    return;
  }
  const CUdeviceptr a = operand(step.slots[0], gemm->a, gemm->scratch_a);
  const CUdeviceptr b = operand(step.slots[1], gemm->b, gemm->scratch_b);
  // Offsets in the plan are the views' own for operands read in place, 0 for packed ones.
  device_->blas->matmul(node.dtype, plan, a, b, out, stream, bias);
}

void CudaExecutable::run_segment(size_t index, RunState& state, CUstream stream) const {
  const Segment& segment = program_.segments[index];
  // A graph holds the addresses and launch sizes it was captured with.
  std::vector<int64_t> key;
  for (const auto& [name, value] : state.bindings) key.push_back(value);
  for (size_t s = segment.begin; s < segment.end; ++s)
    for (int slot : program_.steps[s].slots) key.push_back(static_cast<int64_t>(state.ptr[slot]));
  key.push_back(static_cast<int64_t>(device_->arena.get()));
  std::vector<Device::Graph>& graphs = device_->graphs[index];
  for (const Device::Graph& g : graphs) {
    if (g.key != key) continue;
    check_cuda(driver().GraphLaunch(g.exec, stream), "cuGraphLaunch");
    return;
  }
  // Capture on a stream of our own (the caller's may be the legacy stream, which cannot be
  // captured), then replay on the caller's.
  const CUstream capture = device_->capture_stream->get();
  check_cuda(driver().StreamBeginCapture(capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  CUgraph graph = nullptr;
  try {
    for (size_t s = segment.begin; s < segment.end; ++s) enqueue_step(s, state, capture);
  } catch (...) {
    driver().StreamEndCapture(capture, &graph);
    if (graph) driver().GraphDestroy(graph);
    throw;
  }
  check_cuda(driver().StreamEndCapture(capture, &graph), "cuStreamEndCapture");
  CUgraphExec exec = nullptr;
  const CUresult rc = driver().GraphInstantiate(&exec, graph, 0);
  driver().GraphDestroy(graph);
  check_cuda(rc, "cuGraphInstantiate");
  if (graphs.size() >= kGraphsPerSegment) {
    driver().GraphExecDestroy(graphs.front().exec);
    graphs.erase(graphs.begin());
  }
  graphs.push_back(Device::Graph{std::move(key), exec});
  check_cuda(driver().GraphLaunch(exec, stream), "cuGraphLaunch");
}

void CudaExecutable::run_host_step(size_t s, RunState& state, CUstream stream) const {
  const ProgramStep& step = program_.steps[s];
  const ir::Graph& graph = program_.plan.graph;
  const std::string& what = program_.plan.steps[step.plan_step].what;
  if (step.kind == ProgramStep::Kind::Kernel || step.kind == ProgramStep::Kind::Gemm) {
    enqueue_step(s, state, stream);
    return;
  }
  const ir::Node& node = graph.node(step.node);
  const int ordinal = device_->device.ordinal();
  const auto buffer = [&](CUdeviceptr data, const ir::View& view, ir::DType dtype) {
    const OperandLayout l = operand_layout(view, state.bindings);
    return BufferRef{reinterpret_cast<std::byte*>(data) + l.offset * static_cast<int64_t>(ir::dtype_size(dtype)), dtype,
                     l.shape, l.strides, ordinal};
  };
  if (step.kind == ProgramStep::Kind::AtenCall) {
    USER_CHECK(has_aten_call_executor()) << what << ": the ATen fallback needs luminal's Python module";
    std::vector<BufferRef> inputs;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      inputs.push_back(buffer(state.ptr[step.slots[i]], node.inputs[i].view, graph.node(node.inputs[i].node).dtype));
    const std::vector<int64_t> shape = ir::evaluate_shape(node.shape, state.bindings);
    const BufferRef out{reinterpret_cast<void*>(state.ptr[step.slots.back()]), node.dtype, shape,
                        contiguous_strides(shape), ordinal};
    // torch enqueues the op on its current stream, which is this call's stream.
    run_aten_call(*node.aten_call, inputs, state.bindings, out);
    return;
  }
  if (step.kind == ProgramStep::Kind::Collective) {
    const BufferRef input = buffer(state.ptr[step.slots[0]], node.inputs[0].view, graph.node(node.inputs[0].node).dtype);
    const std::vector<int64_t> shape = ir::evaluate_shape(node.shape, state.bindings);
    const BufferRef out{reinterpret_cast<void*>(state.ptr[step.slots.back()]), node.dtype, shape,
                        contiguous_strides(shape), ordinal};
    start_collective(*node.collective, input, out, state.bindings)->wait();
    return;
  }
  // GroupedGemm: the group ends are read back, then one product per group with rows.
  const OperandLayout a = operand_layout(node.inputs[0].view, state.bindings);
  const OperandLayout b = operand_layout(node.inputs[1].view, state.bindings);
  const OperandLayout offs = operand_layout(node.inputs[2].view, state.bindings);
  const int64_t groups = offs.shape[0];
  const int64_t rows = a.shape[0], n = b.shape[2];
  const size_t element = ir::dtype_size(node.dtype);
  const CUdeviceptr out = state.ptr[step.slots[3]];
  check_cuda(driver().MemsetD8Async(out, 0, static_cast<size_t>(rows * n) * element, stream), "zeroing grouped rows");
  // The group ends in one read: the span from the first to the last (strided) element.
  std::vector<int64_t> span(groups == 0 ? 0 : static_cast<size_t>((groups - 1) * offs.strides[0] + 1));
  const CUdeviceptr first = state.ptr[step.slots[2]] + static_cast<CUdeviceptr>(offs.offset) * 8;
  if (!span.empty())
    check_cuda(driver().MemcpyDtoHAsync(span.data(), first, span.size() * 8, stream), "reading MoE group sizes");
  check_cuda(driver().StreamSynchronize(stream), "cuStreamSynchronize");
  int64_t begin = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = std::clamp<int64_t>(span[static_cast<size_t>(g * offs.strides[0])], 0, rows);
    if (end > begin) {
      const OperandLayout ga{{end - begin, a.shape[1]}, a.strides, a.offset + begin * a.strides[0]};
      const OperandLayout gb{{b.shape[1], b.shape[2]}, {b.strides[1], b.strides[2]}, b.offset + g * b.strides[0]};
      const CUdeviceptr pa = readable_operand(state.ptr[step.slots[0]], ga, element, 0, state, stream);
      const CUdeviceptr pb = readable_operand(state.ptr[step.slots[1]], gb, element, 0, state, stream);
      device_->blas->matmul(node.dtype, plan_gemm(readable_layout(ga), readable_layout(gb)), pa, pb,
                            out + static_cast<CUdeviceptr>(begin * n) * element, stream);
    }
    begin = end;
  }
}

void CudaExecutable::check_kernel_errors() const {
  const auto* info = static_cast<const int64_t*>(device_->info_host->get());
  for (size_t s = 0; s < program_.steps.size(); ++s) {
    const int64_t* report = info + 3 * s;
    if (report[0] != 0)
      raise_kernel_status(program_.plan.steps[program_.steps[s].plan_step].what, report[0], report[1], report[2]);
  }
}

void CudaExecutable::run(const std::vector<BufferRef>& inputs, const std::vector<BufferRef>& caller_outputs,
                         const LateOutputAllocator& allocate_late) const {
  const ir::Graph& graph = program_.plan.graph;
  std::vector<std::vector<int64_t>> sizes;
  for (const BufferRef& b : inputs) sizes.push_back(b.sizes);
  RunState state;
  state.bindings = ir::bind_symbols(graph, sizes);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < inputs.size() && !device_; ++i)
    if (inputs[i].data) open_device(inputs[i].data, "input " + std::to_string(i));
  USER_CHECK(device_ != nullptr) << "a CUDA model with no weights and only empty inputs: nothing says which GPU";
  device_->device.make_current();
  const std::shared_ptr<const CallPlan> plan = plan_for(state.bindings);
  state.plan = plan.get();
  check_outputs(graph, caller_outputs, plan->output_shapes);
  std::vector<BufferRef> outputs = caller_outputs;
  const CUstream stream = static_cast<CUstream>(call_stream());

  // Caller buffers: weights and large dense inputs by address, the rest staged below.
  state.ptr.assign(program_.slots.size(), 0);
  std::vector<const BufferRef*> caller(program_.slots.size(), nullptr);
  std::vector<bool> updated_in_place(program_.slots.size(), false);
  for (const InPlaceScatter& scatter : program_.in_place) updated_in_place[scatter.data_slot] = true;
  std::vector<int> to_stage;
  for (size_t s = 0; s < program_.slots.size(); ++s) {
    const Slot& slot = program_.slots[s];
    const ir::Node& node = graph.node(slot.node);
    if (slot.kind == Slot::Kind::Input) {
      check_buffer("input", node.name, inputs[slot.input_index], node.dtype);
      caller[s] = &inputs[slot.input_index];
      const bool small = span_bytes(*caller[s]) <= kStagedInputBytes && !updated_in_place[s];
      if (!is_dense(*caller[s]) || small) to_stage.push_back(static_cast<int>(s));
    } else if (slot.kind == Slot::Kind::Weight) {
      const BufferRef& w = weights_.at(node.name);
      check_weight_shape(node, w, ir::evaluate_shape(node.shape, state.bindings));
      USER_CHECK(is_dense(w)) << "weight '" << node.name << "' is not contiguous; the CUDA runtime binds weights by "
                              << "address: call .contiguous() on it before compiling";
      caller[s] = &w;
    }
    if (!caller[s]) continue;
    // Weights were checked when bound; an input says its device itself (no driver call per run).
    if (slot.kind == Slot::Kind::Input && caller[s]->data)
      USER_CHECK(caller[s]->device_index == device_->device.ordinal())
          << "input '" << node.name << "' is "
          << (caller[s]->device_index < 0 ? std::string("in host memory")
                                           : "on cuda:" + std::to_string(caller[s]->device_index))
          << " but this compiled model runs on cuda:" << device_->device.ordinal() << "; move every tensor to one device";
    state.ptr[s] = device_pointer(caller[s]->data);
  }
  // In-place updates where the caller passed the updated tensor as its own output.
  std::vector<bool> written_directly(outputs.size(), false);
  size_t in_place_count = 0;
  for (const InPlaceScatter& scatter : program_.in_place) {
    const BufferRef& destination = outputs[scatter.output];
    const BufferRef& updated = *caller[scatter.data_slot];
    if (destination.data == nullptr || destination.data != updated.data || !is_dense(updated)) continue;
    bool shared = false;
    for (size_t s = 0; s < caller.size() && !shared; ++s)
      shared = caller[s] && static_cast<int>(s) != scatter.data_slot && overlaps(*caller[s], destination);
    for (size_t j = 0; j < outputs.size() && !shared; ++j)
      shared = static_cast<int>(j) != scatter.output && overlaps(outputs[j], destination);
    if (shared) continue;
    state.ptr[scatter.out_slot] = device_pointer(destination.data);
    written_directly[scatter.output] = true;
    ++in_place_count;
  }
  state.memory = in_place_count == program_.in_place.size() ? &plan->memory_in_place : &plan->memory;
  if (device_->arena.bytes() < state.memory->total_bytes) {
    device_->drop_graphs();  // they hold addresses in the old arena
    device_->arena = DeviceBuffer();
    device_->arena = DeviceBuffer(state.memory->total_bytes);
  }
  const CUdeviceptr arena = device_->arena.get();
  for (size_t s = 0; s < program_.slots.size(); ++s)
    if (state.ptr[s] == 0 && state.memory->offsets[s] >= 0 && program_.slots[s].kind == Slot::Kind::Arena)
      state.ptr[s] = arena + static_cast<CUdeviceptr>(state.memory->offsets[s]);

  const auto copy_to_dense = [&](CUdeviceptr source, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& strides, size_t element, CUdeviceptr destination) {
    copy_strided(source, shape, strides, element, destination, stream);
    state.bytes_copied += element_count(shape) * static_cast<int64_t>(element);
  };
  for (int s : to_stage) {
    const BufferRef& b = *caller[s];
    const CUdeviceptr staging = arena + static_cast<CUdeviceptr>(state.memory->offsets[plan->staged[s]]);
    copy_to_dense(device_pointer(b.data), b.sizes, b.strides, ir::dtype_size(b.dtype), staging);
    state.ptr[s] = staging;
  }

  check_cuda(driver().MemsetD8Async(device_->info.get(), 0, device_->info.bytes(), stream), "zeroing error reports");
  const auto bind_symbols_after = [&](int step) {
    bool synced = false;
    for (const SymbolRead& read : program_.symbol_reads) {
      if (read.after_step != step) continue;
      if (!synced) check_cuda(driver().StreamSynchronize(stream), "cuStreamSynchronize");
      synced = true;
      int64_t value = 0;
      const CUdeviceptr at = state.ptr[read.slot] + static_cast<CUdeviceptr>(read.offset.evaluate(state.bindings)) * 8;
      check_cuda(driver().MemcpyDtoH(&value, at, 8), "reading a data-dependent size");
      ir::bind_data_symbol(graph, graph.data_symbols()[read.symbol], value, state.bindings);
    }
  };
  bind_symbols_after(-1);
  size_t segment = 0;
  for (size_t s = 0; s < program_.steps.size();) {
    const ProgramStep& step = program_.steps[s];
    for (int slot : step.slots) {
      if (program_.slots[slot].kind != Slot::Kind::Late || state.ptr[slot] != 0) continue;
      state.late_buffers.emplace_back(static_cast<size_t>(program_.slots[slot].bytes.evaluate(state.bindings)));
      state.ptr[slot] = state.late_buffers.back().get();
    }
    if (segment < program_.segments.size() && program_.segments[segment].begin == s) {
      run_segment(segment, state, stream);
      s = program_.segments[segment++].end;
      continue;
    }
    run_host_step(s, state, stream);
    bind_symbols_after(static_cast<int>(s));
    ++s;
  }

  // Outputs: copied from the arena (or a caller buffer returned as is) through their views.
  std::vector<OperandLayout> late_layouts(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (plan->output_shapes[k]) continue;
    late_layouts[k] = operand_layout(program_.outputs[k].ref.view, state.bindings);
    outputs[k] = allocate_late(k, late_layouts[k].shape);
  }
  std::vector<DeviceBuffer> snapshots;
  std::vector<CUdeviceptr> sources(outputs.size(), 0);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const ir::NodeId node = program_.outputs[k].ref.node;
    const int slot = program_.slot_of_node[node];
    sources[k] = state.ptr[slot];
    const Slot::Kind kind = program_.slots[slot].kind;
    if (kind == Slot::Kind::Arena || kind == Slot::Kind::Late) continue;
    // A caller buffer returned as is may be overwritten by another output: snapshot it first.
    const int64_t bytes = byte_count(ir::evaluate_shape(graph.node(node).shape, state.bindings), graph.node(node).dtype);
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (written_directly[j] ||
          !overlaps(reinterpret_cast<const void*>(sources[k]), bytes, outputs[j].data, span_bytes(outputs[j])))
        continue;
      snapshots.emplace_back(static_cast<size_t>(bytes));
      check_cuda(driver().MemcpyDtoDAsync(snapshots.back().get(), sources[k], static_cast<size_t>(bytes), stream),
                 "snapshot of a returned input");
      sources[k] = snapshots.back().get();
      break;
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (written_directly[k]) continue;
    const OperandLayout& l = plan->output_shapes[k] ? plan->output_layouts[k] : late_layouts[k];
    const size_t element = ir::dtype_size(outputs[k].dtype);
    copy_to_dense(sources[k] + static_cast<CUdeviceptr>(l.offset) * element, l.shape, l.strides, element,
                  device_pointer(outputs[k].data));
  }
  check_cuda(driver().MemcpyDtoHAsync(device_->info_host->get(), device_->info.get(), device_->info.bytes(), stream),
             "reading error reports");
  check_cuda(driver().StreamSynchronize(stream), "cuStreamSynchronize");
  last_stats_ = RunStats{state.bytes_copied};
  check_kernel_errors();
}

}  // namespace luminal::runtime::cuda
