// Mixture-of-experts ops: histc (tokens per expert) and grouped matmul (each token's rows times
// its expert's weight). transformers 5's grouped experts (Qwen3-MoE, Mixtral) sort the routed
// token-expert pairs by expert id, count them per expert with histc, turn the counts into
// offsets with cumsum, and multiply with grouped_mm: `aten::_grouped_mm` where torch has a kernel,
// else its own custom op `transformers::grouped_mm_fallback` (a loop of mm over the groups).
#include <cmath>

#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;

namespace {

Tensor scalar_constant(TranslationContext& cx, double value, DType dtype) {
  if (ir::is_integral(dtype)) return constant(cx, ir::Scalar::of_int(static_cast<int64_t>(value)), dtype);
  return constant(cx, ir::Scalar::of_float(value), dtype);
}

// Row r of a matrix grouped by `offs` belongs to the last group g whose range
// [offs[g-1], offs[g]) (offs[-1] = 0) holds it: the GroupedMatmul semantics of ir/ops.def, so
// that both lowerings agree even where offs does not ascend. Rows in no group (at or past
// offs[-1] when it ascends) get group 0, so that every weight read stays in bounds whatever offs
// holds, and `in_group` tells them apart (upstream luminal needed the same clamp: the all-ones
// offs of its profiler's dummy inputs pushed ids to G).
struct RowGroups {
  Tensor group;     // i64 [rows], in [0, G)
  Tensor in_group;  // bool [rows]
};

void check_offs(const Tensor& offs, const std::string& op) {
  USER_CHECK(offs.rank() == 1) << op << ": offs must be 1-d, got shape " << shape_to_string(offs.shape());
  USER_CHECK(ir::is_integral(offs.dtype) && !ir::is_bool(offs.dtype))
      << op << ": offs must be an integer tensor, got " << ir::dtype_name(offs.dtype);
}

RowGroups row_groups(TranslationContext& cx, const Expr& rows, const Tensor& offs_arg, const std::string& op) {
  check_offs(offs_arg, op);
  Tensor ends = cast(cx, offs_arg, DType::I64);
  const Expr groups = ends.shape()[0];
  USER_CHECK(!(groups.is_constant() && groups.constant_value() == 0)) << op << ": offs is empty (no groups)";
  const auto i64 = [&](int64_t v) { return constant(cx, ir::Scalar::of_int(v), DType::I64); };
  Tensor g = iota(cx, groups, DType::I64);                                              // [G]
  Tensor previous = gather(cx, ends, 0, binary(cx, Op::Max, binary(cx, Op::Sub, g, i64(1)), i64(0)));
  Tensor begins = where(cx, binary(cx, Op::Eq, g, i64(0)), i64(0), previous);           // [G]
  Tensor r = unsqueeze(iota(cx, rows, DType::I64), 1);                                  // [rows, 1]
  Tensor holds = binary(cx, Op::And, binary(cx, Op::Le, unsqueeze(begins, 0), r),
                        binary(cx, Op::Lt, r, unsqueeze(ends, 0)));                     // [rows, G]
  Tensor last = reduce(cx, Op::MaxReduce, where(cx, holds, unsqueeze(g, 0), i64(-1)), {1}, /*keepdim=*/false);
  return {binary(cx, Op::Max, last, i64(0)), binary(cx, Op::Le, i64(0), last)};
}

// Whether grouped_rows_matmul gathers each row's expert weights rather than emitting a
// GroupedMatmul: a decode step, whose few rows (its top-k, static) are fewer than the experts.
// Its gathered [K, N] slices feed the generated GEMV kernel, which streams bf16 weights without
// widening them first. Every other floating product is a GroupedMatmul: one BLAS call per
// expert with rows, each routed expert's weights read once, and none of the others; symbolic
// rows are a prefill, as decode shapes are static. Integers (no BLAS) always gather.
bool gathers_expert_weights(const Expr& rows, const Expr& groups, DType dtype) {
  if (!ir::is_floating(dtype)) return true;
  return rows.is_constant() && (!groups.is_constant() || rows.constant_value() < groups.constant_value());
}

// input [S, K] x weight [G, K, N] grouped along S by offs -> [S, N], as a GroupedMatmul (see
// gathers_expert_weights) or gather-then-matmul: each row reads only its own expert's [K, N]
// slice (in the weight's dtype, never a cast copy of all experts: upstream luminal's first
// version cast every expert's weights to f32 and ran out of memory on Qwen3-30B-A3B), then a
// batched [1, K] x [K, N] product per row. offs stays a runtime tensor either way, so one compile
// serves every routing. Rows past offs[-1] are zero (the fallback's zero-filled output; torch's
// kernel leaves them unwritten).
Tensor grouped_rows_matmul(TranslationContext& cx, const Tensor& input, const Tensor& weight, const Tensor& offs,
                           const std::string& op) {
  const Expr rows = input.shape()[0];
  check_offs(offs, op);
  USER_CHECK(offs.shape()[0] == weight.shape()[0] ||
             !(offs.shape()[0].is_constant() && weight.shape()[0].is_constant()))
      << op << ": offs of shape " << shape_to_string(offs.shape()) << " for " << weight.shape()[0].to_string()
      << " groups";
  if (!gathers_expert_weights(rows, weight.shape()[0], input.dtype)) return grouped_matmul(cx, input, weight, offs);
  RowGroups groups = row_groups(cx, rows, offs, op);
  // Gather in the weight's storage order: a Linear-style [G, N, K] weight seen as [G, K, N] is
  // gathered as [S, N, K] and transposed back, so the copy streams and the product reads K with
  // unit stride (the GEMV kernel), not a transposing gather then a strided GEMM.
  const bool k_contiguous = ir::is_one(weight.ref.view.strides()[1]) && !ir::is_one(weight.ref.view.strides()[2]);
  Tensor stored = k_contiguous ? transpose(weight, 1, 2) : weight;
  Tensor index = expand(unsqueeze(unsqueeze(groups.group, 1), 2), {rows, stored.shape()[1], stored.shape()[2]});
  Tensor expert_weights = gather(cx, stored, 0, index);                       // [S, K, N] or [S, N, K]
  if (k_contiguous) expert_weights = transpose(expert_weights, 1, 2);         // [S, K, N]
  Tensor out = squeeze(matmul(cx, unsqueeze(input, 1), expert_weights), 1);    // [S, N]
  Tensor zero = constant(cx, ir::Scalar::of_int(0), out.dtype);
  return where(cx, unsqueeze(groups.in_group, 1), out, zero);
}

// a [M, K] x b [K, N] with K grouped by offs -> [G, M, N]: group g multiplies the K slice
// [offs[g-1], offs[g]) (a weight gradient per expert). Each group's product masks the other
// columns of a: G full products, for the few experts of the models that reach it.
Tensor k_grouped_matmul(TranslationContext& cx, const Tensor& a, const Tensor& b, const Tensor& offs,
                        const std::string& op) {
  RowGroups k_groups = row_groups(cx, a.shape()[1], offs, op);
  Tensor g = unsqueeze(iota(cx, offs.shape()[0], DType::I64), 1);                 // [G, 1]
  Tensor mine = binary(cx, Op::And, binary(cx, Op::Eq, unsqueeze(k_groups.group, 0), g),
                       unsqueeze(k_groups.in_group, 0));                          // [G, K]
  Tensor masked = where(cx, unsqueeze(mine, 1), unsqueeze(a, 0), constant(cx, ir::Scalar::of_int(0), a.dtype));
  return matmul(cx, masked, b);                                                   // [G, M, N]
}

void check_same_dtype(const Tensor& a, const Tensor& b, const std::string& op) {
  USER_CHECK(a.dtype == b.dtype) << op << ": operands of dtypes " << ir::dtype_name(a.dtype) << " and "
                                 << ir::dtype_name(b.dtype);
}

void check_inner_dims(const Expr& a, const Expr& b, const std::string& op, const Tensor& x, const Tensor& w) {
  USER_CHECK(a == b || !(a.is_constant() && b.is_constant()))
      << op << ": shapes " << shape_to_string(x.shape()) << " and " << shape_to_string(w.shape())
      << " cannot be multiplied";
}

}  // namespace

// histc(self, bins=100, min=0, max=0): counts of the elements of any rank in `bins` equal-width
// bins over [min, max], in self's dtype. As torch's kernels: min == max means the data's own min
// and max (widened by 1 each way when they are equal too); the last bin includes its right edge,
// and elements outside [min, max] (NaN among them) are not counted. Floating inputs (torch's CPU
// kernel): x lands in bin trunc((x - min) * bins / (max - min)) computed in self's dtype, so
// f16/bf16 round where torch rounds. Integer inputs (CUDA only in torch: transformers counts
// tokens per expert in int32 there): min and max truncate to integers, and the bin is the same
// expression in int64, CUDA's accumulate type, so the division truncates. torch rejects a data
// range that is not finite at run time; here such data gives meaningless counts.
void translate_histc(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  USER_CHECK(ir::is_floating(self.dtype) || ir::is_integral(self.dtype))
      << "histc of a " << ir::dtype_name(self.dtype) << " tensor: torch counts numbers only";
  const DType dt = self.dtype;
  const bool integral = ir::is_integral(dt);
  const DType work = integral ? DType::I64 : dt;
  const int64_t bins = args.integer("bins");
  USER_CHECK(bins > 0) << "histc: bins must be > 0, got " << bins;
  double min = args.floating("min"), max = args.floating("max");
  if (integral) min = std::trunc(min), max = std::trunc(max);
  Tensor flat = reshape(cx, self, {Expr(int64_t{-1})});
  if (integral) flat = cast(cx, flat, work);
  const Expr count = flat.shape()[0];
  const bool empty = count.is_constant() && count.constant_value() == 0;
  Tensor lo, hi;
  if (min != max || empty) {
    double l = min, h = max;
    if (l == h) l -= 1, h += 1;
    USER_CHECK(std::isfinite(l) && std::isfinite(h)) << "histc: range [" << l << ", " << h << "] is not finite";
    USER_CHECK(l < h) << "histc: max must be larger than min, got min " << min << " and max " << max;
    lo = scalar_constant(cx, l, work);
    hi = scalar_constant(cx, h, work);
  } else {
    lo = reduce(cx, Op::MinReduce, flat, {0}, /*keepdim=*/false);
    hi = reduce(cx, Op::MaxReduce, flat, {0}, /*keepdim=*/false);
    Tensor same = binary(cx, Op::Eq, lo, hi);
    Tensor one = scalar_constant(cx, 1.0, work);
    lo = where(cx, same, binary(cx, Op::Sub, lo, one), lo);
    hi = where(cx, same, binary(cx, Op::Add, hi, one), hi);
  }
  Tensor inside = binary(cx, Op::And, binary(cx, Op::Le, lo, flat), binary(cx, Op::Le, flat, hi));
  Tensor bin_count = scalar_constant(cx, static_cast<double>(bins), work);
  Tensor scaled = binary(cx, Op::Mul, binary(cx, Op::Sub, flat, lo), bin_count);
  Tensor position = cast(cx, binary(cx, Op::Div, scaled, binary(cx, Op::Sub, hi, lo)), DType::I64);
  // x == max lands at `bins`: the last bin includes its right edge.
  position = binary(cx, Op::Min, position, constant(cx, ir::Scalar::of_int(bins - 1), DType::I64));
  Tensor bin = unsqueeze(iota(cx, Expr(bins), DType::I64), 0);                              // [1, bins]
  Tensor hit = binary(cx, Op::And, unsqueeze(inside, 1), binary(cx, Op::Eq, unsqueeze(position, 1), bin));  // [N, bins]
  Tensor counts = reduce(cx, Op::SumReduce, cast(cx, hit, compute_dtype(dt)), {0}, /*keepdim=*/false);
  args.set_output(0, cast(cx, counts, dt));
}

// transformers::grouped_mm_fallback(input [S, K], weight [G, K, N], offs [G]) -> [S, N].
void translate_grouped_mm_fallback(NodeArgs& args) {
  const std::string op = "grouped_mm_fallback";
  Tensor input = args.tensor("input"), weight = args.tensor("weight"), offs = args.tensor("offs");
  USER_CHECK(input.rank() == 2 && weight.rank() == 3)
      << op << ": expects input [S, K] and weight [G, K, N], got " << shape_to_string(input.shape()) << " and "
      << shape_to_string(weight.shape());
  check_same_dtype(input, weight, op);
  check_inner_dims(input.shape()[1], weight.shape()[1], op, input, weight);
  args.set_output(0, grouped_rows_matmul(args.cx(), input, weight, offs, op));
}

// transformers::grouped_mm_fallback_backward(input [S, K], weight [G, K, N], offs [G],
// grad_output [S, N]) -> (grad_input [S, K], grad_weight [G, K, N]): each row's gradient times its
// expert's weight transposed, and per expert its rows of input transposed times their gradients.
// Rows in no group get a zero gradient and add nothing, as in transformers' loop.
void translate_grouped_mm_fallback_backward(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const std::string op = "grouped_mm_fallback_backward";
  Tensor input = args.tensor("input"), weight = args.tensor("weight"), offs = args.tensor("offs");
  Tensor grad_output = args.tensor("grad_output");
  USER_CHECK(input.rank() == 2 && weight.rank() == 3 && grad_output.rank() == 2)
      << op << ": expects input [S, K], weight [G, K, N] and grad_output [S, N], got "
      << shape_to_string(input.shape()) << ", " << shape_to_string(weight.shape()) << " and "
      << shape_to_string(grad_output.shape());
  check_same_dtype(input, weight, op);
  check_same_dtype(input, grad_output, op);
  check_inner_dims(input.shape()[1], weight.shape()[1], op, input, weight);
  check_inner_dims(grad_output.shape()[1], weight.shape()[2], op, grad_output, weight);
  if (!args.output_name(0).empty())
    args.set_output(0, grouped_rows_matmul(cx, grad_output, transpose(weight, 1, 2), offs, op));
  if (!args.output_name(1).empty()) args.set_output(1, k_grouped_matmul(cx, transpose(input, 0, 1), grad_output, offs, op));
}

// _grouped_mm(self, mat2, offs=None, bias=None, out_dtype=None). The forms:
//   [S, K] x [G, K, N] with offs: rows grouped (MoE experts) -> [S, N];
//   [G, M, K] x [G, K, N] without offs: a batched matmul -> [G, M, N];
//   [M, K] x [K, N] with offs: K grouped (weight gradients) -> [G, M, N];
//   [G, M, K] x [K, N] with offs: columns of mat2 grouped -> [M, N].
// Where offs leaves rows, columns or K positions in no group, the result there is zero (torch's
// kernel leaves it unwritten). torch has no bias yet and requires out_dtype == the operands'.
void translate_grouped_mm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const std::string op = "_grouped_mm";
  Tensor a = args.tensor("self"), b = args.tensor("mat2");
  check_same_dtype(a, b, op);
  UNSUPPORTED_CHECK(args.is_none("bias")) << op << " with a bias";
  const DType out_dtype = args.dtype("out_dtype").value_or(a.dtype);
  USER_CHECK(out_dtype == a.dtype) << op << ": out_dtype " << ir::dtype_name(out_dtype) << " differs from the "
                                   << "operands' " << ir::dtype_name(a.dtype) << " (torch requires them equal)";
  std::optional<Tensor> offs = args.optional_tensor("offs");
  USER_CHECK((a.rank() == 2 || a.rank() == 3) && (b.rank() == 2 || b.rank() == 3))
      << op << ": operands must be 2-d or 3-d, got " << shape_to_string(a.shape()) << " and "
      << shape_to_string(b.shape());
  check_inner_dims(a.shape().back(), b.shape()[b.rank() - 2], op, a, b);
  if (a.rank() == 3 && b.rank() == 3) {
    USER_CHECK(!offs.has_value()) << op << ": offs given for two 3-d operands";
    return args.set_output(0, matmul(cx, a, b));
  }
  USER_CHECK(offs.has_value()) << op << ": a 2-d operand needs offs";
  if (a.rank() == 2 && b.rank() == 3) return args.set_output(0, grouped_rows_matmul(cx, a, b, *offs, op));
  if (a.rank() == 2 && b.rank() == 2) return args.set_output(0, k_grouped_matmul(cx, a, b, *offs, op));
  // a [G, M, K] x b [K, N]: column j of the result uses a[group of j].
  RowGroups n_groups = row_groups(cx, b.shape()[1], *offs, op);
  Tensor all = matmul(cx, a, b);                                                    // [G, M, N]
  const Expr m = a.shape()[1], n = b.shape()[1];
  Tensor index = expand(unsqueeze(unsqueeze(n_groups.group, 0), 0), {Expr(int64_t{1}), m, n});
  Tensor picked = squeeze(gather(cx, all, 0, index), 0);                            // [M, N]
  Tensor zero = constant(cx, ir::Scalar::of_int(0), picked.dtype);
  args.set_output(0, where(cx, unsqueeze(n_groups.in_group, 0), picked, zero));
}

}  // namespace luminal::translator
