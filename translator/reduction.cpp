// Reductions: sum, mean, amax/amin, any, prod, cumsum. The IR reduces one axis at a time and
// keeps it with size 1; tensor_ops' reduce() chains axes and drops them for keepdim=False.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Op;

namespace {

// A `dim` argument of int[1]? / int[] / int: None or [] means every dim.
std::vector<int> reduce_dims(NodeArgs& args, const std::string& name) {
  if (args.is_none(name)) return {};
  const pt2::Argument& raw = args.raw(name);
  if (raw.kind == pt2::Argument::Kind::Int) return {static_cast<int>(raw.ints.at(0))};
  std::vector<int> dims;
  for (int64_t d : args.integers(name)) dims.push_back(static_cast<int>(d));
  return dims;
}

std::vector<int> all_dims(int rank) {
  std::vector<int> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

bool keepdim(NodeArgs& args) { return args.has("keepdim") && args.boolean("keepdim"); }

// sum and prod accumulate integers and bools in i64 unless a dtype is given.
Tensor accumulation_input(NodeArgs& args, const Tensor& x) {
  if (std::optional<DType> dtype = args.has("dtype") ? args.dtype("dtype") : std::nullopt) return cast(args.cx(), x, *dtype);
  return ir::is_floating(x.dtype) ? x : cast(args.cx(), x, DType::I64);
}

Tensor sum_or_prod(NodeArgs& args, Op op, const std::vector<int>& dims, bool keep) {
  const MergedReduction m = merge_reduced_dims(args.tensor("self"), dims);
  return m.restore(reduce(args.cx(), op, accumulation_input(args, m.input), m.axes, /*keepdim=*/true), keep);
}

// amax/amin: exact in any dtype, in any order.
Tensor extreme_over(NodeArgs& args, Op op, const std::vector<int>& dims, bool keep) {
  const MergedReduction m = merge_reduced_dims(args.tensor("self"), dims);
  return m.restore(reduce(args.cx(), op, m.input, m.axes, /*keepdim=*/true), keep);
}

ir::Expr reduced_count(const Tensor& x, const std::vector<int>& dims) {
  ir::Expr n(int64_t{1});
  // A 0-d tensor reduced over dim 0 or -1 holds one element (x.shape() has no dim to read).
  if (dims.empty() || x.rank() == 0) return numel(x.shape());
  for (int d : dims) n = n * x.shape()[wrap_dim(d, x.rank())];
  return n;
}

// torch's CPU mean upcasts f16/bf16 to f32, sums, divides by the count, rounds once.
Tensor mean_over(NodeArgs& args, const std::vector<int>& dims) {
  TranslationContext& cx = args.cx();
  const Tensor self = args.tensor("self");
  // Merged before any cast, so that the casts fuse into the reduction (merge_reduced_dims).
  const MergedReduction m = merge_reduced_dims(self, dims);
  Tensor x = m.input;
  if (std::optional<DType> dtype = args.has("dtype") ? args.dtype("dtype") : std::nullopt) x = cast(cx, x, *dtype);
  USER_CHECK(ir::is_floating(x.dtype)) << "mean of a " << ir::dtype_name(x.dtype)
                                       << " tensor needs a floating dtype (pass dtype=)";
  const DType compute = compute_dtype(x.dtype);
  Tensor sum = reduce(cx, Op::SumReduce, cast(cx, x, compute), m.axes, /*keepdim=*/true);
  Tensor mean = binary(cx, Op::Div, sum, size_value(cx, reduced_count(self, dims), compute));
  return m.restore(cast(cx, mean, x.dtype), keepdim(args));
}

// any is a max over bools; torch keeps uint8 for uint8 inputs.
Tensor any_over(NodeArgs& args, const std::vector<int>& dims) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  // MaxReduce has no identity for an empty axis; any() of nothing is False.
  const std::vector<int> axes = dims.empty() && x.rank() > 0 ? all_dims(x.rank()) : dims;
  bool empty = false;
  for (int d : axes)
    if (x.rank() > 0 && x.shape()[wrap_dim(d, x.rank())] == ir::Expr(int64_t{0})) empty = true;
  if (empty) {
    ir::Shape shape;
    for (int d = 0; d < x.rank(); ++d) {
      const bool reduced = std::find_if(axes.begin(), axes.end(), [&](int a) { return wrap_dim(a, x.rank()) == d; }) != axes.end();
      if (!reduced) shape.push_back(x.shape()[d]);
      else if (keepdim(args)) shape.push_back(ir::Expr(int64_t{1}));
    }
    return constant(cx, ir::Scalar::of_int(0), x.dtype == DType::U8 ? DType::U8 : DType::Bool, shape);
  }
  Tensor any = reduce(cx, Op::MaxReduce, cast(cx, x, DType::Bool), dims, keepdim(args));
  return x.dtype == DType::U8 ? cast(cx, any, DType::U8) : any;
}


// The index of the first maximum (or minimum) along dim, as torch.argmax: NaN counts as the
// largest (and smallest) value, so the first NaN wins. None flattens the input first.
Tensor arg_extreme(TranslationContext& cx, Tensor x, std::optional<int> dim, bool keep, Op reduce_op) {
  const bool flatten = !dim.has_value();
  const ir::Shape input_shape = x.shape();
  if (flatten) {
    x = reshape(cx, x, {numel(x.shape())});
    dim = 0;
  }
  if (x.rank() == 0) return constant(cx, ir::Scalar::of_int(0), DType::I64);
  const int d = wrap_dim(*dim, x.rank());
  Tensor extreme = reduce(cx, reduce_op, x, {d}, /*keepdim=*/true);
  Tensor hit = binary(cx, Op::Eq, x, extreme);
  if (ir::is_floating(x.dtype)) hit = where(cx, unary(cx, Op::IsNan, extreme), unary(cx, Op::IsNan, x), hit);
  Tensor positions = iota(cx, x.shape()[d], DType::I64);
  for (int i = d + 1; i < x.rank(); ++i) positions = unsqueeze(positions, 1);
  Tensor misses = size_value(cx, x.shape()[d], DType::I64);
  Tensor index = reduce(cx, Op::MinReduce, where(cx, hit, positions, misses), {d}, /*keepdim=*/true);
  if (flatten) {
    if (!keep) return reshape(cx, index, {});
    return reshape(cx, index, std::vector<ir::Expr>(input_shape.size(), ir::Expr(int64_t{1})));
  }
  return keep ? index : squeeze(index, d);
}

std::optional<int> optional_dim(NodeArgs& args) {
  if (args.is_none("dim")) return std::nullopt;
  return static_cast<int>(args.integer("dim"));
}

// var with `correction` subtracted from the count (1 is Bessel's correction), two-pass, in the
// compute dtype; f16/bf16 round once.
Tensor variance(NodeArgs& args, const std::vector<int>& dims, double correction) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  USER_CHECK(ir::is_floating(x.dtype)) << "var of a " << ir::dtype_name(x.dtype) << " tensor";
  const DType compute = compute_dtype(x.dtype);
  const MergedReduction m = merge_reduced_dims(x, dims);
  Tensor xf = cast(cx, m.input, compute);
  Tensor n = size_value(cx, reduced_count(x, dims), compute);
  Tensor mean = binary(cx, Op::Div, reduce(cx, Op::SumReduce, xf, m.axes, true), n);
  Tensor centered = binary(cx, Op::Sub, xf, mean);
  Tensor ss = reduce(cx, Op::SumReduce, binary(cx, Op::Mul, centered, centered), m.axes, true);
  Tensor denominator = binary(cx, Op::Sub, n, constant(cx, ir::Scalar::of_float(correction), compute));
  // torch clamps the denominator at 0 (giving inf or NaN), never a negative variance.
  denominator = binary(cx, Op::Max, denominator, constant(cx, ir::Scalar::of_float(0.0), compute));
  return m.restore(cast(cx, binary(cx, Op::Div, ss, denominator), x.dtype), keepdim(args));
}
}  // namespace

void translate_sum(NodeArgs& args) { args.set_output(0, sum_or_prod(args, Op::SumReduce, {}, false)); }

void translate_sum_dim_intlist(NodeArgs& args) {
  args.set_output(0, sum_or_prod(args, Op::SumReduce, reduce_dims(args, "dim"), keepdim(args)));
}

void translate_prod_dim_int(NodeArgs& args) {
  args.set_output(0, sum_or_prod(args, Op::ProdReduce, reduce_dims(args, "dim"), keepdim(args)));
}

void translate_mean(NodeArgs& args) { args.set_output(0, mean_over(args, {})); }
void translate_mean_dim(NodeArgs& args) { args.set_output(0, mean_over(args, reduce_dims(args, "dim"))); }

void translate_amax(NodeArgs& args) {
  args.set_output(0, extreme_over(args, Op::MaxReduce, reduce_dims(args, "dim"), keepdim(args)));
}

void translate_amin(NodeArgs& args) {
  args.set_output(0, extreme_over(args, Op::MinReduce, reduce_dims(args, "dim"), keepdim(args)));
}

void translate_any(NodeArgs& args) { args.set_output(0, any_over(args, {})); }
void translate_any_dim(NodeArgs& args) { args.set_output(0, any_over(args, reduce_dims(args, "dim"))); }
void translate_any_dims(NodeArgs& args) { args.set_output(0, any_over(args, reduce_dims(args, "dim"))); }

void translate_prod(NodeArgs& args) {
  args.set_output(0, sum_or_prod(args, Op::ProdReduce, {}, false));
}

void translate_argmax(NodeArgs& args) {
  args.set_output(0, arg_extreme(args.cx(), args.tensor("self"), optional_dim(args), keepdim(args), Op::MaxReduce));
}
void translate_argmin(NodeArgs& args) {
  args.set_output(0, arg_extreme(args.cx(), args.tensor("self"), optional_dim(args), keepdim(args), Op::MinReduce));
}

// max.dim / min.dim: (values, indices) along one dim.
void translate_max_dim(NodeArgs& args) {
  const int dim = static_cast<int>(args.integer("dim"));
  args.set_output(0, reduce(args.cx(), Op::MaxReduce, args.tensor("self"), {dim}, keepdim(args)));
  args.set_output(1, arg_extreme(args.cx(), args.tensor("self"), dim, keepdim(args), Op::MaxReduce));
}
void translate_min_dim(NodeArgs& args) {
  const int dim = static_cast<int>(args.integer("dim"));
  args.set_output(0, reduce(args.cx(), Op::MinReduce, args.tensor("self"), {dim}, keepdim(args)));
  args.set_output(1, arg_extreme(args.cx(), args.tensor("self"), dim, keepdim(args), Op::MinReduce));
}

void translate_var_correction(NodeArgs& args) {
  const double correction = args.is_none("correction") ? 1.0 : args.floating("correction");
  args.set_output(0, variance(args, reduce_dims(args, "dim"), correction));
}
void translate_var_dim(NodeArgs& args) {
  args.set_output(0, variance(args, reduce_dims(args, "dim"), args.boolean("unbiased") ? 1.0 : 0.0));
}

// max() / min() of a whole tensor (dynamo graphs keep these non-core overloads).
void translate_max(NodeArgs& args) { args.set_output(0, extreme_over(args, Op::MaxReduce, {}, false)); }
void translate_min(NodeArgs& args) { args.set_output(0, extreme_over(args, Op::MinReduce, {}, false)); }

// var_mean: (var, mean) in one node; var as var.correction.
void translate_var_mean_correction(NodeArgs& args) {
  const double correction = args.is_none("correction") ? 1.0 : args.floating("correction");
  const std::vector<int> dims = reduce_dims(args, "dim");
  args.set_output(0, variance(args, dims, correction));
  args.set_output(1, mean_over(args, dims));
}

// linalg_vector_norm: (sum |x|^ord)^(1/ord), with ord 2 as sqrt(sum x*x), inf/-inf as max/min of
// |x| and 0 as the count of non-zeros; computed in f32 for f16/bf16.
void translate_linalg_vector_norm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  // Merged before any cast, so that the casts fuse into the reduction (merge_reduced_dims).
  const MergedReduction m = merge_reduced_dims(args.tensor("self"), reduce_dims(args, "dim"));
  Tensor x = m.input;
  if (std::optional<DType> dtype = args.dtype("dtype")) x = cast(cx, x, *dtype);
  USER_CHECK(ir::is_floating(x.dtype)) << "linalg_vector_norm of a " << ir::dtype_name(x.dtype) << " tensor";
  const DType c = compute_dtype(x.dtype);
  const std::vector<int>& dims = m.axes;
  const bool keep = true;  // m.restore() drops the reduced dims
  const double ord = args.floating("ord");
  Tensor a = unary(cx, Op::Abs, cast(cx, x, c));
  Tensor out;
  if (std::isinf(ord)) {
    out = reduce(cx, ord > 0 ? Op::MaxReduce : Op::MinReduce, a, dims, keep);
  } else if (ord == 0.0) {
    Tensor nonzero = cast(cx, binary(cx, Op::Ne, a, constant(cx, ir::Scalar::of_float(0.0), c)), c);
    out = reduce(cx, Op::SumReduce, nonzero, dims, keep);
  } else if (ord == 1.0) {
    out = reduce(cx, Op::SumReduce, a, dims, keep);
  } else if (ord == 2.0) {
    out = unary(cx, Op::Sqrt, reduce(cx, Op::SumReduce, binary(cx, Op::Mul, a, a), dims, keep));
  } else {
    Tensor p = constant(cx, ir::Scalar::of_float(ord), c);
    Tensor sum = reduce(cx, Op::SumReduce, binary(cx, Op::Pow, a, p), dims, keep);
    out = binary(cx, Op::Pow, sum, constant(cx, ir::Scalar::of_float(1.0 / ord), c));
  }
  args.set_output(0, m.restore(cast(cx, out, x.dtype), keepdim(args)));
}

// cumsum(x)[.., i] = sum over j <= i of x[.., j]: one CumSum node, linear in the length, in the
// result dtype (integers and bools give i64 unless dtype= is given, as torch). CumSum widens its
// own running sum as torch's CPU kernel does, so the input is only cast, not upcast.
void translate_cumsum(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  DType out_dtype = ir::is_floating(x.dtype) ? x.dtype : DType::I64;
  if (std::optional<DType> dtype = args.dtype("dtype")) out_dtype = *dtype;
  if (x.rank() == 0) return args.set_output(0, cast(cx, x, out_dtype));
  USER_CHECK(out_dtype != DType::Bool) << "cumsum with dtype=torch.bool: torch has no bool cumsum kernel either";
  args.set_output(0, cumsum(cx, cast(cx, x, out_dtype), wrap_dim(args.integer("dim"), x.rank())));
}

}  // namespace luminal::translator
