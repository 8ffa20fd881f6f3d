// What the CUDA runtime compiles a graph into: the kernel plan's steps with the buffers
// ("slots") each reads and writes, the slots' lifetimes for the device arena, and the segments
// of consecutive steps that run as one CUDA graph. Built without a device (tested on the CPU).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/pass_context.h"
#include "runtime/cpu/in_place_scatter.h"
#include "runtime/cpu/program.h"
#include "runtime/cuda/kernel_plan.h"

namespace luminal::runtime::cuda {

// Slot, OutputSpec and SymbolRead mean here what they mean for the CPU runtime.
using cpu::InPlaceScatter;
using cpu::OutputSpec;
using cpu::Slot;
using cpu::SymbolRead;

struct ProgramStep {
  // Kernel: a generated kernel (plan.steps[plan_step].cuda); Gemm: cuBLASLt; GroupedGemm: one
  // cuBLASLt product per expert (group sizes read back to the host); AtenCall: the ATen
  // fallback on the caller's stream; Collective: a collective through torch's process group
  // (NCCL for CUDA tensors), issued and waited for at once, ordered on the caller's stream.
  enum class Kind { Kernel, Gemm, GroupedGemm, AtenCall, Collective } kind = Kind::Kernel;
  size_t plan_step = 0;
  std::vector<int> slots;  // Kernel: one per param; Gemm: a, b, out (, bias); GroupedGemm: a, b,
                           // offs, out; AtenCall: its inputs', then its own
  ir::NodeId node = -1;     // Gemm, GroupedGemm, AtenCall, Collective: the node it computes
  // Gemm with cuBLASLt's bias epilogue: the Add node it computes (out = a x b + bias, bias a
  // vector over the last dim read through bias_view, slots[3]); -1 for a plain product.
  ir::NodeId bias_add = -1;
  ir::View bias_view;
  ir::NodeId scatter = -1;  // a scatter kernel (params: out, data, index, src): its Scatter node
  // Its sizes mention a data symbol: launch parameters are computed when it runs.
  bool late = false;
  // The host takes part mid-run (an ATen call, group sizes read back, a data symbol bound after
  // it): the step cannot be in a CUDA graph and ends the segment before it.
  bool host = false;
};

// Steps [begin, end) that run as one CUDA graph (no host step among them).
struct Segment {
  size_t begin = 0, end = 0;
};

struct CudaProgram {
  CudaKernelPlan plan;  // plan.graph is the optimised graph
  std::vector<Slot> slots;
  std::vector<int> slot_of_node;  // -1: no buffer (inlined constant)
  std::vector<ProgramStep> steps;
  std::vector<OutputSpec> outputs;
  std::vector<std::string> symbols;  // every symbol of the graph, sorted: the call plan key
  std::vector<SymbolRead> symbol_reads;
  std::vector<Segment> segments;  // the runs of non-host steps, in order
  std::vector<InPlaceScatter> in_place;
  size_t kernel_count = 0;        // generated kernel launches per run
  size_t unique_kernels = 0;
  size_t aten_calls = 0;
  size_t bias_epilogues = 0;  // bias adds folded into their GEMM
};

// Plans the graph's kernels (plan_cuda_kernels) and lays out their buffers. NVRTC is not run.
// A GEMM whose only reader is a kernel computing nothing but `+ bias` (a vector along the last
// dim: a Linear's bias before a reshape) computes the sum itself with cuBLASLt's bias epilogue,
// and that kernel is dropped.
CudaProgram build_cuda_program(const ir::Graph& graph, passes::PassContext& cx);

// The runs of consecutive non-host steps.
std::vector<Segment> graph_segments(const std::vector<ProgramStep>& steps);

}  // namespace luminal::runtime::cuda
