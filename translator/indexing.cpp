// Data-dependent addressing: embedding, index_select, gather, advanced indexing (index.Tensor)
// and its write form index_put. All lower to the Gather / Scatter primitives along one axis.
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/sym_expr.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;
using ir::Shape;

namespace {

Shape concat(const Shape& a, const Shape& b) {
  Shape out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// An index of `shape_at_axis` viewed at axis `axis` of a rank-`rank` result: [1.., idx.., 1..].
Tensor place_index(const Tensor& index, int axis, int rank) {
  Tensor out = index;
  for (int d = 0; d < axis; ++d) out = unsqueeze(out, 0);
  while (out.rank() < rank) out = unsqueeze(out, out.rank());
  return out;
}

bool is_mask(const std::optional<Tensor>& index) {
  return index && (index->dtype == DType::Bool || index->dtype == DType::U8);
}

// Advanced indexing with index tensors on the adjacent dims [first, first + k). The indexed
// dims are addressed by one linear index (row-major over those dims), broadcast over the
// index tensors' common shape. torch wraps negative indices.
struct AdvancedIndex {
  Shape pre, indexed, post;
  Shape broadcast;  // the index tensors' common shape
  Tensor linear;    // i64, shape `broadcast`
};

AdvancedIndex linearize(TranslationContext& cx, const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  int first = -1, last = -1;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    if (first < 0) first = static_cast<int>(i);
    last = static_cast<int>(i);
  }
  USER_CHECK(first >= 0) << "advanced indexing with no index tensor";
  USER_CHECK(static_cast<int>(indices.size()) <= self.rank())
      << indices.size() << " indices for a tensor of rank " << self.rank();
  for (int i = first; i <= last; ++i) {
    UNSUPPORTED_CHECK(indices[i].has_value()) << "index tensors separated by a full slice (x[i, :, j]) are not supported";
    INTERNAL_CHECK(!is_mask(indices[i])) << "boolean mask indices reach linearize (masks_as_positions converts them)";
    USER_CHECK(ir::is_integral(indices[i]->dtype)) << "index tensor " << i << " is "
                                                   << ir::dtype_name(indices[i]->dtype);
  }
  AdvancedIndex ai;
  const Shape& s = self.shape();
  ai.pre = Shape(s.begin(), s.begin() + first);
  ai.indexed = Shape(s.begin() + first, s.begin() + last + 1);
  ai.post = Shape(s.begin() + last + 1, s.end());
  std::optional<Tensor> linear;
  for (int i = first; i <= last; ++i) {
    const Expr& size = s[i];
    Tensor idx = cast(cx, *indices[i], DType::I64);
    Tensor zero = constant(cx, ir::Scalar::of_int(0), DType::I64);
    Tensor extent = size_value(cx, size, DType::I64);
    idx = where(cx, binary(cx, Op::Lt, idx, zero), binary(cx, Op::Add, idx, extent), idx);
    linear = linear ? binary(cx, Op::Add, binary(cx, Op::Mul, *linear, extent), idx) : idx;
  }
  ai.linear = *linear;
  ai.broadcast = ai.linear.shape();
  // A 0-d index (x[2, 3]) still needs an axis to gather along; it is dropped at the end.
  if (ai.broadcast.empty()) {
    ai.linear = unsqueeze(ai.linear, 0);
    ai.broadcast = {Expr(int64_t{1})};
  }
  return ai;
}

// A boolean mask index over k dims is the k integer indices of its true elements (torch does the
// same): x[mask] reads the rows nonzero(mask) names, a count known only when the mask is.
std::vector<std::optional<Tensor>> masks_as_positions(TranslationContext& cx,
                                                      const std::vector<std::optional<Tensor>>& indices) {
  std::vector<std::optional<Tensor>> out;
  for (const std::optional<Tensor>& index : indices) {
    if (!is_mask(index)) {
      out.push_back(index);
      continue;
    }
    UNSUPPORTED_CHECK(index->rank() > 0) << "indexing with a 0-d boolean (x[True]) is not supported";
    const Tensor coordinates = nonzero(cx, cast(cx, *index, DType::Bool));
    for (int d = 0; d < index->rank(); ++d) out.push_back(select(coordinates, 1, Expr(int64_t{d})));
  }
  return out;
}

// x[2, 3]: every index 0-d, so the result has no broadcast dims.
bool all_zero_d(const std::vector<std::optional<Tensor>>& indices) {
  for (const auto& i : indices)
    if (i && i->rank() > 0) return false;
  return true;
}

}  // namespace

// weight[indices]: Gather rows along axis 0 with the flattened ids expanded over the embedding
// width, then the ids' shape restored.
void translate_embedding(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor weight = args.tensor("weight");
  Tensor indices = args.tensor("indices");
  USER_CHECK(weight.rank() == 2) << "embedding weight must be 2-d, got rank " << weight.rank();
  Tensor flat = reshape(cx, indices, {Expr(int64_t{-1})});
  const Expr width = weight.shape()[1];
  Tensor index = expand(unsqueeze(flat, 1), {flat.shape()[0], width});
  Tensor rows = gather(cx, weight, 0, index);
  args.set_output(0, reshape(cx, rows, concat(indices.shape(), {width})));
}

// embedding(..., max_norm=m): the rows the indices reference whose norm exceeds m are scaled by
// m / (norm + 1e-7), as torch's embedding_renorm_ does (the norm rounded to the weight's dtype,
// the scale computed in double); the other rows keep their values.
void translate_embedding_renorm(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor weight = args.tensor("self");
  Tensor indices = args.tensor("indices");
  USER_CHECK(weight.rank() == 2) << "embedding_renorm weight must be 2-d, got rank " << weight.rank();
  USER_CHECK(ir::is_floating(weight.dtype)) << "embedding_renorm of a " << ir::dtype_name(weight.dtype) << " weight";
  const double max_norm = args.floating("max_norm");
  const double p = args.floating("norm_type");
  const DType c = compute_dtype(weight.dtype);
  const Tensor w = cast(cx, weight, c);
  const Tensor a = unary(cx, Op::Abs, w);
  Tensor norm;
  if (std::isinf(p)) {
    norm = reduce(cx, p > 0 ? Op::MaxReduce : Op::MinReduce, a, {1}, true);
  } else if (p == 1.0) {
    norm = reduce(cx, Op::SumReduce, a, {1}, true);
  } else if (p == 2.0) {
    norm = unary(cx, Op::Sqrt, reduce(cx, Op::SumReduce, binary(cx, Op::Mul, a, a), {1}, true));
  } else {
    Tensor sum = reduce(cx, Op::SumReduce, binary(cx, Op::Pow, a, constant(cx, ir::Scalar::of_float(p), c)), {1}, true);
    norm = binary(cx, Op::Pow, sum, constant(cx, ir::Scalar::of_float(1.0 / p), c));
  }
  const Tensor norm_d = cast(cx, cast(cx, norm, weight.dtype), DType::F64);
  // referenced[v] = any(indices == v), over the flattened indices.
  const Tensor flat = reshape(cx, indices, {Expr(int64_t{-1})});
  const Tensor rows = unsqueeze(iota(cx, weight.shape()[0], DType::I64), 1);
  const Tensor hits = cast(cx, binary(cx, Op::Eq, rows, unsqueeze(cast(cx, flat, DType::I64), 0)), DType::I64);
  const Tensor referenced = binary(cx, Op::Ne, reduce(cx, Op::MaxReduce, hits, {1}, true),
                                   constant(cx, ir::Scalar::of_int(0), DType::I64));
  const Tensor limit = constant(cx, ir::Scalar::of_float(max_norm), DType::F64);
  const Tensor too_long = binary(cx, Op::And, referenced, binary(cx, Op::Lt, limit, norm_d));
  const Tensor scale = binary(cx, Op::Div, limit, binary(cx, Op::Add, norm_d, constant(cx, ir::Scalar::of_float(1e-7), DType::F64)));
  const Tensor factor = where(cx, too_long, cast(cx, scale, c), constant(cx, ir::Scalar::of_float(1.0), c));
  args.set_output(0, cast(cx, binary(cx, Op::Mul, w, factor), weight.dtype));
}

void translate_index_select(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  Tensor index = args.tensor("index");
  USER_CHECK(index.rank() <= 1) << "index_select index must be 0-d or 1-d, got rank " << index.rank();
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  Tensor flat = index.rank() == 0 ? unsqueeze(index, 0) : index;
  if (self.rank() == 0) return args.set_output(0, self);
  Shape shape = self.shape();
  shape[dim] = flat.shape()[0];
  Tensor out = gather(cx, self, dim, expand(place_index(flat, dim, self.rank()), shape));
  args.set_output(0, out);
}

void translate_gather(NodeArgs& args) {
  Tensor self = args.tensor("self");
  Tensor index = args.tensor("index");
  const int dim = wrap_dim(args.integer("dim"), self.rank());
  // An empty index gathers nothing, whatever its rank (torch skips the rank check for it).
  if (ir::numel(index.shape()).is_constant() && ir::numel(index.shape()).constant_value() == 0)
    return args.set_output(0, constant(args.cx(), ir::Scalar::of_int(0), self.dtype, index.shape()));
  if (self.rank() == 0 || index.rank() == 0) {
    // A 0-d tensor gathers as a 1-element vector (x.gather(-1, topk indices) of a 0-d x).
    const Tensor data = self.rank() == 0 ? unsqueeze(self, 0) : self;
    const Tensor where = index.rank() == 0 ? unsqueeze(index, 0) : index;
    Tensor out = gather(args.cx(), data, self.rank() == 0 ? 0 : dim, where);
    return args.set_output(0, index.rank() == 0 ? squeeze(out, 0) : out);
  }
  args.set_output(0, gather(args.cx(), self, dim, index));
}

// x[..., i, j, ...] (transformers' mask functions index with broadcast aranges). The indexed dims
// merge into one axis M of the data; the data is viewed with the index's broadcast dims in
// front of M (stride 0), so one Gather yields pre + broadcast + post directly.
void translate_index_tensor(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  const std::vector<std::optional<Tensor>> indices = masks_as_positions(cx, args.optional_tensors("indices"));
  const bool zero_d = all_zero_d(indices);
  AdvancedIndex ai = linearize(cx, self, indices);
  const int npre = static_cast<int>(ai.pre.size());
  const int nb = static_cast<int>(ai.broadcast.size());
  Tensor data = ai.indexed.size() == 1 ? self : reshape(cx, self, concat(concat(ai.pre, {numel(ai.indexed)}), ai.post));
  for (int i = 0; i < nb - 1; ++i) data = unsqueeze(data, npre);
  Shape data_shape = concat(concat(ai.pre, Shape(ai.broadcast.begin(), ai.broadcast.end() - 1)),
                            concat({numel(ai.indexed)}, ai.post));
  data = expand(data, data_shape);
  const Shape out_shape = concat(concat(ai.pre, ai.broadcast), ai.post);
  Tensor index = place_index(ai.linear, npre, static_cast<int>(out_shape.size()));
  Tensor out = gather(cx, data, npre + nb - 1, expand(index, out_shape));
  args.set_output(0, zero_d ? squeeze(out, npre) : out);
}

namespace {

// x[mask] = v, the mask over self's dims [first, first + k) and no other index tensor. Where v
// broadcasts over the selected elements, a blend (an all-false mask changes nothing: upstream
// once scattered a mask as row indices 0/1 and wrote row 0); where v holds one row per selected
// element, in order, a Scatter to the positions of the mask's true elements.
void masked_index_put(NodeArgs& args, const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  TranslationContext& cx = args.cx();
  int first = -1;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i]) continue;
    UNSUPPORTED_CHECK(first < 0 && is_mask(indices[i]))
        << "index_put with a boolean mask and other index tensors (x[mask, i] = v) is not supported";
    first = static_cast<int>(i);
  }
  const Tensor mask = cast(cx, *indices[first], DType::Bool);
  const int k = mask.rank();
  const Shape& s = self.shape();
  USER_CHECK(k > 0 && first + k <= self.rank()) << "a " << k << "-d boolean mask at dim " << first
                                                << " of a tensor of shape " << shape_to_string(s);
  const Shape pre(s.begin(), s.begin() + first), masked(s.begin() + first, s.begin() + first + k),
      post(s.begin() + first + k, s.end());
  for (int d = 0; d < k; ++d)
    USER_CHECK(!(mask.shape()[d].is_constant() && masked[d].is_constant()) || mask.shape()[d] == masked[d])
        << "the boolean mask of shape " << shape_to_string(mask.shape()) << " does not match the indexed dims "
        << shape_to_string(masked) << " of a tensor of shape " << shape_to_string(s);
  const bool accumulate = args.boolean("accumulate");
  const Tensor values = cast(cx, args.tensor("values"), self.dtype);
  // v broadcasts to x[mask]'s shape pre + [count] + post; `row_dim` is its dim along count.
  const int row_dim = values.rank() - 1 - static_cast<int>(post.size());
  if (row_dim < 0 || is_one(values.shape()[row_dim])) {
    Shape unit_rows = concat(concat(pre, Shape(k, Expr(int64_t{1}))), post);
    const Shape one_row = concat(concat(pre, {Expr(int64_t{1})}), post);
    Tensor update = expand(reshape(cx, broadcast_to(values, one_row), unit_rows), s);
    if (accumulate) update = binary(cx, Op::Add, self, update);
    Tensor selected = place_index(mask, first, self.rank());
    return args.set_output(0, where(cx, expand(selected, s), update, self));
  }
  const Tensor positions = true_positions(cx, mask);
  const Expr rows = values.shape()[row_dim];
  cx.require_data_symbols(equal(rows, positions.shape()[0]));
  cx.graph().add_assertion(ir::SymbolAssertion{equal(rows, positions.shape()[0]),
                                               "index_put: " + rows.to_string() + " values for the elements a boolean "
                                               "mask selects"});
  const Tensor row_positions{ir::TensorRef{positions.ref.node, ir::View({rows}, {Expr(int64_t{1})}, Expr(int64_t{0}))},
                             DType::I64};
  const Shape flat_shape = concat(concat(pre, {numel(masked)}), post);
  const Shape update_shape = concat(concat(pre, {rows}), post);
  Tensor index = expand(place_index(row_positions, first, static_cast<int>(flat_shape.size())), update_shape);
  Tensor out = scatter(cx, reshape(cx, self, flat_shape), first, index, broadcast_to(values, update_shape), accumulate);
  args.set_output(0, reshape(cx, out, s));
}

}  // namespace

// cache.index_put_([None, None, pos], values) from StaticCache.update: a Scatter along the
// merged indexed axis, values broadcast to the indexed shape. A boolean mask index is its own
// form (masked_index_put).
void translate_index_put(NodeArgs& args) {
  TranslationContext& cx = args.cx();
  Tensor self = args.tensor("self");
  const std::vector<std::optional<Tensor>> indices = args.optional_tensors("indices");
  if (std::any_of(indices.begin(), indices.end(), is_mask)) return masked_index_put(args, self, indices);
  AdvancedIndex ai = linearize(cx, self, indices);
  const bool accumulate = args.boolean("accumulate");
  const int npre = static_cast<int>(ai.pre.size());
  const Expr count = numel(ai.broadcast);
  const Shape flat_shape = concat(concat(ai.pre, {count}), ai.post);
  Tensor linear = ai.broadcast.size() == 1 ? ai.linear : reshape(cx, ai.linear, {count});
  Tensor values = cast(cx, args.tensor("values"), self.dtype);
  if (all_zero_d(indices)) values = unsqueeze(broadcast_to(values, concat(ai.pre, ai.post)), npre);
  values = broadcast_to(values, concat(concat(ai.pre, ai.broadcast), ai.post));
  if (ai.broadcast.size() != 1) values = reshape(cx, values, flat_shape);
  Tensor data = ai.indexed.size() == 1 ? self : reshape(cx, self, concat(concat(ai.pre, {numel(ai.indexed)}), ai.post));
  Tensor index = expand(place_index(linear, npre, static_cast<int>(flat_shape.size())), flat_shape);
  Tensor out = scatter(cx, data, npre, index, values, accumulate);
  args.set_output(0, ai.indexed.size() == 1 ? out : reshape(cx, out, self.shape()));
}

}  // namespace luminal::translator
