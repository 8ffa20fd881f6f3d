#include "runtime/cuda/kernel_plan.h"

#include "common/error.h"
#include "passes/attention.h"
#include "passes/group_quantized_gemv.h"
#include "passes/legalize_matmul.h"
#include "passes/pipeline.h"
#include "runtime/cpu/jit.h"

namespace luminal::runtime::cuda {

namespace {

using ir::NodeId;
using passes::GroupKind;

bool matmul_generated(const ir::Graph& graph, const ir::Node& node) {
  return passes::is_gemv(graph, node) || !ir::is_floating(node.dtype) || is_one(node.shape[node.shape.size() - 2]);
}

std::string origin_of(const ir::Graph& graph, const std::vector<NodeId>& nodes) {
  for (NodeId id : nodes)
    if (!graph.node(id).origin.empty()) return graph.node(id).origin;
  return "";
}

// `group_kind_name` as an identifier ("quantized gemv" -> "quantized_gemv").
std::string kernel_family(GroupKind kind) {
  std::string family = passes::group_kind_name(kind);
  for (char& c : family)
    if (c == ' ') c = '_';
  return family;
}

}  // namespace

CudaKernelPlan plan_cuda_kernels(const ir::Graph& input_graph, passes::PassContext& cx) {
  // cuBLASLt multiplies f16/bf16 natively (f32 accumulation, one rounding): no widening casts.
  cx.native_half_matmuls = {ir::DType::BF16, ir::DType::F16};
  // Scaled dot-product attention is one pattern kernel (codegen/cuda/emit.h, Attention): its
  // [L, S] scores never reach memory, and keys every row of a query block masks are never read.
  cx.attention_kernels = true;
  // Decode GEMVs read torchao's int8 weights themselves, and its group-quantized (int4) ones,
  // dequantizing them in registers (codegen/cuda/emit.cpp, gemv_body): no kernel writes a
  // dequantized copy of the weight on every call.
  cx.quantized_gemv_weights = true;
  cx.group_quantized_gemvs = true;
  passes::KernelPlan plan = passes::plan_kernels(input_graph, cx);
  CudaKernelPlan out;
  out.graph = std::move(plan.graph);
  const ir::Graph& graph = out.graph;
  for (int g : passes::topological_groups(plan.partition)) {
    const passes::Group& group = plan.partition.groups[g];
    if (group.kind == GroupKind::Source || group.kind == GroupKind::Inlined) continue;
    const std::string origin = origin_of(graph, group.nodes);
    CudaStep step;
    step.nodes = group.nodes;
    if (group.kind == GroupKind::Matmul && !matmul_generated(graph, graph.node(group.nodes[0]))) {
      step.kind = CudaStep::Kind::Library;
      step.what = "matmul (cuBLASLt) from " + origin;
    } else if (group.kind == GroupKind::Matmul) {
      const NodeId id = group.nodes[0];
      step.lowered =
          passes::is_gemv(graph, graph.node(id)) ? codegen::lower_gemv(graph, id) : codegen::lower_matmul_loop(graph, id);
    } else if (group.kind == GroupKind::Attention) {
      const std::optional<passes::AttentionPattern> pattern =
          passes::match_attention(graph, group.nodes.back(), plan.partition.users, plan.partition.read_by_runtime,
                                  cx.attention_half_operands);
      INTERNAL_CHECK(pattern.has_value()) << "attention group %" << group.nodes.back() << " no longer matches";
      step.lowered = codegen::lower_attention(graph, *pattern);
    } else if (group.kind == GroupKind::QuantizedGemv) {
      const std::optional<passes::GroupQuantizedGemv> pattern = passes::match_group_quantized_gemv(
          graph, group.nodes.back(), plan.partition.users, plan.partition.read_by_runtime, cx.gemv_rows);
      INTERNAL_CHECK(pattern.has_value()) << "quantized gemv group %" << group.nodes.back() << " no longer matches";
      step.lowered = codegen::lower_group_quantized_gemv(graph, *pattern);
    } else if (group.kind == GroupKind::Scatter) {
      step.lowered = codegen::lower_scatter(graph, group.nodes[0]);
    } else if (group.kind == GroupKind::Scan) {
      step.lowered = codegen::lower_scan(graph, group.nodes[0]);
    } else if (group.kind == GroupKind::Pointwise || group.kind == GroupKind::Row) {
      step.lowered = codegen::lower_loop_group(graph, group.nodes, group.domain, group.reduce_axis,
                                               passes::stored_nodes(graph, plan.partition, g));
    } else {
      // An ATen fallback op runs on the host through the dispatcher: no kernel of ours.
      step.kind = CudaStep::Kind::Library;
      step.what = std::string(passes::group_kind_name(group.kind)) + " from " + origin;
    }
    if (step.kind == CudaStep::Kind::Kernel) {
      const std::string placeholder = codegen::cuda::emit_kernel(step.lowered.kernel, "LUMINAL_KERNEL").source;
      // The group kind in the name tells a profiler's row (nsys, torch.profiler) what the kernel
      // is; the hash keeps equal kernels one compilation.
      const std::string name = "lm_" + kernel_family(group.kind) + "_" + cpu::content_hash(placeholder).substr(0, 24);
      step.cuda = codegen::cuda::emit_kernel(step.lowered.kernel, name);
      step.what = step.lowered.kernel.label + " from " + origin;
    }
    out.steps.push_back(std::move(step));
  }
  return out;
}

}  // namespace luminal::runtime::cuda
