// What the CPU runtime compiles a graph into: buffers ("slots"), and a list of steps that are
// either generated kernels or BLAS calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/cpu/jit.h"

namespace luminal::runtime::cpu {

// One node's contiguous buffer.
struct Slot {
  // Late: an intermediate whose size mentions a data symbol, allocated per run once the symbol
  // is bound (outside the arena, whose layout is planned from the inputs' shapes alone).
  // Int4Pairs: the values of the Weight `node` packed two a byte (int4_pairs.h), a copy the
  // executable makes when the weight is bound; null where they are not all int4 values.
  enum class Kind { Input, Weight, Arena, Late, Int4Pairs } kind = Kind::Arena;
  ir::NodeId node = -1;
  int input_index = -1;  // Input: position in the call's inputs
  ir::Expr bytes;        // Arena, Late: size
  int first_step = 0;    // Arena: live from the step writing it ...
  int last_step = 0;     // ... to the last step reading it (graph outputs: the end)
};

// The same kernel under another tile (codegen::tile_candidates), for the schedule search.
struct KernelVariant {
  int64_t tile = 0;
  std::string kernel_name;
  KernelFn fn = nullptr;
};

struct Step {
  enum class Kind { Kernel, Gemm, GroupedGemm, AtenCall, Collective, CollectiveWait } kind = Kind::Kernel;
  std::string what;  // for error messages: the kernel label and the aten op it came from
  // Kernel
  std::string kernel_name;
  KernelFn fn = nullptr;
  std::vector<int> slots;            // one per kernel param
  std::vector<std::string> symbols;  // the kernel's symbol arguments, in order
  ir::Expr items;                    // parallel work items
  ir::Expr work_per_item;            // elements per item, to decide whether threads pay
  int64_t min_chunk_items = 1;       // the fewest items per chunk (codegen::Kernel::min_chunk_items)
  std::vector<KernelVariant> variants;  // built only when the schedule search is on
  // A scatter kernel (params: out, data, index, src): the Scatter node it computes; else -1.
  ir::NodeId scatter = -1;
  // Gemm: out = a x b, f32/f64 (BLAS) or f16/bf16 (ATen). GroupedGemm: out = the grouped product of a and b with row
  // groups ending at offs (slots: a, b, offs, out).
  ir::DType dtype = ir::DType::F32;
  ir::View a, b, offs;
  // Gemm with a symbolic M that passes::is_gemv_for_few_rows takes (a dynamic-shape prefill): the
  // GEMV as a Kernel step on the same slots, run instead of BLAS (f32) or ATen (bf16, as bf16
  // pairs) when a call's M is at most few_rows_limit, where it beats them as it does for a
  // constant M. GroupedGemm that passes::is_expert_gemv takes: one expert's rows as that GEMV
  // (codegen::lower_expert_gemv; slots a, b, out), run for each expert with 2 (bf16: 1) to
  // few_rows_limit rows (a prefill's few tokens per expert, for which sgemm would pack the
  // expert's whole weight first, and oneDNN would wake torch's threads).
  std::shared_ptr<Step> few_rows;
  // The most rows few_rows takes: the bound its kernel was emitted for
  // (codegen::symbolic_gemv_rows).
  int64_t few_rows_limit = 0;
  // GroupedGemm: each group's product runs through ATen's matmul, as f16/bf16 ones do where ATen
  // multiplies that dtype natively (faster than widening the routed experts to f32 for BLAS).
  bool groups_through_aten = false;
  // AtenCall: the node run through the ATen fallback; slots are its inputs' then its own.
  ir::NodeId aten_call = -1;
  // Collective: the node whose collective the step issues; slots are its input's then its own.
  // CollectiveWait: waits for the collective step `waits_for` (same node, same slots, so that
  // the input stays allocated until then), placed before the first step reading its result.
  ir::NodeId collective = -1;
  int waits_for = -1;
  // Its sizes mention a data symbol: what the call plan holds for other steps (symbol values,
  // work items, BLAS layouts) is computed when the step runs.
  bool late = false;
};

// Data symbol `symbol` (an index into graph.data_symbols()), which the run binds after step
// `after_step`, reading the i64 at element `offset` of slot `slot`.
struct SymbolRead {
  size_t symbol = 0;
  int after_step = -1;
  int slot = -1;
  ir::Expr offset;
};

// Where graph output k comes from: a node read through a view; `direct` when the node's
// producer may write the caller's output buffer itself (identity view, arena node, read by no
// other output).
struct OutputSpec {
  ir::TensorRef ref;
  bool direct = false;
};

struct Program {
  ir::Graph graph;
  std::vector<Slot> slots;
  std::vector<int> slot_of_node;  // -1: no buffer (inlined constant)
  std::vector<Step> steps;
  std::vector<OutputSpec> outputs;
  std::shared_ptr<KernelLibrary> library;
  std::vector<std::string> symbols;  // every symbol of the graph, sorted: the plan cache key
  std::vector<SymbolRead> symbol_reads;
  // Stats
  size_t kernel_count = 0;   // generated kernel launches per run
  size_t unique_kernels = 0;  // distinct generated functions
  size_t fused_nodes = 0;     // IR nodes computed inside generated kernels
  size_t aten_calls = 0;      // steps run through the ATen fallback
  size_t collectives = 0;     // collectives issued per run
  size_t attention_kernels = 0;  // attention pattern kernel launches per run
  JitStats jit;
};

}  // namespace luminal::runtime::cpu
