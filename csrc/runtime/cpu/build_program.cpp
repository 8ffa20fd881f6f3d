#include "runtime/cpu/build_program.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "codegen/cpp/emit.h"
#include "codegen/lower.h"
#include "common/error.h"
#include "passes/legalize_matmul.h"
#include "passes/linear_bias.h"
#include "passes/output_scale.h"
#include "passes/pipeline.h"
#include "runtime/aten_fallback.h"
#include "runtime/collectives.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/int4_pairs.h"
#include "runtime/cpu/jit.h"
#include "runtime/cpu/slot_table.h"

namespace luminal::runtime::cpu {

namespace {

using ir::Expr;
using ir::NodeId;
using passes::GroupKind;

// Whether a lowered Matmul can compute a bias Add or a scale's Mul in its store: a float GEMV of a
// per-channel or float weight, in rows or strips (not the column form).
bool takes_store_epilogue(const codegen::Kernel& kernel) {
  return kernel.kind == codegen::KernelKind::Gemv && !kernel.gemv.columns && kernel.gemv.group == 0 &&
         ir::is_floating(kernel.params[2].dtype);
}

bool alone_in_pointwise_group(const passes::Partition& partition, NodeId id) {
  const int g = partition.group_of[id];
  return g >= 0 && partition.groups[g].kind == GroupKind::Pointwise && partition.groups[g].nodes.size() == 1;
}

// The node that alone reads `product`, alone in its pointwise group, where there is one: what a
// GEMV's store can compute instead (its Add of a bias, its Mul by a scale).
std::optional<NodeId> sole_pointwise_reader(const passes::Partition& partition, NodeId product) {
  const std::vector<NodeId>& users = partition.users[product];
  if (users.size() != 1 || partition.read_by_runtime[product] || !alone_in_pointwise_group(partition, users[0]))
    return std::nullopt;
  return users[0];
}

// A Linear's bias add that the GEMV computing `product` can take over (codegen::add_gemv_bias):
// the product's sole pointwise reader, adding a bias vector (passes::linear_bias). BERT's
// 32-token bf16 forward ran 37 such Adds as kernels of their own.
struct BiasAdd {
  NodeId add;
  ir::TensorRef bias;
};

std::optional<BiasAdd> bias_add_of(const ir::Graph& graph, const passes::Partition& partition, NodeId product) {
  const std::optional<NodeId> add = sole_pointwise_reader(partition, product);
  if (!add) return std::nullopt;
  const std::optional<ir::TensorRef> bias = passes::linear_bias(graph, graph.node(*add), product, /*through_reshape=*/true);
  if (!bias) return std::nullopt;
  return BiasAdd{*add, *bias};
}

// A per-channel scale that the GEMV computing `product` can apply (codegen::add_gemv_output_scale):
// the product's only reader, a Mul by a scale vector (passes::output_scale) in a pointwise group of
// its own or with the one Add after it, whose Cast to the product's dtype, if any, is alone in its
// group; and the bias that Add adds, if any (a quantized Linear with a bias). torchao's
// int8 Linears ran that Cast and that Mul as two kernels after every GEMV: 226 of the 521 steps
// of a 1B Llama's int8 decode.
struct ScaleMul {
  NodeId mul;
  passes::OutputScale scale;
  std::optional<BiasAdd> bias;
};

std::optional<ScaleMul> scale_mul_of(const ir::Graph& graph, const passes::Partition& partition, NodeId product) {
  const std::vector<NodeId>& users = partition.users[product];
  if (users.size() != 1 || partition.read_by_runtime[product]) return std::nullopt;
  const NodeId mul = users[0];
  const int g = partition.group_of[mul];
  if (g < 0 || partition.groups[g].kind != GroupKind::Pointwise) return std::nullopt;
  const std::optional<passes::OutputScale> scale =
      passes::output_scale(graph, graph.node(mul), product, partition.users, partition.read_by_runtime);
  if (!scale || (scale->cast >= 0 && !alone_in_pointwise_group(partition, scale->cast))) return std::nullopt;
  const std::vector<NodeId>& nodes = partition.groups[g].nodes;
  if (nodes.size() == 1) return ScaleMul{mul, *scale, bias_add_of(graph, partition, mul)};
  // The Mul and the bias Add after it, fused into one pointwise kernel.
  const std::vector<NodeId>& mul_users = partition.users[mul];
  if (nodes.size() != 2 || mul_users.size() != 1 || partition.read_by_runtime[mul] ||
      partition.group_of[mul_users[0]] != g)
    return std::nullopt;
  const std::optional<ir::TensorRef> bias =
      passes::linear_bias(graph, graph.node(mul_users[0]), mul, /*through_reshape=*/true);
  if (!bias) return std::nullopt;
  return ScaleMul{mul, *scale, BiasAdd{mul_users[0], *bias}};
}

// Whether an attention kernel's probabilities may be rounded to bf16 (AttentionSpec::
// bf16_probabilities): q, k and v are bf16 and the output `out` is read only by one Cast to bf16,
// a bf16 SDPA as the translator writes it. Its result is then rounded to bf16 anyway, and eager
// rounds the probabilities too; an f32 result (f32 attention of widened operands, whose reader
// wants f32) keeps them in f32.
bool bf16_output_attention(const ir::Graph& graph, const passes::Partition& partition, NodeId out,
                           const codegen::Kernel& kernel) {
  for (int p = 0; p < 3; ++p)
    if (kernel.params[p].dtype != ir::DType::BF16) return false;
  const std::vector<NodeId>& users = partition.users[out];
  if (users.size() != 1 || partition.read_by_runtime[out]) return false;
  const ir::Node& reader = graph.node(users[0]);
  return reader.op == ir::Op::Cast && reader.dtype == ir::DType::BF16;
}

// The most rows a call of a symbolic-M GEMV step (a dynamic-shape prompt's Linear, an expert's
// rows) of depth `depth` runs through its few-rows kernel: the runtime's limit for its form (on
// AMX tiles, or for a deep f32 one, below the kernel's capacity, codegen::symbolic_gemv_rows),
// ATen or BLAS past it.
int64_t few_rows_limit(const passes::PassContext& cx, bool bf16_pairs, const ir::Expr& depth) {
  return bf16_pairs ? cx.gemv_rows.bf16_pairs : cx.gemv_rows.f32_rows(depth.is_constant() ? depth.constant_value() : 0);
}

// A Matmul that generated code serves better than BLAS: integer types (BLAS has none), and
// M = 1 with b's K dim contiguous (a decode GEMV through a Linear weight: streaming the weight
// once at copy bandwidth beats sgemv, research/cpu-baselines.md). GEMVs whose operands both
// read K with unit stride get the pattern kernel (passes::is_gemv), and so do f16/bf16 ones
// whose weight reads N with unit stride (passes::is_column_gemv: BLAS would need the weight
// widened to f32 first; a prompt's few rows as bf16 pairs, where oneDNN's GEMM would run on
// torch's OpenMP threads between our pool's kernels); the rest a row kernel.
bool matmul_as_loop(const ir::Graph& graph, NodeId id, const passes::PassContext& cx) {
  const ir::Node& node = graph.node(id);
  if (!ir::is_floating(node.dtype) || passes::is_any_gemv(graph, node, cx.gemv_rows)) return true;
  const size_t rank = node.shape.size();
  const ir::View& b = node.inputs[1].view;
  return is_one(node.shape[rank - 2]) && (is_one(b.strides()[rank - 2]) || is_one(b.shape()[rank - 2]));
}

// A run of `n` indices per work item, at most `cap`: split evenly over the threads in whole
// blocks of `block` indices, or all of n (up to the cap) when the `items` besides it already keep
// every thread busy. Each thread then streams long runs of memory.
int64_t run_per_item(const ir::Expr& n, const ir::Expr& items, int threads, int64_t cap, int64_t block = 16) {
  if (!n.is_constant()) return cap;
  const int64_t split = items.is_constant() && items.constant_value() >= threads ? 1 : threads;
  const int64_t per_thread = (n.constant_value() + split - 1) / split;
  return std::clamp<int64_t>((per_thread + block - 1) / block * block, block, cap);
}

// A column GEMV's columns per work item (codegen::Kernel::column_run): its N over its batch. A
// prompt's form (all of its rows in each item) takes whole blocks of codegen::kColumnRowsBlock
// columns, up to codegen::kColumnRowsRun.
int64_t column_run(const codegen::Kernel& kernel, int threads) {
  if (kernel.gemv.rows_in_item)
    return run_per_item(kernel.domain.back(), ir::Expr(int64_t{1}), threads, codegen::kColumnRowsRun,
                        codegen::kColumnRowsBlock);
  const ir::Expr batch = ir::numel(ir::Shape(kernel.domain.begin(), kernel.domain.end() - 1));
  return run_per_item(kernel.domain.back(), batch, threads, codegen::kGemvColumns);
}

// A column row kernel's lanes per work item (Kernel::lane_run): its lane dim over the dims
// other than the lane and reduce ones.
int64_t lane_run(const codegen::Kernel& kernel, int threads) {
  ir::Expr others(int64_t{1});
  for (int d = 0; d < static_cast<int>(kernel.domain.size()); ++d)
    if (d != kernel.lane_axis && d != kernel.reduce_axis) others = others * kernel.domain[d];
  return run_per_item(kernel.domain[kernel.lane_axis], others, threads, codegen::kRowLanes);
}

std::string origin_of(const ir::Graph& graph, const std::vector<NodeId>& nodes) {
  for (NodeId id : nodes)
    if (!graph.node(id).origin.empty()) return graph.node(id).origin;
  return "";
}

// The symbols a step's call-plan entries are computed from.
std::vector<std::string> step_symbols(const ir::Graph& graph, const Step& step) {
  std::vector<std::string> names = step.symbols;
  step.items.collect_symbols(names);
  step.work_per_item.collect_symbols(names);
  for (const ir::View* v : {&step.a, &step.b, &step.offs}) v->collect_symbols(names);
  if (step.scatter >= 0) ir::collect_symbols(graph.node(step.scatter), names);
  return names;
}

// `steps` with a CollectiveWait before the first step that reads each collective's result (at
// the end for a result only the caller reads), so that the steps between run while it is in
// flight.
std::vector<Step> with_collective_waits(std::vector<Step> steps) {
  std::vector<Step> out;
  std::map<int, int> in_flight;  // result slot -> index in `out` of the collective writing it
  auto wait_for = [&](std::map<int, int>::iterator it) {
    const Step& started = out[it->second];
    Step wait;
    wait.kind = Step::Kind::CollectiveWait;
    wait.collective = started.collective;
    wait.waits_for = it->second;
    wait.slots = started.slots;
    wait.what = "wait for " + started.what;
    in_flight.erase(it);
    out.push_back(std::move(wait));
  };
  for (Step& step : steps) {
    for (int slot : step.slots) {
      auto it = in_flight.find(slot);
      if (it != in_flight.end()) wait_for(it);
    }
    if (step.kind == Step::Kind::Collective) in_flight[step.slots.back()] = static_cast<int>(out.size());
    out.push_back(std::move(step));
  }
  while (!in_flight.empty()) {
    // In the order they were issued, as torch's program waits.
    auto first = std::min_element(in_flight.begin(), in_flight.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
    wait_for(first);
  }
  return out;
}

}  // namespace

std::string FusionChoice::describe() const {
  return attention_kernels ? "attention kernels" : "GEMMs around softmax";
}

int program_threads(const CompileOptions& options) {
  return options.num_threads > 0 ? options.num_threads
                                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<ir::DType> native_half_matmuls() {
  std::vector<ir::DType> halves;
  for (ir::DType half : {ir::DType::BF16, ir::DType::F16})
    if (aten_has_native_half_matmul(half)) halves.push_back(half);
  return halves;
}

passes::GemvRows cpu_gemv_rows(CpuIsa isa, const std::vector<ir::DType>& native_half_matmuls) {
  passes::GemvRows rows;
  // A few half-precision rows run as the GEMV, unless ATen multiplies a half dtype natively
  // (oneDNN with bf16/f16 dot products streams the weight as well and keeps its own blocking).
  rows.half = native_half_matmuls.empty() ? codegen::kHalfGemvRows : 1;
  // f32 prompts of up to kF32GemvRows rows, through f32 or quantized weights; on a Zen 5 up to
  // kZen5F32GemvRows, or kZen5F32GemvRowsBesideAvx2Blas where BLAS's sgemm runs AVX2 kernels, of
  // kZen5F32StripValues values at most, and kZen5QuantizedF32GemvRows through quantized weights.
  rows.f32 = codegen::kF32GemvRows;
  rows.quantized_f32 = codegen::kF32GemvRows;
  if (kernels_have_zen5_avx512(isa)) {
    rows.f32 = blas_sgemm_is_avx2() ? codegen::kZen5F32GemvRowsBesideAvx2Blas : codegen::kZen5F32GemvRows;
    rows.f32_values = codegen::kZen5F32StripValues;
    rows.quantized_f32 = codegen::kZen5QuantizedF32GemvRows;
  }
  rows.f32_columns = codegen::kF32ColumnRows;  // the same through a [K, N] weight
  // A prompt's bf16 Linears and experts as bf16 pairs in the GEMV kernel (lm_gemv_bf16_strips)
  // where its kernels have AVX512-BF16 and no AMX, up to kBf16PairGemvRows rows. Experts too: a
  // prefill that went back and forth between our pool and oneDNN's threads paid for each one's
  // spinning on the other's cores (the 32-token Qwen3-MoE forward took 13.4 ms against 10.4 with
  // its Linears in oneDNN too; docs/lessons.md, 2026-11-29 (late morning)).
  // Where they have AMX-BF16 too, the pairs go on AMX tiles, a [N, K] weight read in place as the
  // tiles' A operand, up to kAmxBf16PairGemvRows rows: the memory-bound Llama in bf16 (hidden
  // 1024, 8 layers) spent 19-31 ms of a 32-token forward in oneDNN's GEMMs on two Emerald Rapids
  // cores, and 64-68 in the vdpbf16ps strips (docs/lessons.md, 2026-11-30). A [K, N] weight stays
  // with oneDNN there.
  if (kernels_multiply_bf16_pairs(isa))
    rows.bf16_pairs = kernels_have_amx_bf16(isa) ? codegen::kAmxBf16PairGemvRows : codegen::kBf16PairGemvRows;
  if (kernels_have_bf16_pairs_without_amx(isa)) rows.bf16_pair_columns = codegen::kBf16PairColumnRows;
  // bf16 prompts through quantized weights: past kF32GemvRows only where the chunks are bf16 pairs
  // (kQuantizedBf16PairGemvRows); f32 strips and AMX tiles were measured up to it.
  rows.quantized_bf16 =
      kernels_have_bf16_pairs_without_amx(isa) ? codegen::kQuantizedBf16PairGemvRows : codegen::kF32GemvRows;
  return rows;
}

Program build_program(const ir::Graph& input_graph, const CompileOptions& options, const FusionChoice& fusion) {
  passes::PassContext cx;
  cx.debug_dir = options.debug_dir;
  cx.attention_kernels = fusion.attention_kernels;
  cx.attention_half_operands = true;
  cx.quantized_gemv_weights = true;
  cx.group_quantized_gemvs = true;
  cx.native_half_matmuls = native_half_matmuls();
  const CpuIsa isa = parse_cpu_isa(options.cpu_isa);
  cx.gemv_rows = cpu_gemv_rows(isa, cx.native_half_matmuls);
  const bool amx_tiles = kernels_have_amx_bf16(isa);
  // A bf16 prompt's strips GEMV on AMX tiles, where the kernels have them: of a bf16 weight read
  // in place, or of an int8 or group-quantized one dequantized a chunk at a time.
  const auto use_amx_tiles = [&](codegen::Kernel& kernel) {
    if (!amx_tiles || !kernel.gemv_strips() || kernel.params[0].dtype != ir::DType::BF16) return;
    const ir::DType weight = kernel.params[1].dtype;
    if ((weight == ir::DType::BF16 && kernel.gemv.bf16_pairs) || weight == ir::DType::I8) {
      kernel.gemv.amx_tiles = true;
      kernel.label += " on AMX tiles";
    }
  };
  // A decode row's int4 Linear reads its weight's values packed two a byte (int4_pairs.h) where
  // the option asks for it and the kernels look its groups of 32 up (AVX512-BW, and AVX512-BF16
  // for bf16 activations): a Weight (bound, so copied once) whose rows are whole 64-value blocks.
  // The pairs are the kernel's last param; null at run time where a value is not an int4 one.
  const bool pack_int4 = options.pack_int4_weights && kernels_multiply_bf16_pairs(isa);
  const auto reads_int4_pairs = [&](const ir::Graph& graph, const passes::GroupQuantizedGemv& pattern,
                                    const codegen::Kernel& kernel) {
    const ir::Expr& depth = kernel.gemv.depth;
    return pack_int4 && pattern.group == 32 && kernel.params[0].dtype == ir::DType::BF16 &&
           is_one(kernel.domain[0]) && !kernel.gemv_strips() && !kernel.gemv.has_bias && depth.is_constant() &&
           depth.constant_value() % kInt4PairBlock == 0 && graph.node(pattern.weight).op == ir::Op::Weight;
  };
  passes::KernelPlan plan = passes::plan_kernels(input_graph, cx);
  Program program;
  program.graph = std::move(plan.graph);
  const ir::Graph& graph = program.graph;
  const passes::Partition& partition = plan.partition;

  // Slots: sources first, then one per stored node as steps are created.
  SlotTable table(graph, program.slots, program.slot_of_node);
  const auto arena_slot = [&](NodeId id) { return table.arena_slot(id); };

  // Lower every group, in dependency order.
  std::vector<std::string> names, sources;
  std::set<std::string> named;
  // The kernel's function name, its source queued for the JIT unless an identical one is.
  auto add_source = [&](const codegen::Kernel& kernel) {
    std::string source = codegen::cpp::emit_kernel(kernel, "LUMINAL_KERNEL");
    const std::string name = "lm_" + content_hash(source).substr(0, 24);
    if (named.insert(name).second) {
      source.replace(source.find("LUMINAL_KERNEL"), 14, name);
      names.push_back(name);
      sources.push_back(std::move(source));
    }
    return name;
  };
  // A kernel step's function and launch, from the kernel it runs; its slots are the caller's.
  auto make_kernel_step = [&](Step& step, const codegen::Kernel& kernel, const std::string& origin) {
    step.kind = Step::Kind::Kernel;
    step.kernel_name = add_source(kernel);
    step.symbols = kernel.symbols();
    step.items = kernel.parallel_extent();
    step.work_per_item = kernel.inner_extent();
    step.min_chunk_items = kernel.min_chunk_items();
    step.what = kernel.label + " from " + origin;
  };
  // Groups a GEMV computes in its store: a bias Add (codegen::add_gemv_bias), a scale's Mul and
  // its Cast (codegen::add_gemv_output_scale), with a bias Add after them. The scales are found
  // first, as a Cast may come before its GEMV in the graph's order.
  std::set<int> epilogue_groups;
  std::map<NodeId, ScaleMul> scale_muls;  // by the product they scale
  for (const passes::Group& group : partition.groups) {
    if (!group.alive || group.kind != GroupKind::Matmul) continue;
    const ir::Node& node = graph.node(group.nodes[0]);
    if (!passes::is_any_gemv(graph, node, cx.gemv_rows) ||
        !takes_store_epilogue(codegen::lower_gemv(graph, group.nodes[0]).kernel))
      continue;
    if (const std::optional<ScaleMul> scale = scale_mul_of(graph, partition, group.nodes[0])) {
      scale_muls.emplace(group.nodes[0], *scale);
      epilogue_groups.insert(partition.group_of[scale->mul]);
      if (scale->scale.cast >= 0) epilogue_groups.insert(partition.group_of[scale->scale.cast]);
      if (scale->bias) epilogue_groups.insert(partition.group_of[scale->bias->add]);
    }
  }
  for (int g : passes::topological_groups(partition)) {
    const passes::Group& group = partition.groups[g];
    if (group.kind == GroupKind::Source || epilogue_groups.count(g)) continue;
    Step step;
    if (group.kind == GroupKind::AtenCall) {
      const ir::Node& node = graph.node(group.nodes[0]);
      step.kind = Step::Kind::AtenCall;
      step.aten_call = group.nodes[0];
      for (const ir::TensorRef& input : node.inputs) {
        step.slots.push_back(program.slot_of_node[input.node]);
        INTERNAL_CHECK(step.slots.back() >= 0) << "the ATen call reads %" << input.node << " which has no buffer";
      }
      step.slots.push_back(arena_slot(group.nodes[0]));
      step.what = node.aten_call->full_name() + " (ATen fallback) from " + node.origin;
      program.steps.push_back(std::move(step));
      ++program.aten_calls;
      continue;
    }
    if (group.kind == GroupKind::Collective) {
      const ir::Node& node = graph.node(group.nodes[0]);
      step.kind = Step::Kind::Collective;
      step.collective = group.nodes[0];
      step.slots = {program.slot_of_node[node.inputs[0].node], arena_slot(group.nodes[0])};
      INTERNAL_CHECK(step.slots[0] >= 0) << "the collective reads %" << node.inputs[0].node << " which has no buffer";
      step.what = node.collective->describe() + " from " + node.origin;
      check_collective_group(*node.collective, node.origin);
      program.steps.push_back(std::move(step));
      ++program.collectives;
      continue;
    }
    if (group.kind == GroupKind::Matmul && !matmul_as_loop(graph, group.nodes[0], cx)) {
      const ir::Node& node = graph.node(group.nodes[0]);
      step.kind = Step::Kind::Gemm;
      step.dtype = node.dtype;
      step.a = node.inputs[0].view;
      step.b = node.inputs[1].view;
      step.slots = {program.slot_of_node[node.inputs[0].node], program.slot_of_node[node.inputs[1].node],
                    arena_slot(group.nodes[0])};
      step.what = ir::is_half(node.dtype) ? std::string("matmul (ATen, ") + ir::dtype_name(node.dtype) + ") from " + node.origin
                                          : "matmul (BLAS) from " + node.origin;
      if (passes::is_gemv_for_few_rows(graph, node, cx.gemv_rows.bf16_pairs)) {
        codegen::LoweredKernel gemv = codegen::lower_gemv(graph, group.nodes[0]);
        INTERNAL_CHECK(gemv.param_nodes == std::vector<NodeId>({node.inputs[0].node, node.inputs[1].node,
                                                                 group.nodes[0]}))
            << "the GEMV's params are not the Gemm's operands";
        const bool bf16_pairs = node.dtype == ir::DType::BF16;
        gemv.kernel.gemv.bf16_pairs = bf16_pairs;
        use_amx_tiles(gemv.kernel);
        auto kernel = std::make_shared<Step>();
        make_kernel_step(*kernel, gemv.kernel, node.origin);
        kernel->slots = step.slots;
        step.few_rows_limit = few_rows_limit(cx, bf16_pairs, node.inputs[0].view.shape().back());
        step.what = std::string("matmul (") + (bf16_pairs ? "ATen" : "BLAS") + ", or the GEMV " + kernel->kernel_name +
                    " for up to " + std::to_string(step.few_rows_limit) + " rows) from " + node.origin;
        step.few_rows = std::move(kernel);
      }
      program.steps.push_back(std::move(step));
      continue;
    }
    if (group.kind == GroupKind::GroupedMatmul) {
      const ir::Node& node = graph.node(group.nodes[0]);
      step.kind = Step::Kind::GroupedGemm;
      step.dtype = node.dtype;
      step.a = node.inputs[0].view;
      step.b = node.inputs[1].view;
      step.offs = node.inputs[2].view;
      for (const ir::TensorRef& input : node.inputs) step.slots.push_back(program.slot_of_node[input.node]);
      step.slots.push_back(arena_slot(group.nodes[0]));
      step.groups_through_aten = std::find(cx.native_half_matmuls.begin(), cx.native_half_matmuls.end(), node.dtype) !=
                                 cx.native_half_matmuls.end();
      step.what = step.groups_through_aten
                      ? std::string("grouped matmul (ATen per expert, ") + ir::dtype_name(node.dtype) + ") from " + node.origin
                      : "grouped matmul (BLAS per expert) from " + node.origin;
      if (passes::is_expert_gemv(graph, node, cx.gemv_rows.bf16_pairs)) {
        codegen::LoweredKernel gemv = codegen::lower_expert_gemv(graph, group.nodes[0]);
        use_amx_tiles(gemv.kernel);
        auto kernel = std::make_shared<Step>();
        make_kernel_step(*kernel, gemv.kernel, node.origin);
        kernel->slots = {step.slots[0], step.slots[1], step.slots[3]};
        const bool bf16_pairs = node.dtype == ir::DType::BF16;
        step.few_rows_limit = few_rows_limit(cx, bf16_pairs, node.inputs[0].view.shape().back());
        step.what = "grouped matmul (the GEMV " + kernel->kernel_name + " for experts of " + (bf16_pairs ? "1" : "2") +
                    " to " + std::to_string(step.few_rows_limit) + " rows, " + (step.groups_through_aten ? "ATen" : "BLAS") +
                    " for the others) from " + node.origin;
        step.few_rows = std::move(kernel);
      }
      program.steps.push_back(std::move(step));
      continue;
    }
    codegen::LoweredKernel lowered;
    if (group.kind == GroupKind::Matmul) {
      const ir::Node& matmul = graph.node(group.nodes[0]);
      lowered = passes::is_any_gemv(graph, matmul, cx.gemv_rows)
                    ? codegen::lower_gemv(graph, group.nodes[0])
                    : codegen::lower_matmul_loop(graph, group.nodes[0]);
      // lower_gemv marks a column GEMV's form itself.
      if (!lowered.kernel.gemv.columns)
        lowered.kernel.gemv.bf16_pairs = passes::is_bf16_pair_gemv(graph, matmul, cx.gemv_rows.bf16_pairs);
      use_amx_tiles(lowered.kernel);
      if (lowered.kernel.gemv.columns) lowered.kernel.tile = column_run(lowered.kernel, program_threads(options));
      if (const auto scale = scale_muls.find(group.nodes[0]); scale != scale_muls.end()) {
        codegen::add_gemv_output_scale(graph, lowered, scale->second.mul, scale->second.scale.scale);
        if (const std::optional<BiasAdd>& bias = scale->second.bias)
          codegen::add_gemv_bias(graph, lowered, bias->add, bias->bias);
      } else if (takes_store_epilogue(lowered.kernel)) {
        if (const std::optional<BiasAdd> bias = bias_add_of(graph, partition, group.nodes[0])) {
          codegen::add_gemv_bias(graph, lowered, bias->add, bias->bias);
          epilogue_groups.insert(partition.group_of[bias->add]);
        }
      }
    } else if (group.kind == GroupKind::Attention) {
      const std::optional<passes::AttentionPattern> pattern =
          passes::match_attention(graph, group.nodes.back(), partition.users, partition.read_by_runtime,
                                  cx.attention_half_operands);
      INTERNAL_CHECK(pattern.has_value()) << "attention group %" << group.nodes.back() << " no longer matches";
      lowered = codegen::lower_attention(graph, *pattern);
      // A bf16 prompt's attention on bf16 tiles wherever the kernels multiply bf16 pairs: computed
      // in f32 from the widened operands, llama-membound-bf16's 1,024-token causal prompt (16 heads
      // of 64) took 13.3 ms a layer on two Zen 4 cores, on vdpbf16ps 8.0 (eager's flash attention
      // about 21; docs/lessons.md, 2026-12-06).
      lowered.kernel.attention.bf16_probabilities =
          kernels_multiply_bf16_pairs(isa) && bf16_output_attention(graph, partition, pattern->out, lowered.kernel);
      if (lowered.kernel.attention.bf16_probabilities)
        lowered.kernel.label += amx_tiles ? " on AMX tiles" : " on bf16 pairs";
      program.fused_nodes += group.nodes.size();
      ++program.attention_kernels;
    } else if (group.kind == GroupKind::QuantizedGemv) {
      const std::optional<passes::GroupQuantizedGemv> pattern =
          passes::match_group_quantized_gemv(graph, group.nodes.back(), partition.users, partition.read_by_runtime,
                                             cx.gemv_rows);
      INTERNAL_CHECK(pattern.has_value()) << "quantized gemv group %" << group.nodes.back() << " no longer matches";
      lowered = codegen::lower_group_quantized_gemv(graph, *pattern);
      use_amx_tiles(lowered.kernel);
      if (reads_int4_pairs(graph, *pattern, lowered.kernel)) {
        lowered.kernel.gemv.int4_pairs = true;
        lowered.kernel.label += ", int4 values read two a byte";
        lowered.kernel.params.push_back(codegen::Param{ir::DType::U8, false});
        lowered.param_nodes.push_back(pattern->weight);
      }
      program.fused_nodes += group.nodes.size();
    } else if (group.kind == GroupKind::Scatter) {
      lowered = codegen::lower_scatter(graph, group.nodes[0]);
      step.scatter = group.nodes[0];
    } else if (group.kind == GroupKind::Scan) {
      lowered = codegen::lower_scan(graph, group.nodes[0]);
    } else {
      lowered = codegen::lower_loop_group(graph, group.nodes, group.domain, group.reduce_axis,
                                          passes::stored_nodes(graph, partition, g));
      lowered.kernel.lane_axis = codegen::cpp::column_lane_axis(lowered.kernel);
      if (lowered.kernel.lane_axis >= 0) lowered.kernel.tile = lane_run(lowered.kernel, program_threads(options));
      program.fused_nodes += group.nodes.size();
    }
    make_kernel_step(step, lowered.kernel, origin_of(graph, group.nodes));
    if (options.search_iterations > 0) {
      for (int64_t tile : codegen::tile_candidates(lowered.kernel)) {
        codegen::Kernel variant = lowered.kernel;
        variant.tile = tile;
        step.variants.push_back(KernelVariant{tile, add_source(variant), nullptr});
      }
    }
    for (size_t i = 0; i < lowered.param_nodes.size(); ++i) {
      const NodeId node = lowered.param_nodes[i];
      step.slots.push_back(lowered.kernel.params[i].is_output ? arena_slot(node) : program.slot_of_node[node]);
      INTERNAL_CHECK(step.slots.back() >= 0) << "kernel reads %" << node << " which has no buffer";
    }
    if (lowered.kernel.gemv.int4_pairs) step.slots.back() = table.int4_pairs_slot(lowered.param_nodes.back());
    program.steps.push_back(std::move(step));
    ++program.kernel_count;
  }
  std::set<std::string> launched;  // not the search's variants
  for (const Step& step : program.steps)
    if (step.kind == Step::Kind::Kernel) launched.insert(step.kernel_name);
  program.unique_kernels = launched.size();

  if (program.collectives > 0) program.steps = with_collective_waits(std::move(program.steps));

  // Liveness of arena slots: from the writing step to the last reading step.
  table.assign_lifetimes(program.steps);
  const int end = static_cast<int>(program.steps.size());
  std::map<NodeId, int> output_reads;
  for (const ir::TensorRef& r : graph.outputs()) ++output_reads[r.node];
  for (const ir::TensorRef& r : graph.outputs()) {
    const int slot = program.slot_of_node[r.node] >= 0 ? program.slot_of_node[r.node] : arena_slot(r.node);
    OutputSpec spec{r, false};
    const Slot& info = program.slots[slot];
    if (info.kind == Slot::Kind::Arena) {
      program.slots[slot].last_step = end;
      // Any row-major view of all of the node's elements is its buffer's bytes in order: HF's
      // logits are the LM head's [tokens, vocab] product viewed as [1, tokens, vocab], and
      // copying them cost a 1,024-token prefill a 131 MB pass plus its page faults (2026-11-28).
      const ir::View& view = r.view;
      spec.direct = output_reads[r.node] == 1 && view.is_contiguous() &&
                    ir::numel(view.shape()) == ir::numel(graph.node(r.node).shape);
    }
    program.outputs.push_back(spec);
  }
  // Data symbols: the steps whose sizes mention one are planned when they run.
  program.symbol_reads = table.plan_data_symbols();
  for (SymbolRead& read : program.symbol_reads) {
    if (read.after_step < 0 || program.steps[read.after_step].kind != Step::Kind::Collective) continue;
    for (size_t s = read.after_step + 1; s < program.steps.size(); ++s)
      if (program.steps[s].waits_for == read.after_step) read.after_step = static_cast<int>(s);
  }
  if (!program.symbol_reads.empty()) {
    const std::set<std::string> data_symbols = data_symbol_names(graph);
    for (Step& step : program.steps) step.late = mentions_any(step_symbols(graph, step), data_symbols);
  }

  // Build the kernels.
  JitOptions jit;
  jit.cache_dir = options.cache_dir;
  jit.debug_dir = options.debug_dir;
  jit.isa = parse_cpu_isa(options.cpu_isa);
  program.library = build_kernels(names, sources, jit, program.jit);
  for (Step& step : program.steps) {
    if (step.few_rows) step.few_rows->fn = program.library->function(step.few_rows->kernel_name);
    if (step.kind != Step::Kind::Kernel) continue;
    step.fn = program.library->function(step.kernel_name);
    for (KernelVariant& variant : step.variants) variant.fn = program.library->function(variant.kernel_name);
  }

  program.symbols = graph_symbols(graph);

  if (!options.debug_dir.empty()) {
    std::ofstream stats(std::filesystem::path(options.debug_dir) / "cpu_stats.txt");
    stats << "steps " << program.steps.size() << "\ngenerated kernel launches " << program.kernel_count
          << "\nunique kernels " << program.unique_kernels << "\nnodes in generated kernels " << program.fused_nodes
          << "\ntranslation units " << program.jit.translation_units << "\ncompiled now " << program.jit.compiled
          << "\njit ms " << program.jit.compile_ms << "\n";
    for (const Step& step : program.steps) {
      const char* kind = step.kind == Step::Kind::Gemm          ? "gemm   "
                         : step.kind == Step::Kind::GroupedGemm ? "grouped"
                         : step.kind == Step::Kind::AtenCall    ? "aten   "
                         : step.kind == Step::Kind::Collective  ? "collective start"
                         : step.kind == Step::Kind::CollectiveWait ? "collective wait "
                                                                : "kernel ";
      stats << kind << step.kernel_name << "  " << step.what << "\n";
    }
  }
  return program;
}

}  // namespace luminal::runtime::cpu
