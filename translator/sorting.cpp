// Sorting: topk and sort, composed from comparisons, sums and one Gather. MoE routers pick their
// experts with topk and transformers' grouped experts order tokens by expert id with sort.
//
// An element's place in the sorted order is its rank: the number of elements that come before
// it (a greater value when descending, a smaller one when ascending, or an equal value at a
// lower index). The output at place p then reads the element whose rank is p. Ranking compares
// every pair along the dim, O(n^2) work and an [.., n, n] intermediate, where a sorting network
// would be O(n log^2 n); that is fine for what models sort (a router's experts, the n = tokens *
// top_k expert ids of one step) and needs no new primitive. Ties keep the lower index first, so
// the result is what a stable sort gives, and NaN is the largest value, as in torch.
#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;

namespace {

// For x [.., n]: i64 [.., n], the place of each element in the stable order along the last dim.
Tensor stable_rank(TranslationContext& cx, const Tensor& x, bool descending) {
  // Bools compare as 0/1 (torch sorts False before True).
  Tensor v = ir::is_bool(x.dtype) ? cast(cx, x, DType::U8) : x;
  const int last = v.rank() - 1;
  const Expr n = v.shape()[last];
  Tensor self = unsqueeze(v, last + 1);   // [.., n, 1]: the element being ranked (i)
  Tensor other = unsqueeze(v, last);      // [.., 1, n]: the element it is compared with (j)
  // other comes before self: a strictly better value, or an equal one at a lower index.
  Tensor better = descending ? binary(cx, Op::Lt, self, other) : binary(cx, Op::Lt, other, self);
  Tensor equal = binary(cx, Op::Eq, other, self);
  if (ir::is_floating(v.dtype)) {
    // NaN is the largest value and equal to itself; comparisons with NaN are all false.
    Tensor self_nan = unary(cx, Op::IsNan, self), other_nan = unary(cx, Op::IsNan, other);
    Tensor nan_better = descending ? binary(cx, Op::And, other_nan, unary(cx, Op::Not, self_nan))
                                   : binary(cx, Op::And, self_nan, unary(cx, Op::Not, other_nan));
    better = binary(cx, Op::Or, better, nan_better);
    equal = binary(cx, Op::Or, equal, binary(cx, Op::And, self_nan, other_nan));
  }
  Tensor i = unsqueeze(iota(cx, n, DType::I64), 1);  // [n, 1]
  Tensor j = unsqueeze(iota(cx, n, DType::I64), 0);  // [1, n]
  Tensor earlier_tie = binary(cx, Op::And, equal, binary(cx, Op::Lt, j, i));
  Tensor before = binary(cx, Op::Or, better, earlier_tie);
  return reduce(cx, Op::SumReduce, cast(cx, before, DType::I64), {last + 1}, /*keepdim=*/false);
}

struct Sorted {
  Tensor values, indices;
};

// The first `count` elements of x's stable order along `dim`, with their indices.
Sorted sorted_prefix(TranslationContext& cx, const Tensor& x, int dim, const Expr& count, bool descending) {
  if (x.rank() == 0) return {x, constant(cx, ir::Scalar::of_int(0), DType::I64)};
  const int d = wrap_dim(dim, x.rank());
  const int last = x.rank() - 1;
  Tensor moved = transpose(x, d, last);
  const Expr n = moved.shape()[last];
  Tensor rank = stable_rank(cx, moved, descending);        // [.., n]
  Tensor place = unsqueeze(iota(cx, count, DType::I64), 1);  // [count, 1]
  Tensor hit = binary(cx, Op::Eq, unsqueeze(rank, last), place);  // [.., count, n]
  // Exactly one element holds each place: the sum of the hits' indices is that element's index.
  Tensor position = unsqueeze(iota(cx, n, DType::I64), 0);  // [1, n]
  Tensor source = where(cx, hit, position, constant(cx, ir::Scalar::of_int(0), DType::I64));
  Tensor indices = reduce(cx, Op::SumReduce, source, {last + 1}, /*keepdim=*/false);  // [.., count]
  Tensor values = gather(cx, moved, last, indices);
  return {transpose(values, d, last), transpose(indices, d, last)};
}

}  // namespace

// topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices). The result is always
// sorted (sorted=False leaves the order to the implementation). Among equal values the lower
// index comes first; torch's CPU kernel (partial sort / nth_element) leaves that order
// unspecified, so only the values and the set of indices are comparable with eager there.
void translate_topk(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  const Expr k = args.sym_int("k");
  const int dim = static_cast<int>(args.integer("dim"));
  const Expr n = self.rank() == 0 ? Expr(int64_t{1}) : self.shape()[wrap_dim(dim, self.rank())];
  if (k.is_constant()) {
    USER_CHECK(k.constant_value() >= 0 && (!n.is_constant() || k.constant_value() <= n.constant_value()))
        << "topk: k = " << k.constant_value() << " is out of range for a dim of size " << n.to_string();
  }
  UNSUPPORTED_CHECK(self.dtype != DType::Bool) << "topk of a bool tensor (torch does not support it on CPU either)";
  // A 0-d tensor is its own top element, for k = 0 as well (as torch).
  Sorted top = sorted_prefix(cx, self, dim, k, args.boolean("largest"));
  args.set_output(0, top.values);
  args.set_output(1, top.indices);
}

namespace {
void sort_outputs(NodeArgs& args) {
  Tensor self = args.tensor("self");
  const int dim = static_cast<int>(args.integer("dim"));
  const Expr n = self.rank() == 0 ? Expr(int64_t{1}) : self.shape()[wrap_dim(dim, self.rank())];
  Sorted all = sorted_prefix(args.cx(), self, dim, n, args.boolean("descending"));
  args.set_output(0, all.values);
  args.set_output(1, all.indices);
}
}  // namespace

// sort(self, dim=-1, descending=False). Always stable: torch's CPU sort is stable up to 16
// elements and unspecified among equal values beyond, so stable is one valid answer.
void translate_sort(NodeArgs& args) { sort_outputs(args); }

// sort.stable(self, *, stable, dim=-1, descending=False): stable or not, the same stable order.
void translate_sort_stable(NodeArgs& args) { sort_outputs(args); }

}  // namespace luminal::translator
