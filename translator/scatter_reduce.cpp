// scatter_reduce.two(self, dim, index, src, reduce, include_self): torch.Tensor.scatter_reduce.
// The Scatter primitive only overwrites or adds, so:
// - sum / mean: a Scatter that accumulates, with the count of writes per position from a second
//   one (mean divides by it; include_self=False starts the written positions at 0);
// - prod / amax / amin: a masked reduction. For every position p along dim and every src element
//   j of the same row, mask[.., p, .., j] = (index[.., j] == p); the row's values where the mask
//   holds (the reduction's identity elsewhere) are reduced over j. This costs size(dim) x
//   index.size(dim) per row, which suits the small scatters models do (MoE routing tables,
//   segment maxima); a large one would want a reducing Scatter primitive.
// Positions no index points at keep self's value, and so do positions beyond index's extent in
// the other dims (index may be smaller than self there, as in torch).
#include <limits>
#include <optional>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/spatial.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;

namespace {

enum class Reduction { Sum, Prod, Mean, Amax, Amin };

Reduction parse_reduction(const std::string& name) {
  if (name == "sum") return Reduction::Sum;
  if (name == "prod") return Reduction::Prod;
  if (name == "mean") return Reduction::Mean;
  if (name == "amax") return Reduction::Amax;
  USER_CHECK(name == "amin") << "scatter_reduce: reduce must be one of sum, prod, mean, amax, amin; got '" << name << "'";
  return Reduction::Amin;
}

// t restricted to the extents of `like` in every dim but `dim` (a view).
Tensor restrict_to(const Tensor& t, const Tensor& like, int dim) {
  Tensor out = t;
  for (int d = 0; d < t.rank(); ++d)
    if (d != dim && !(out.shape()[d] == like.shape()[d])) out = slice(out, d, Expr(int64_t{0}), like.shape()[d], 1);
  return out;
}

// How many src elements land on each position of `self` (i64, self's shape).
Tensor write_counts(TranslationContext& cx, const Tensor& self, int dim, const Tensor& index) {
  Tensor zeros = constant(cx, ir::Scalar::of_int(0), DType::I64, self.shape());
  Tensor ones = constant(cx, ir::Scalar::of_int(1), DType::I64, index.shape());
  return scatter(cx, zeros, dim, index, ones, /*accumulate=*/true);
}

// torch's integer mean divides with rounding toward negative infinity ("floor").
Tensor floor_divide(TranslationContext& cx, const Tensor& a, const Tensor& b) {
  Tensor q = binary(cx, Op::Div, a, b);
  Tensor r = binary(cx, Op::Mod, a, b);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), a.dtype);
  Tensor inexact_negative = binary(cx, Op::Ne, binary(cx, Op::Lt, r, zero), binary(cx, Op::Lt, b, zero));
  Tensor adjust = binary(cx, Op::And, binary(cx, Op::Ne, r, zero), inexact_negative);
  return binary(cx, Op::Sub, q, cast(cx, adjust, a.dtype));
}

Tensor sum_or_mean(TranslationContext& cx, const Tensor& self, int dim, const Tensor& index, const Tensor& src,
                   Reduction reduction, bool include_self) {
  Tensor counts = write_counts(cx, self, dim, index);
  Tensor written = binary(cx, Op::Lt, constant(cx, ir::Scalar::of_int(0), DType::I64), counts);
  Tensor base = include_self ? self : where(cx, written, constant(cx, ir::Scalar::of_int(0), self.dtype), self);
  Tensor sum = scatter(cx, base, dim, index, src, /*accumulate=*/true);
  if (reduction == Reduction::Sum) return sum;
  Tensor n = include_self ? binary(cx, Op::Add, counts, constant(cx, ir::Scalar::of_int(1), DType::I64)) : counts;
  n = cast(cx, where(cx, written, n, constant(cx, ir::Scalar::of_int(1), DType::I64)), self.dtype);
  return ir::is_floating(self.dtype) ? binary(cx, Op::Div, sum, n) : floor_divide(cx, sum, n);
}

Tensor masked_reduce(TranslationContext& cx, const Tensor& self, int dim, const Tensor& index, const Tensor& src,
                     Reduction reduction, bool include_self) {
  const int rank = self.rank();
  const Op reduce_op = reduction == Reduction::Prod   ? Op::ProdReduce
                       : reduction == Reduction::Amax ? Op::MaxReduce
                                                      : Op::MinReduce;
  const Op combine_op = reduction == Reduction::Prod ? Op::Mul : reduction == Reduction::Amax ? Op::Max : Op::Min;
  ir::Scalar identity = ir::Scalar::of_int(1);
  if (reduction == Reduction::Amax) identity = lowest_value(self.dtype);
  if (reduction == Reduction::Amin) {
    identity = ir::is_floating(self.dtype) ? ir::Scalar::of_float(std::numeric_limits<double>::infinity())
                                           : ir::Scalar::of_int(std::numeric_limits<int64_t>::max());
    if (self.dtype != DType::I64 && !ir::is_floating(self.dtype)) {
      // The largest value of the narrower integer types.
      const int bits = static_cast<int>(ir::dtype_size(self.dtype)) * 8;
      identity = ir::Scalar::of_int(self.dtype == DType::U8 ? 255 : (int64_t{1} << (bits - 1)) - 1);
    }
  }
  // [.., 1 at dim, .., J]: the row's src elements on a new last dim, against positions at dim.
  std::vector<int> to_last;
  for (int d = 0; d < rank; ++d)
    if (d != dim) to_last.push_back(d);
  to_last.push_back(dim);
  Tensor idx = unsqueeze(permute(index, to_last), dim);
  Tensor values = unsqueeze(permute(src, to_last), dim);
  Tensor region = restrict_to(self, index, dim);
  Tensor position = iota(cx, self.shape()[dim], DType::I64);
  for (int d = dim + 1; d <= rank; ++d) position = unsqueeze(position, position.rank());
  Tensor mask = binary(cx, Op::Eq, idx, position);
  Tensor masked = where(cx, mask, broadcast_to(values, mask.shape()), constant(cx, identity, self.dtype));
  Tensor reduced = reduce(cx, reduce_op, masked, {rank}, /*keepdim=*/false);
  Tensor written = reduce(cx, Op::MaxReduce, mask, {rank}, /*keepdim=*/false);
  Tensor combined = include_self ? binary(cx, combine_op, region, reduced) : reduced;
  Tensor result = where(cx, written, combined, region);
  if (result.shape() == self.shape()) return result;
  // index covers only part of self in some other dim: put the region back into self.
  std::optional<Tensor> inside;
  for (int d = 0; d < rank; ++d) {
    if (d == dim || result.shape()[d] == self.shape()[d]) continue;
    const int64_t size = static_dim(self, d, "scatter_reduce");
    const int64_t extent = static_dim(result, d, "scatter_reduce");
    result = pad_dim(cx, result, d, 0, size - extent, ir::Scalar::of_int(0));
    Tensor in_dim = binary(cx, Op::Lt, positions(cx, size), int_constant(cx, extent));
    for (int e = d + 1; e < rank; ++e) in_dim = unsqueeze(in_dim, in_dim.rank());
    inside = inside ? binary(cx, Op::And, *inside, in_dim) : in_dim;
  }
  return where(cx, *inside, result, self);
}

// torch's scatter_reduce over (self, dim, index, src); the result has self's dtype.
Tensor scatter_reduced(TranslationContext& cx, Tensor self, int64_t dim_arg, Tensor index, Tensor src,
                       Reduction reduction, bool include_self) {
  const DType dtype = self.dtype;
  // On bools torch's sum/amax are a logical or and prod/amin a logical and: the i64 reductions
  // of 0/1 values, read back as != 0. Its CPU kernel has no bool mean.
  USER_CHECK(!(ir::is_bool(dtype) && reduction == Reduction::Mean)) << "scatter_reduce: mean of a bool tensor";
  const DType compute = ir::is_bool(dtype) ? DType::I64 : dtype;
  index = cast(cx, index, DType::I64);  // torch also takes int32 indices
  // torch treats 0-d tensors as rank 1 of size 1.
  const bool scalar = self.rank() == 0;
  const ir::Shape one = {Expr(int64_t{1})};
  if (scalar) {
    self = reshape(cx, self, one);
    if (index.rank() == 0) index = reshape(cx, index, one);
    if (src.rank() == 0) src = reshape(cx, src, one);
  }
  USER_CHECK(index.rank() == self.rank()) << "scatter_reduce: index of rank " << index.rank() << " for self of rank "
                                          << self.rank();
  const int dim = wrap_dim(dim_arg, self.rank());
  self = cast(cx, self, compute);
  // Only src[index's extent] is read, as in torch (dim -1 here means: restrict every dim).
  src = restrict_to(cast(cx, src, compute), index, -1);
  Tensor out = self;
  if (!(numel(index.shape()) == Expr(int64_t{0}))) {
    out = reduction == Reduction::Sum || reduction == Reduction::Mean
              ? sum_or_mean(cx, self, dim, index, src, reduction, include_self)
              : masked_reduce(cx, self, dim, index, src, reduction, include_self);
  }
  out = cast(cx, out, dtype);
  return scalar ? reshape(cx, out, {}) : out;
}

// scatter(..., reduce='add'|'multiply'): the deprecated form of scatter_reduce sum/prod with
// include_self=True.
Reduction legacy_reduction(const std::string& name) {
  USER_CHECK(name == "add" || name == "multiply") << "scatter: reduce must be 'add' or 'multiply'; got '" << name << "'";
  return name == "add" ? Reduction::Sum : Reduction::Prod;
}

}  // namespace

void translate_scatter_reduce_two(NodeArgs& args) {
  args.set_output(0, scatter_reduced(args.cx(), args.tensor("self"), args.integer("dim"), args.tensor("index"),
                                     args.tensor("src"), parse_reduction(args.string("reduce")),
                                     args.boolean("include_self")));
}

void translate_scatter_reduce(NodeArgs& args) {
  args.set_output(0, scatter_reduced(args.cx(), args.tensor("self"), args.integer("dim"), args.tensor("index"),
                                     args.tensor("src"), legacy_reduction(args.string("reduce")), true));
}

void translate_scatter_value_reduce(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  const Tensor self = args.tensor("self");
  const Tensor index = args.tensor("index");
  const Tensor value = constant(cx, args.scalar("value"), self.dtype, index.shape());
  args.set_output(0, scatter_reduced(cx, self, args.integer("dim"), index, value,
                                     legacy_reduction(args.string("reduce")), true));
}

}  // namespace luminal::translator
