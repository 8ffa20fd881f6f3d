#include "runtime/cuda/cuda_program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "passes/linear_bias.h"
#include "runtime/collectives.h"
#include "runtime/cpu/slot_table.h"

namespace luminal::runtime::cuda {

namespace {

using ir::Expr;
using ir::NodeId;

ProgramStep::Kind library_kind(const ir::Node& node, const std::string& what) {
  switch (node.op) {
    case ir::Op::Matmul: return ProgramStep::Kind::Gemm;
    case ir::Op::GroupedMatmul: return ProgramStep::Kind::GroupedGemm;
    case ir::Op::AtenCall: return ProgramStep::Kind::AtenCall;
    case ir::Op::Collective: return ProgramStep::Kind::Collective;
    default: INTERNAL_ERROR() << "the CUDA runtime has no library call for " << what;
  }
  return ProgramStep::Kind::AtenCall;
}

// Readers of each node: node inputs and graph outputs.
std::vector<int> reader_counts(const ir::Graph& graph) {
  std::vector<int> readers(graph.size(), 0);
  for (const ir::Node& node : graph.nodes())
    for (const ir::TensorRef& input : node.inputs) ++readers[input.node];
  for (const ir::TensorRef& r : graph.outputs()) ++readers[r.node];
  for (const ir::DataSymbol& symbol : graph.data_symbols()) ++readers[symbol.value.node];
  return readers;
}

}  // namespace

std::vector<Segment> graph_segments(const std::vector<ProgramStep>& steps) {
  std::vector<Segment> segments;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].host) continue;
    if (segments.empty() || segments.back().end != s) segments.push_back(Segment{s, s});
    segments.back().end = s + 1;
  }
  return segments;
}

CudaProgram build_cuda_program(const ir::Graph& input_graph, passes::PassContext& cx) {
  CudaProgram program;
  program.plan = plan_cuda_kernels(input_graph, cx);
  const ir::Graph& graph = program.plan.graph;

  cpu::SlotTable table(graph, program.slots, program.slot_of_node);
  const auto arena_slot = [&](NodeId id) { return table.arena_slot(id); };
  auto input_slot = [&](NodeId id) {
    const int slot = program.slot_of_node[id];
    INTERNAL_CHECK(slot >= 0) << "a CUDA step reads %" << id << " which has no buffer";
    return slot;
  };

  // Bias epilogues: a GEMM step followed, as its only reader, by a step computing just `+ bias`.
  const std::vector<int> readers = reader_counts(graph);
  std::map<size_t, std::pair<NodeId, ir::TensorRef>> epilogue;  // by GEMM plan step: add, bias
  std::set<size_t> folded;                                        // the add steps dropped
  const std::vector<CudaStep>& planned_steps = program.plan.steps;
  for (size_t p = 0; p < planned_steps.size(); ++p) {
    const CudaStep& gemm = planned_steps[p];
    if (gemm.kind != CudaStep::Kind::Library || graph.node(gemm.nodes.at(0)).op != ir::Op::Matmul) continue;
    const NodeId product = gemm.nodes[0];
    if (readers[product] != 1) continue;
    for (size_t q = p + 1; q < planned_steps.size(); ++q) {
      const CudaStep& add = planned_steps[q];
      if (add.kind != CudaStep::Kind::Kernel || add.nodes.size() != 1) continue;
      const ir::Node& node = graph.node(add.nodes[0]);
      if (std::none_of(node.inputs.begin(), node.inputs.end(), [&](const ir::TensorRef& r) { return r.node == product; }))
        continue;
      if (std::optional<ir::TensorRef> bias = passes::linear_bias(graph, node, product)) {
        epilogue[p] = {add.nodes[0], *bias};
        folded.insert(q);
      }
      break;  // the product's one reader
    }
  }

  std::set<std::string> launched;
  for (size_t p = 0; p < program.plan.steps.size(); ++p) {
    const CudaStep& planned = program.plan.steps[p];
    if (folded.count(p)) continue;
    ProgramStep step;
    step.plan_step = p;
    if (planned.kind == CudaStep::Kind::Kernel) {
      const codegen::LoweredKernel& lowered = planned.lowered;
      for (size_t i = 0; i < lowered.param_nodes.size(); ++i) {
        const NodeId node = lowered.param_nodes[i];
        step.slots.push_back(lowered.kernel.params[i].is_output ? arena_slot(node) : input_slot(node));
      }
      if (lowered.kernel.kind == codegen::KernelKind::Scatter) step.scatter = lowered.param_nodes[0];
      launched.insert(planned.cuda.name);
      ++program.kernel_count;
    } else {
      const NodeId id = planned.nodes.at(0);
      const ir::Node& node = graph.node(id);
      step.kind = library_kind(node, planned.what);
      step.node = id;
      for (const ir::TensorRef& input : node.inputs) step.slots.push_back(input_slot(input.node));
      if (auto it = epilogue.find(p); it != epilogue.end()) {
        step.bias_add = it->second.first;
        step.bias_view = it->second.second.view;
        step.slots.push_back(arena_slot(step.bias_add));
        step.slots.push_back(input_slot(it->second.second.node));
        ++program.bias_epilogues;
      } else {
        step.slots.push_back(arena_slot(id));
      }
      step.host = step.kind != ProgramStep::Kind::Gemm;
      if (step.kind == ProgramStep::Kind::AtenCall) ++program.aten_calls;
      if (step.kind == ProgramStep::Kind::Collective) check_collective_group(*node.collective, node.origin);
    }
    program.steps.push_back(std::move(step));
  }
  program.unique_kernels = launched.size();

  table.assign_lifetimes(program.steps);
  // Graph outputs are computed into the arena and copied out after the last step (the caller's
  // buffers change every call; a CUDA graph holds fixed addresses), except in-place updates.
  const int end = static_cast<int>(program.steps.size());
  for (const ir::TensorRef& r : graph.outputs()) {
    const int slot = program.slot_of_node[r.node] >= 0 ? program.slot_of_node[r.node] : arena_slot(r.node);
    if (program.slots[slot].kind == Slot::Kind::Arena) program.slots[slot].last_step = end;
    program.outputs.push_back(OutputSpec{r, false});
  }

  // Data symbols: what they size is allocated per run; the step writing a value ends its segment.
  program.symbol_reads = table.plan_data_symbols();
  if (!program.symbol_reads.empty()) {
    const std::set<std::string> data_symbols = cpu::data_symbol_names(graph);
    std::vector<std::string> names;
    for (ProgramStep& step : program.steps) {
      names.clear();
      for (int slot : step.slots) {
        const ir::Node& node = graph.node(program.slots[slot].node);
        for (const Expr& d : node.shape) d.collect_symbols(names);
      }
      for (ir::NodeId id : {step.node, step.scatter})
        if (id >= 0) ir::collect_symbols(graph.node(id), names);
      if (step.kind == ProgramStep::Kind::Kernel) {
        const codegen::cuda::CudaKernelSource& cuda = program.plan.steps[step.plan_step].cuda;
        names.insert(names.end(), cuda.symbols.begin(), cuda.symbols.end());
      }
      // A late step's launch parameters are known only once its symbols are: it runs outside graphs.
      step.late = cpu::mentions_any(names, data_symbols);
      step.host = step.host || step.late;
    }
    for (const SymbolRead& read : program.symbol_reads)
      if (read.after_step >= 0) program.steps[read.after_step].host = true;
  }
  program.segments = graph_segments(program.steps);
  program.in_place = cpu::find_in_place_scatters(graph, program);

  program.symbols = cpu::graph_symbols(graph);
  return program;
}

}  // namespace luminal::runtime::cuda
