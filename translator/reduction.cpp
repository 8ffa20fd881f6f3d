// Reductions: sum, mean, amax/amin, any, prod, cumsum. The IR reduces one axis at a time and
// keeps it with size 1; tensor_ops' reduce() chains axes and drops them for keepdim=False.
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

bool keepdim(NodeArgs& args) { return args.has("keepdim") && args.boolean("keepdim"); }

// sum and prod accumulate integers and bools in i64 unless a dtype is given.
Tensor accumulation_input(NodeArgs& args) {
  Tensor x = args.tensor("self");
  if (std::optional<DType> dtype = args.has("dtype") ? args.dtype("dtype") : std::nullopt) return cast(args.cx(), x, *dtype);
  return ir::is_floating(x.dtype) ? x : cast(args.cx(), x, DType::I64);
}

ir::Expr reduced_count(const Tensor& x, const std::vector<int>& dims) {
  ir::Expr n(int64_t{1});
  if (dims.empty()) return numel(x.shape());
  for (int d : dims) n = n * x.shape()[wrap_dim(d, x.rank())];
  return n;
}

// torch's CPU mean upcasts f16/bf16 to f32, sums, divides by the count, rounds once.
Tensor mean_over(NodeArgs& args, const std::vector<int>& dims) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  if (std::optional<DType> dtype = args.dtype("dtype")) x = cast(cx, x, *dtype);
  USER_CHECK(ir::is_floating(x.dtype)) << "mean of a " << ir::dtype_name(x.dtype)
                                       << " tensor needs a floating dtype (pass dtype=)";
  const DType compute = compute_dtype(x.dtype);
  Tensor sum = reduce(cx, Op::SumReduce, cast(cx, x, compute), dims, keepdim(args));
  Tensor mean = binary(cx, Op::Div, sum, size_value(cx, reduced_count(x, dims), compute));
  return cast(cx, mean, x.dtype);
}

// any is a max over bools; torch keeps uint8 for uint8 inputs.
Tensor any_over(NodeArgs& args, const std::vector<int>& dims) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  Tensor any = reduce(cx, Op::MaxReduce, cast(cx, x, DType::Bool), dims, keepdim(args));
  return x.dtype == DType::U8 ? cast(cx, any, DType::U8) : any;
}

}  // namespace

void translate_sum(NodeArgs& args) { args.set_output(0, reduce(args.cx(), Op::SumReduce, accumulation_input(args), {}, false)); }

void translate_sum_dim_intlist(NodeArgs& args) {
  args.set_output(0, reduce(args.cx(), Op::SumReduce, accumulation_input(args), reduce_dims(args, "dim"), keepdim(args)));
}

void translate_prod_dim_int(NodeArgs& args) {
  args.set_output(0, reduce(args.cx(), Op::ProdReduce, accumulation_input(args), reduce_dims(args, "dim"), keepdim(args)));
}

void translate_mean(NodeArgs& args) { args.set_output(0, mean_over(args, {})); }
void translate_mean_dim(NodeArgs& args) { args.set_output(0, mean_over(args, reduce_dims(args, "dim"))); }

void translate_amax(NodeArgs& args) {
  args.set_output(0, reduce(args.cx(), Op::MaxReduce, args.tensor("self"), reduce_dims(args, "dim"), keepdim(args)));
}

void translate_amin(NodeArgs& args) {
  args.set_output(0, reduce(args.cx(), Op::MinReduce, args.tensor("self"), reduce_dims(args, "dim"), keepdim(args)));
}

void translate_any(NodeArgs& args) { args.set_output(0, any_over(args, {})); }
void translate_any_dim(NodeArgs& args) { args.set_output(0, any_over(args, reduce_dims(args, "dim"))); }
void translate_any_dims(NodeArgs& args) { args.set_output(0, any_over(args, reduce_dims(args, "dim"))); }

// cumsum(x)[.., i] = sum over j <= i of x[.., j]: a masked sum over a [n, n] triangle. O(n^2), but
// n is a sequence length (transformers builds its causal/padding masks with cumsum) and it
// needs no new primitive. Integers and bools accumulate in i64, as torch.
void translate_cumsum(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor x = args.tensor("self");
  DType out_dtype = ir::is_floating(x.dtype) ? x.dtype : DType::I64;
  if (std::optional<DType> dtype = args.dtype("dtype")) out_dtype = *dtype;
  if (x.rank() == 0) return args.set_output(0, cast(cx, x, out_dtype));
  const int dim = wrap_dim(args.integer("dim"), x.rank());
  const DType compute = compute_dtype(out_dtype);
  // Move dim last, then x[.., j] -> [.., i, j] masked by j <= i and summed over j.
  Tensor last = transpose(cast(cx, x, compute), dim, x.rank() - 1);
  const ir::Expr n = last.shape().back();
  Tensor j = unsqueeze(iota(cx, n, DType::I64), 0);
  Tensor i = unsqueeze(iota(cx, n, DType::I64), 1);
  Tensor mask = binary(cx, Op::Le, j, i);
  ir::Shape square = last.shape();
  square.insert(square.end() - 1, n);
  Tensor rows = expand(unsqueeze(last, last.rank() - 1), square);
  Tensor masked = where(cx, mask, rows, constant(cx, ir::Scalar::of_int(0), compute));
  Tensor sums = reduce(cx, Op::SumReduce, masked, {masked.rank() - 1}, /*keepdim=*/false);
  args.set_output(0, cast(cx, transpose(sums, dim, x.rank() - 1), out_dtype));
}

}  // namespace luminal::translator
