// The kernel IR: one fused loop nest, target independent. Emitters (codegen/cpp, later cuda)
// turn it into source text; lower.cpp builds it from a group of IR nodes.
//
// A kernel iterates over `domain` (symbolic dims). Without a reduce axis it is a pointwise
// kernel: every store happens once per domain index. With one (a "row" kernel), each index of
// the other dims is a row: every Reduction is one pass over the reduce axis accumulating in a
// register, values that do not vary along the axis ("per-row" values) are computed once per
// row, and stores of varying values happen in one final pass. softmax, layer_norm, rms_norm
// and a GEMV (domain [.., N, K], reduce K) are all row kernels.
//
// Values form a DAG in `values` (arguments precede their users). Each value has the dtype of
// the IR node it stands for and is rounded to it after every op (ops.def semantics), so a fused
// chain computes what the reference interpreter computes node by node.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/expr.h"
#include "ir/graph.h"
#include "ir/ops.h"

namespace luminal::codegen {

// The element offset offset + sum_d i_d * strides[d] of a buffer, over the kernel's domain.
struct Index {
  ir::Expr offset;
  std::vector<ir::Expr> strides;  // one per domain dim; 0 where the buffer does not vary
};

// A kernel parameter: a buffer pointer. Inputs are read through Index expressions, outputs
// written through them.
struct Param {
  ir::DType dtype = ir::DType::F32;
  bool is_output = false;
};

enum class ValueKind {
  Load,         // param[index]
  Literal,      // `literal` in `dtype`
  IotaAt,       // ((linear index) / divisor) % extent: Iota read through any view
  Compute,      // op(args) with ops.def semantics
  Accumulated,  // the result of reductions[args[0]] for the current row
  GatherLoad,   // param[index + args[0] * gather_stride]; args[0] must lie in [0, extent)
};

struct Value {
  ValueKind kind = ValueKind::Literal;
  ir::DType dtype = ir::DType::F32;
  int param = -1;  // Load, GatherLoad
  Index index;     // Load, IotaAt, GatherLoad
  ir::Scalar literal;
  ir::Expr divisor;  // IotaAt
  ir::Expr extent;   // IotaAt, GatherLoad (the gathered axis' size)
  ir::Expr gather_stride;
  ir::Op op = ir::Op::Add;  // Compute
  std::vector<int> args;
};

struct Reduction {
  ir::Op op = ir::Op::SumReduce;
  int input = -1;                   // a value
  ir::DType dtype = ir::DType::F32;  // the result's dtype
};

struct Store {
  int param = -1;
  int value = -1;
  Index index;
};

enum class KernelKind {
  Loop,     // pointwise or row kernel, as above
  Scatter,  // out = data; out[index along axis] = src (or +=): see ScatterSpec
  Gemv,     // a decode-time Linear: see GemvSpec
  Attention,  // scaled dot-product attention: see AttentionSpec
  Scan,       // an inclusive prefix sum along one axis: see ScanSpec
};

// out[b.., m, n] = sum_k a[b.., m, k] * w[b.., n, k] over the domain [batch.., M, N], k < `depth`:
// a Matmul with M = 1 (or a few f32/f16/bf16 rows, or an int8 x int8 product of any M: a work item's
// block of weight rows stays in cache while every row of a goes through it) whose operands both
// read K with unit stride. A pattern kernel rather
// than a row kernel because streaming the weight at copy bandwidth needs several rows'
// accumulators live at once (one per row is bound by add latency, research/cpu-baselines.md).
// Accumulates in f32 and rounds once on store, as torch's half-precision matmul does, so
// bf16/f16 weights are read as they are, never widened into a copy. Params: a (0), w (1), out (2).
// An int8 w is widened in registers (per-channel int8, passes/quantized_weights.h); with
// `group` > 0 it is dequantized per group of that many weights along K
// (passes/group_quantized_gemv.h): w[n, k] = (q[n, k] - zero[n, k / group]) * scale[n, k / group],
// the scales param 3 and the zero points (int8) param 4 when has_zero.
// `columns`: the f16/bf16 form whose weight is [K, N] with N contiguous (x @ W, GPT-2's Conv1D;
// passes::is_column_gemv): out[b.., n] = sum_k a[k * a_depth_stride] * w[k * w_depth_stride],
// a work item a run of `tile` columns (kGemvColumns when 0) of one batch index (lm_gemv_columns).
// With rows_in_item, the domain is [M, N] and a work item a run of columns (kColumnRowsRun when
// 0) for every row of `a` (`a` reads K with unit stride): as bf16 pairs (bf16_pairs,
// lm_gemm_bf16_columns) or in f32 (lm_gemm_f32_columns).
struct GemvSpec {
  ir::Expr depth;  // K
  Index a;         // over the domain; stride 0 along N
  Index w;         // over the domain; the stride along N is the weight's row stride
  Index out;       // over the domain
  int64_t group = 0;
  Index scale, zero;                             // over the domain: the row's first group
  ir::Expr scale_group_stride, zero_group_stride;  // to the next group along K
  bool has_zero = false;
  bool columns = false;
  bool rows_in_item = false;  // columns only: a prompt's few rows, all in each work item
  ir::Expr a_depth_stride, w_depth_stride;  // columns only
  // A bf16 prompt times a bf16 weight, packed into strips of bf16 pairs (lm_gemv_bf16_strips,
  // vdpbf16ps): set by the cpu runtime where its kernels have AVX512-BF16
  // (passes::is_bf16_pair_gemv). With `columns`, more than one row's pairs broadcast against a
  // [K, N] weight's (lm_gemm_bf16_columns): set by lower_gemv, as only the cpu runtime's
  // passes::is_column_gemv with its bf16-pair rows lets such a product reach it.
  bool bf16_pairs = false;
  // A bf16 prompt's strips GEMV (gemv_strips()) of a bf16 weight (with bf16_pairs) or an int8 or
  // group-quantized one, multiplied on AMX tiles kAmxGemvRows weight rows a block
  // (lm_gemv_bf16_amx; lm_amx_chunks for a dequantized weight), where the cpu runtime's kernels
  // have AMX-BF16.
  bool amx_tiles = false;
  // The store's epilogue (the cpu runtime sets it for its float row and strips GEMVs), operands
  // read over the domain with stride 0 but along N, params after the output in this order:
  // - A per-channel scale the output is multiplied by after its rounding, then rounded again
  //   (passes::output_scale), converted to the output's dtype as a Cast would. The output param
  //   is then the Mul's node.
  bool has_output_scale = false;
  Index output_scale;
  // - A Linear's bias (passes::linear_bias), added before the output's one rounding; or, after a
  //   scale, to the scaled and rounded value, then rounded again (an Add of the Mul). The output
  //   param is then the Add's node.
  bool has_bias = false;
  Index bias;
  // A decode row's group-quantized GEMV of groups of 32 (bf16 activations) whose last param is
  // its int8 weight's values packed two a byte (runtime/cpu/int4_pairs.h), or null at run time,
  // where the kernel reads the int8 bytes as without it: set by the cpu runtime with
  // CompileOptions::pack_int4_weights.
  bool int4_pairs = false;
};

// torch.scatter along `axis`: params are out (0), data (1), index (2), src (3).
struct ScatterSpec {
  int axis = 0;
  bool accumulate = false;
  ir::Shape out_shape;   // also data's shape
  Index data;            // over out_shape
  ir::Shape index_shape;  // also the shape src is read in
  Index index;           // over index_shape
  Index src;             // over index_shape
};

// out[.., i, ..] = the running sum of in[.., j, ..] over j <= i along `axis` (CumSum, ops.def),
// over the domain (the node's shape). A work item is one row, an index of the other dims: the
// scan walks the axis in order with an accumulator of `accumulate` (ir::scan_accumulator), so
// every element is read and written once and each kernel adds in the reference's order.
// Params: in (0), out (1).
struct ScanSpec {
  int axis = 0;
  Index in;   // over the domain
  Index out;  // over the domain, contiguous
  ir::DType accumulate = ir::DType::F64;
  // f32 and bf16 scans whose rows are contiguous in both operands run kScanBlockRows rows at a
  // time (the prelude's lm_cumsum_rows8: one vector add per element of eight rows, in each
  // row's scalar order), not a dependent add per element.
  bool row_blocks = false;
};
constexpr int64_t kScanBlockRows = 8;

// A matrix operand of attention: element (r, c) of batch b.. is at
// batch.offset + sum_d b_d * batch.strides[d] + r * row_stride + c * col_stride.
struct MatrixOperand {
  Index batch;  // strides over the domain's batch dims only
  ir::Expr row_stride, col_stride;
};

// out[b.., l, :] = softmax_s(scale * q[l]·k[s] + bias[l, s]) v[s], f32, over the domain
// [batch.., L, Ev]; a row whose scores are all -inf gives zeros (torch's _safe_softmax). A
// pattern kernel so that the [L, S] scores stay in a per-thread block in cache, never in
// memory, and so that key columns whose bias is -inf for every row of a query block (the
// causal triangle, a static cache's unused tail, a sliding window) are never read. A work item
// is one index of the batch dims (a head): its keys and values are packed once for all its
// query rows. Params: q (0), k (1), v (2), bias (3, when has_bias) or a causal mask's shift
// (3, when has_shift_param), out.
// Query rows per block of an item: their scores against the keys (36 x S floats) stay in L2.
// A multiple of the kernel's 6-row tile.
inline constexpr int64_t kAttentionRows = 36;
// Output rows a Gemv computes in one pass over the input vector.
inline constexpr int64_t kGemvRows = 4;
// The most rows of `a` (a prompt's tokens) an f16/bf16 Matmul may have to run as the cpu
// runtime's GEMV, a row at a time while a block of weight rows stays in cache: up to here that
// beats widening the weight to f32 for sgemm (at 8 x 2048 x 8192, 4.8 ms against 13.5 ms).
inline constexpr int64_t kHalfGemvRows = 8;
// The most rows of `a` an f32 Matmul may have to run as the cpu runtime's GEMV, its rows packed
// into strips that each block of weight rows multiplies in registers (lm_gemv_strips). sgemm packs
// the whole weight first, another pass over it: with weights cold in memory, 2 threads, the strips
// ran 1.3-2.8x sgemm's rate from 8 to 32 rows (8 x 2048 x 8184: 3.9 ms against 10.9; 32 x 1024 x
// 2808: 1.35 against 1.77) and 1.16x at 64.
inline constexpr int64_t kF32GemvRows = 64;
// The same on a Zen 5 (runtime/cpu/jit.h kernels_have_zen5_avx512), whose strips run two 512-bit
// FMAs a cycle: on two Zen 5 cores, builds alternated, f32 Linears of Llama's shapes took
// 0.73-0.88x the time of OpenBLAS's AVX-512 sgemm ("Cooperlake") at 96 and 128 rows, 0.91-0.97x at
// 256, 0.91-1.22x at 384 (docs/lessons.md, 2026-12-07 (afternoon))...
inline constexpr int64_t kZen5F32GemvRows = 256;
// ...and where OpenBLAS runs its AVX2 kernels there (OPENBLAS_CORETYPE=Haswell, as set on the
// machine the benches run on), 0.52-0.58x at 512 rows and 0.55-0.71x at 1,024, with the strips
// in panels once they outgrow L2 (lm_gemv_strips)...
inline constexpr int64_t kZen5F32GemvRowsBesideAvx2Blas = 1024;
// ...while the strips (rows x K f32 values) fit in half of its 32 MiB L3: 512 x 8,192 took 0.81x
// BLAS's time, 1,024 x 8,192 (32 MiB) 1.06x.
inline constexpr int64_t kZen5F32StripValues = int64_t{1} << 22;
// The most rows of f32 activations a Matmul through an int8 or group-quantized weight runs as the
// strips GEMV on a Zen 5 (each block of weight rows widened once into L1 for all the rows;
// kF32GemvRows elsewhere). The other way widens the whole weight to f32 on every call, a copy
// written to memory and read back, then multiplies it as an f32 weight. Linears of 2048 -> 8192
// and 8192 -> 2048 on two Zen 5 cores, builds alternated: int8 and int4 (groups of 32) 7.2-7.9 ms
// against 9.3-10.0 at 96 rows, 18.6-20.2 against 20.7-23.5 at 256; at 512 rows the strips took
// 0.97-1.15x the widened copy's time (docs/lessons.md, 2026-12-07 (evening)).
inline constexpr int64_t kZen5QuantizedF32GemvRows = 256;
// The most rows of bf16 activations a Matmul through an int8 or group-quantized weight runs as
// the strips GEMV on a CPU that multiplies bf16 pairs without AMX (each chunk of a block of weight
// rows dequantized into L1 once for all the rows; kF32GemvRows elsewhere). The other way widens
// the whole weight to bf16 on every call, a copy written to memory and read back, before ATen's
// GEMM. A 2048 -> 8192 Linear on two Zen 5 cores, builds alternated: int8 4.7-4.9 ms against
// 5.9-6.7 at 128 rows, int4 4.7-4.9 against 7.3-8.0; at 256 rows 9.8-10.5 and 9.5-10.3 against
// 10.3-10.7 and 11.6-11.9; level at 512, behind at 1,024 (43-45 against 37-39).
inline constexpr int64_t kQuantizedBf16PairGemvRows = 256;
// The most rows of `a` a bf16 x bf16 Matmul runs as bf16 pairs in the GEMV kernel
// (lm_gemv_bf16_strips, vdpbf16ps) on a CPU with AVX512-BF16 but no AMX, instead of ATen's
// oneDNN GEMM. On two Zen 4 cores, each path in its own process, the memory-bound Llama in bf16
// (hidden 1024, 8 layers) took 18.3 / 27.0 / 46.1 ms for 16 / 32 / 64-token forwards against
// 26.7 / 38.1 / 62.2 through oneDNN (docs/lessons.md, 2026-11-29 (late morning)). On two Zen 5
// cores, builds alternated (2026-12-07): bf16 Linears of Llama's shapes took 0.64-0.89x oneDNN's
// time at 80 rows, 0.70-1.01x at 96 and 112, 0.73-0.96x at 128; the same model's 72 / 96 /
// 128-token forwards 25 / 30 / 38 ms against 29 / 35-44 / 42-52; the 1B shape's 128-token one
// 378 ms against 388. At 160-256 rows the strips took 0.81-1.16x oneDNN's time, no steady gain.
inline constexpr int64_t kBf16PairGemvRows = 128;
// The same on AMX tiles (GemvSpec::amx_tiles), where oneDNN's GEMM has AMX too: measured up to 64.
inline constexpr int64_t kAmxBf16PairGemvRows = 64;
// The same through a [K, N] weight (GPT-2's Conv1D, passes::is_column_gemv), measured up to 64.
inline constexpr int64_t kBf16PairColumnRows = 64;
// Weight rows per block of a bf16-pair GEMV on AMX tiles (GemvSpec::amx_tiles): two A tiles of
// 16 rows, each multiplied by two strips of `a` into four sums tiles (the eight tiles AMX has).
inline constexpr int64_t kAmxGemvRows = 32;
// The most rows of `a` a strip GEMV lowered for a symbolic M takes (a dynamic-shape prompt's
// Linear, an expert's rows): its block of sums is sized for that many, and the cpu runtime calls
// it only for calls within them, or within kAmxBf16PairGemvRows on AMX tiles (Step::few_rows_limit).
inline constexpr int64_t symbolic_gemv_rows(bool bf16_pairs) {
  return bf16_pairs ? kBf16PairGemvRows : kZen5F32GemvRowsBesideAvx2Blas;
}
static_assert(kAmxBf16PairGemvRows <= kBf16PairGemvRows && kF32GemvRows <= kZen5F32GemvRows &&
                  kZen5F32GemvRows <= kZen5F32GemvRowsBesideAvx2Blas,
              "a symbolic GEMV's block holds every limit's rows");
// Weight rows per block of such a GEMV by default (lm_tile_strips' six rows of accumulators).
inline constexpr int64_t kGemvStripRows = 6;
// The same for a prompt of at most 16 rows (one strip): six rows of AVX-512 accumulators are six
// chains of dependent FMAs, too few to hide their latency, and twelve fit in its 32 registers
// (AVX2 runs them as two blocks of six; both sum each output in the same order). A 16-row int8
// Linear of 1024 x 32000, weight in L3, 2 threads: 6.7-8.3 ms against 7.5-10.4 with six rows.
inline constexpr int64_t kGemvOneStripRows = 12;
// The most blocks of f32 weight rows a panel of such a GEMV takes (lm_gemv_strips), where
// its strips outgrow L2: each slice of them is read from L3 once per panel, not once per block.
// Eight blocks' sums of 1,024 rows are 192 KiB, beside the strips' 256 KiB slice in a 1 MiB L2
// (not tuned further).
inline constexpr int64_t kGemvStripPanelBlocks = 8;
// Weight rows a thread-pool chunk of such a GEMV takes at least (Kernel::min_chunk_items). Each
// call of the kernel packs all of `a` again (M x K values at ~0.1 ns each on a Zen 4 core) before
// multiplying its rows by it (2 M K flops a row at ~234 GFLOP/s a core), so a chunk of r rows
// spends about 12 / r of its time packing: the pool's four chunks a thread gave a 32 x 768 x 768
// bf16 product (96 rows a chunk) 0.104-0.112 ms against 0.092-0.101 with one chunk a thread, and
// Llama's grouped K/V projections (256 rows) 32 rows a chunk.
inline constexpr int64_t kGemvStripsChunkRows = 384;
// The same on AMX tiles (GemvSpec::amx_tiles): a chunk of 128 rows of a 32 x 1024 product reads
// 256 KiB of weight (~25 us on an Emerald Rapids core) against ~3 us of packing, and a 256-row
// projection (Llama's K and V at hidden 1024) then runs on two threads, not one.
inline constexpr int64_t kAmxGemvChunkRows = 128;
// Outputs a column Gemv accumulates per pass over the weight's rows, at most: their f32 sums
// (16 KiB) stay in L1 while each row's run of them streams through. Long runs are what stream
// at read bandwidth (a 1 KiB run per row reaches half of it), so the cpu runtime sets a
// kernel's run (its `tile`) to N over its threads, up to this.
inline constexpr int64_t kGemvColumns = 4096;
// The column Gemv of a prompt's rows (GemvSpec::rows_in_item: a few rows through a [K, N] bf16
// or f32 weight, lm_gemm_bf16_columns / lm_gemm_f32_columns) multiplies blocks of this many
// columns, each weight row's run of them one or two 64-byte loads...
inline constexpr int64_t kColumnRowsBlock = 32;
// ...and takes at most this many per work item, for all of its rows (at most kBf16PairColumnRows
// or kF32ColumnRows): their f32 sums (16 KiB) on the stack, the block's weight panel re-read
// from L2 per block of rows.
inline constexpr int64_t kColumnRowsRun = 64;
// The most rows of `a` an f32 Matmul through a [K, N] weight (x @ W, GPT-2's Conv1D) runs as the
// column Gemv with its rows in each item, the weight read in place, instead of sgemm, which
// packs the whole weight first (OpenBLAS's copy of it dominated such 32-row products).
inline constexpr int64_t kF32ColumnRows = 64;
// Output columns a column row kernel (Kernel::lane_axis) reduces per work item, at most: their
// accumulators (1 KiB of f32 per reduction) stay in L1 while each step along the reduce axis
// reads a contiguous run of them.
inline constexpr int64_t kRowLanes = 1024;
struct AttentionSpec {
  ir::Expr q_len, kv_len, head_dim, value_dim;  // L, S, E, Ev
  MatrixOperand q, k, v, bias;                  // [L, E], [S, E], [S, Ev], [L, S]
  bool has_bias = false;
  // Row l attends keys s <= l + causal_shift (+ the shift param's value) only
  // (passes::AttentionPattern::causal): the kernel computes the causal mask from the indices
  // instead of reading a bias. Its masked keys' probabilities are exactly 0 without their
  // scores being read, so a NaN or infinite key past a row's diagonal does not reach the row
  // (eager's flash attention fills those scores with -inf rather than adding it; the reference
  // adds it, NaN + -inf being NaN).
  bool causal = false;
  int64_t causal_shift = 0;
  bool has_shift_param = false;  // param 3: an integer tensor, its element at shift_offset
  ir::Expr shift_offset;
  double scale = 1.0;
  // The output is read only rounded to bf16 (a bf16 SDPA's output Cast) and q, k and v are bf16:
  // the probabilities may be rounded to bf16 before P V, as eager's bf16 flash attention rounds
  // them, which lets the cpu runtime multiply bf16 pairs, on AMX tiles or with vdpbf16ps
  // (lm_attention_head_bf16_tiles). Set by the cpu runtime (bf16_output_attention).
  bool bf16_probabilities = false;
};

struct Kernel {
  KernelKind kind = KernelKind::Loop;
  ir::Shape domain;
  int reduce_axis = -1;  // >= 0: a row kernel
  // >= 0: a row kernel whose rows are reduced side by side ("columns"), for a reduce axis that is
  // not the one its inputs are contiguous along (x.sum(0) of a row-major x, a bias's gradient):
  // a work item is a run of lane_run() indices of this dim, each step along the reduce axis
  // reads them contiguously into one accumulator per index, where a row at a time read one
  // element per cache line. The cpu runtime sets it (cpp::column_lane_axis); -1 otherwise.
  int lane_axis = -1;
  std::vector<Param> params;
  std::vector<Value> values;
  std::vector<Reduction> reductions;
  std::vector<Store> stores;
  ScatterSpec scatter;
  GemvSpec gemv;
  AttentionSpec attention;
  ScanSpec scan;
  std::string label;  // what it computes, for comments and debug dumps ("softmax row", ...)
  // The schedule's tile, 0 for the kind's default: a Gemv's rows per pass (kGemvRows, or
  // kGemvStripRows or kGemvOneStripRows for gemv_strips()) or a
  // column Gemv's columns per work item (kGemvColumns), an Attention's query rows per block
  // (kAttentionRows). The schedule search times the others tile_candidates offers.
  int64_t tile = 0;

  int add_value(Value v) {
    values.push_back(std::move(v));
    return static_cast<int>(values.size()) - 1;
  }
  // Symbols the kernel's shapes and indices use, sorted: the kernel reads them by position.
  std::vector<std::string> symbols() const;
  // The number of parallel work items: the product of the domain's dims other than the innermost
  // loop (the reduce axis for row kernels, the last dim otherwise). 1 for Scatter; every
  // output column for Gemv, with every row of `a` (a run of column_run() columns for a column
  // Gemv); every index of the batch dims for Attention; every row (the product of the dims other
  // than the scanned one) for Scan.
  ir::Expr parallel_extent() const;
  // Elements touched per work item, for deciding whether splitting across threads pays.
  ir::Expr inner_extent() const;
  // A column Gemv's columns per work item.
  int64_t column_run() const { return tile > 0 ? tile : gemv.rows_in_item ? kColumnRowsRun : kGemvColumns; }
  // A column row kernel's indices of lane_axis per work item.
  int64_t lane_run() const { return tile > 0 ? tile : kRowLanes; }
  // Whether this Gemv is an f32 one (its weight f32, int8 or group-quantized), or a rank-2 bf16
  // one with an int8 or group-quantized weight (or a bf16 one, GemvSpec::bf16_pairs), with
  // several rows of `a`, which it packs into strips (lm_gemv_strips; bf16: lm_gemv_bf16_strips,
  // bf16 pairs where the CPU has AVX512-BF16, else f32), kGemvStripRows or kGemvOneStripRows
  // weight rows per block (tile_candidates offers no others).
  bool gemv_strips() const;
  // The fewest work items a thread-pool chunk of this kernel takes: kGemvStripsChunkRows weight
  // rows for gemv_strips() (each call packs `a`), a scan's block of rows, else 1.
  int64_t min_chunk_items() const {
    if (kind == KernelKind::Scan) return scan.row_blocks ? kScanBlockRows : 1;
    return gemv.amx_tiles ? kAmxGemvChunkRows : gemv_strips() ? kGemvStripsChunkRows : 1;
  }
};

// Tiles worth timing besides the default (Kernel::tile), for the kinds that have one: they
// compute the same values in another order of work, and which is fastest depends on the shapes
// and the machine (a Gemv's rows per pass trade streams in flight for registers; an Attention
// block's rows trade key reuse for cache footprint).
std::vector<int64_t> tile_candidates(const Kernel& kernel);

}  // namespace luminal::codegen
