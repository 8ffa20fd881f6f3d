#include "translator/tensor_ops.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;
using ir::Shape;

namespace {

bool is_const(const Expr& e, int64_t v) { return e.is_constant() && e.constant_value() == v; }

int integer_bits(DType t) { return static_cast<int>(ir::dtype_size(t)) * 8; }

}  // namespace

// ---- dtypes ----

DType promote_dtypes(DType a, DType b) {
  if (a == b) return a;
  if (ir::is_floating(a) || ir::is_floating(b)) {
    if (!ir::is_floating(a)) return b;
    if (!ir::is_floating(b)) return a;
    if (a == DType::F64 || b == DType::F64) return DType::F64;
    return DType::F32;  // f16 with bf16, or either with f32
  }
  if (ir::is_bool(a)) return b;
  if (ir::is_bool(b)) return a;
  // Both integers. u8 is the only unsigned one: with a signed type it needs a wider signed type.
  if (a == DType::U8 || b == DType::U8) {
    DType s = a == DType::U8 ? b : a;
    return integer_bits(s) > 8 ? s : DType::I16;
  }
  return integer_bits(a) >= integer_bits(b) ? a : b;
}

namespace {
// torch's ResultTypeState (aten/src/ATen/native/TypeProperties.cpp): three promotion lanes.
struct ResultTypeState {
  std::optional<DType> dim_result, zero_result, wrapped_result;

  static void update(std::optional<DType>& lane, DType t) { lane = lane ? promote_dtypes(*lane, t) : t; }

  // combine_categories(higher, lower): the lower lane only matters in a higher category.
  static std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (!lower) return higher;
    if (ir::is_floating(*higher)) return higher;
    if (ir::is_bool(*higher) || ir::is_floating(*lower)) return promote_dtypes(*higher, *lower);
    return higher;
  }

  DType result() const {
    std::optional<DType> r = combine(dim_result, combine(zero_result, wrapped_result));
    INTERNAL_CHECK(r.has_value()) << "result_type of no operands";
    return *r;
  }
};
}  // namespace

DType result_type(const std::vector<Tensor>& tensors, const std::vector<ScalarKind>& scalars) {
  ResultTypeState state;
  for (const Tensor& t : tensors) ResultTypeState::update(t.rank() == 0 ? state.zero_result : state.dim_result, t.dtype);
  for (ScalarKind k : scalars) {
    DType t = k == ScalarKind::Bool ? DType::Bool : k == ScalarKind::Int ? DType::I64 : DType::F32;
    ResultTypeState::update(state.wrapped_result, t);
  }
  return state.result();
}

DType promote_types(const Tensor& a, const Tensor& b) { return result_type({a, b}, {}); }

DType promote_with_scalar(const Tensor& a, const ir::Scalar& s) {
  return result_type({a}, {s.is_integer ? ScalarKind::Int : ScalarKind::Float});
}

DType compute_dtype(DType t) { return t == DType::F16 || t == DType::BF16 ? DType::F32 : t; }

DType result_type(const std::vector<Operand>& operands) {
  std::vector<Tensor> tensors;
  std::vector<ScalarKind> scalars;
  for (const Operand& o : operands) {
    if (o.is_number) scalars.push_back(o.kind);
    else tensors.push_back(*o.tensor);
  }
  return result_type(tensors, scalars);
}

Tensor materialize(TranslationContext& cx, const Operand& operand, DType dtype) {
  if (operand.tensor) return cast(cx, *operand.tensor, dtype);
  return constant(cx, operand.scalar, dtype);
}

Tensor cast(TranslationContext& cx, const Tensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  ir::Node n;
  n.op = ir::Op::Cast;
  n.dtype = dtype;
  n.shape = t.shape();
  n.inputs = {t.ref};
  return cx.add(std::move(n));
}

// ---- sources ----

Tensor constant(TranslationContext& cx, const ir::Scalar& value, DType dtype, const Shape& shape) {
  ir::Node n;
  n.op = ir::Op::Constant;
  n.dtype = dtype;
  n.shape = shape;
  if (ir::is_floating(dtype)) {
    n.scalar = ir::Scalar::of_float(value.as_double());
  } else if (ir::is_bool(dtype)) {
    n.scalar = ir::Scalar::of_int(value.as_double() != 0.0 ? 1 : 0);
  } else if (value.is_integer) {
    n.scalar = ir::Scalar::of_int(value.integer);
  } else {
    USER_CHECK(std::isfinite(value.floating)) << "cannot convert " << value.to_string() << " to " << ir::dtype_name(dtype);
    n.scalar = ir::Scalar::of_int(static_cast<int64_t>(std::trunc(value.floating)));
  }
  return cx.add(std::move(n));
}

Tensor iota(TranslationContext& cx, const ir::Shape& shape, int axis, DType dtype) {
  ir::Node n;
  n.op = ir::Op::Iota;
  n.dtype = dtype;
  n.shape = shape;
  n.axis = axis;
  return cx.add(std::move(n));
}

Tensor iota(TranslationContext& cx, const Expr& length, DType dtype) { return iota(cx, {length}, 0, dtype); }

Tensor size_value(TranslationContext& cx, const Expr& size, DType dtype) {
  const auto both = [&](Op op) {
    return binary(cx, op, size_value(cx, size.operands()[0], DType::I64),
                  size_value(cx, size.operands()[1], DType::I64));
  };
  Tensor value;
  switch (size.kind()) {
    case Expr::Kind::Constant: return constant(cx, ir::Scalar::of_int(size.constant_value()), dtype);
    case Expr::Kind::Symbol:
      if (const Tensor* data = cx.data_value(size.symbol_name())) {
        value = reshape(cx, *data, {});
      } else {
        // An input's size: the IR has no symbolic scalar, so count it (sizes are never negative).
        value = reduce(cx, Op::SumReduce, constant(cx, ir::Scalar::of_int(1), DType::I64, {size}), {0}, false);
      }
      break;
    case Expr::Kind::Add: value = both(Op::Add); break;
    case Expr::Kind::Mul: value = both(Op::Mul); break;
    case Expr::Kind::Max: value = both(Op::Max); break;
    case Expr::Kind::Min: value = both(Op::Min); break;
    case Expr::Kind::FloorDiv:
    case Expr::Kind::Mod: {
      const Tensor a = size_value(cx, size.operands()[0], DType::I64);
      const Tensor b = size_value(cx, size.operands()[1], DType::I64);
      const Tensor q = integer_floor_div(cx, a, b);
      value = size.kind() == Expr::Kind::FloorDiv ? q : binary(cx, Op::Sub, a, binary(cx, Op::Mul, q, b));
      break;
    }
  }
  return cast(cx, value, dtype);
}

// ---- movement ----

int wrap_dim(int64_t dim, int rank) {
  const int64_t extent = std::max(rank, 1);  // a 0-d tensor accepts dim 0 and -1, as torch
  USER_CHECK(dim >= -extent && dim < extent)
      << "dimension " << dim << " is out of range for a tensor of rank " << rank;
  return static_cast<int>(dim < 0 ? dim + extent : dim);
}

namespace {
Tensor with_view(const Tensor& t, ir::View view) { return Tensor{ir::TensorRef{t.ref.node, std::move(view)}, t.dtype}; }
}  // namespace

Tensor permute(const Tensor& t, const std::vector<int>& order) {
  USER_CHECK(static_cast<int>(order.size()) == t.rank())
      << "permute of a rank-" << t.rank() << " tensor needs " << t.rank() << " dims, got " << order.size();
  std::vector<int> wrapped;
  std::vector<bool> seen(order.size(), false);
  for (int d : order) {
    int w = wrap_dim(d, t.rank());
    USER_CHECK(!seen[w]) << "permute repeats dimension " << d;
    seen[w] = true;
    wrapped.push_back(w);
  }
  return with_view(t, t.ref.view.permute(wrapped));
}

Tensor transpose(const Tensor& t, int dim0, int dim1) {
  if (t.rank() == 0) return t;
  std::vector<int> order(t.rank());
  for (int i = 0; i < t.rank(); ++i) order[i] = i;
  std::swap(order[wrap_dim(dim0, t.rank())], order[wrap_dim(dim1, t.rank())]);
  return with_view(t, t.ref.view.permute(order));
}

Tensor expand(const Tensor& t, const Shape& shape) {
  USER_CHECK(static_cast<int>(shape.size()) >= t.rank())
      << "expand to " << shape_to_string(shape) << " has fewer dims than the tensor " << shape_to_string(t.shape());
  const size_t lead = shape.size() - t.rank();
  Shape target = shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!is_const(shape[i], -1)) continue;
    USER_CHECK(i >= lead) << "expand: -1 is not allowed for the new leading dim " << i;
    target[i] = t.shape()[i - lead];
  }
  for (int i = 0; i < t.rank(); ++i) {
    const Expr& from = t.shape()[i];
    const Expr& to = target[lead + i];
    USER_CHECK(from == to || is_const(from, 1) || !(from.is_constant() && to.is_constant()))
        << "expand: dim " << i << " of size " << from.to_string() << " cannot become " << to.to_string();
  }
  // A symbolic dim torch proved equal to the target but written differently keeps its size.
  for (int i = 0; i < t.rank(); ++i)
    if (!is_const(t.shape()[i], 1)) target[lead + i] = t.shape()[i];
  return with_view(t, t.ref.view.expand(target));
}

Tensor unsqueeze(const Tensor& t, int dim) { return with_view(t, t.ref.view.unsqueeze(wrap_dim(dim, t.rank() + 1))); }

Tensor squeeze(const Tensor& t, int dim) {
  if (t.rank() == 0) return t;
  int d = wrap_dim(dim, t.rank());
  if (!is_const(t.shape()[d], 1)) return t;
  return with_view(t, t.ref.view.squeeze(d));
}

Tensor slice(const Tensor& t, int dim, std::optional<Expr> start, std::optional<Expr> end, int64_t step) {
  USER_CHECK(step > 0) << "slice step must be positive, got " << step;
  const int d = wrap_dim(dim, t.rank());
  const Expr size = t.shape()[d];
  // torch clamps like Python: negative bounds count from the end, then both clamp to [0, size].
  auto normalize = [&](std::optional<Expr> bound, bool is_start) -> Expr {
    if (!bound) return is_start ? Expr(int64_t{0}) : size;
    if (bound->is_constant()) {
      int64_t v = bound->constant_value();
      if (size.is_constant()) {
        int64_t n = size.constant_value();
        if (v < 0) v += n;
        return Expr(std::clamp<int64_t>(v, 0, n));
      }
      if (v >= 0) {
        // int64 max (from x[a:]) and other huge ends mean "to the end".
        return v >= (int64_t{1} << 62) ? size : (v == 0 ? Expr(int64_t{0}) : min(*bound, size));
      }
      return max(Expr(int64_t{0}), size + *bound);
    }
    return *bound == size ? size : min(*bound, size);
  };
  Expr s = normalize(start, true);
  Expr e = normalize(end, false);
  if (s.is_constant() && e.is_constant() && e.constant_value() < s.constant_value()) e = s;
  // x[:, a:] with int64-max ends are everywhere in HF code; the whole dim keeps its size as is.
  if (is_const(s, 0) && e == size && step == 1) return t;
  return with_view(t, t.ref.view.slice(d, s, e, step));
}

Tensor select(const Tensor& t, int dim, const Expr& index) {
  const int d = wrap_dim(dim, t.rank());
  const Expr& size = t.shape()[d];
  Expr i = index;
  if (index.is_constant() && index.constant_value() < 0) {
    i = size + index;
  }
  if (i.is_constant() && size.is_constant()) {
    USER_CHECK(i.constant_value() >= 0 && i.constant_value() < size.constant_value())
        << "select: index " << index.to_string() << " is out of range for dim " << d << " of size " << size.to_string();
  }
  return with_view(t, t.ref.view.select(d, i));
}

namespace {
// A product as its constant coefficient and its other factors (s0*64 -> 64, [s0]).
void split_product(const Expr& e, int64_t& coefficient, std::vector<Expr>& factors) {
  if (e.is_constant()) {
    coefficient *= e.constant_value();
  } else if (e.kind() == Expr::Kind::Mul) {
    split_product(e.operands()[0], coefficient, factors);
    split_product(e.operands()[1], coefficient, factors);
  } else {
    factors.push_back(e);
  }
}

// The size a -1 stands for: numel / (product of the other dims), cancelling symbolic factors
// so that a view of [1, s, 64] as [1, s, -1, 16] gets 4 rather than (64*s) // (16*s).
Expr infer_dim(const Shape& from, const Shape& known) {
  int64_t num = 1, den = 1;
  std::vector<Expr> num_factors, den_factors;
  for (const Expr& d : from) split_product(d, num, num_factors);
  for (const Expr& d : known) split_product(d, den, den_factors);
  for (const Expr& f : den_factors) {
    auto it = std::find(num_factors.begin(), num_factors.end(), f);
    if (it == num_factors.end()) return floordiv(numel(from), numel(known));
    num_factors.erase(it);
  }
  USER_CHECK(den != 0 && num % den == 0) << "cannot reshape " << shape_to_string(from) << " with "
                                         << shape_to_string(known) << " and one inferred (-1) dim";
  Expr result(num / den);
  for (const Expr& f : num_factors) result = result * f;
  return result;
}
}  // namespace

Tensor reshape(TranslationContext& cx, const Tensor& t, const std::vector<Expr>& shape) {
  Shape target = shape;
  int inferred = -1;
  Shape known;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (is_const(shape[i], -1)) {
      USER_CHECK(inferred < 0) << "reshape to " << shape_to_string(shape) << " has more than one -1";
      inferred = static_cast<int>(i);
    } else {
      USER_CHECK(!(shape[i].is_constant() && shape[i].constant_value() < 0))
          << "reshape to " << shape_to_string(shape) << ": negative size";
      known.push_back(shape[i]);
    }
  }
  if (inferred >= 0) target[inferred] = infer_dim(t.shape(), known);
  const Expr from_numel = numel(t.shape()), to_numel = numel(target);
  USER_CHECK(!(from_numel.is_constant() && to_numel.is_constant()) ||
             from_numel.constant_value() == to_numel.constant_value())
      << "cannot reshape a tensor of shape " << shape_to_string(t.shape()) << " to " << shape_to_string(target);
  if (std::optional<ir::View> v = t.ref.view.reshape(target)) return with_view(t, *v);
  Tensor dense = contiguous(cx, t);
  std::optional<ir::View> v = dense.ref.view.reshape(target);
  INTERNAL_CHECK(v.has_value()) << "reshape of a contiguous tensor failed";
  return with_view(dense, *v);
}

Tensor contiguous(TranslationContext& cx, const Tensor& t) {
  if (t.ref.view.is_contiguous()) return t;
  ir::Node n;
  n.op = ir::Op::Copy;
  n.dtype = t.dtype;
  n.shape = t.shape();
  n.inputs = {t.ref};
  return cx.add(std::move(n));
}

namespace {

// Two sizes an op needs equal, one symbolic and one constant: torch.export specialises a backed
// symbol it proves equal to a constant, so a real archive never pairs them; an edited one does,
// and trusting it would read past a buffer. Unbacked symbols (u0: a size from tensor data) are
// the exception: torch checks those at run time and keeps them symbolic.
void check_not_a_specialised_pair(const Expr& a, const Expr& b, const std::string& what) {
  if (a.is_constant() == b.is_constant()) return;
  std::vector<std::string> symbols;
  (a.is_constant() ? b : a).collect_symbols(symbols);
  for (const std::string& s : symbols)
    if (!s.empty() && s[0] == 'u') return;
  USER_ERROR() << what << ": sizes " << a.to_string() << " and " << b.to_string()
               << " must be equal, but torch.export would have specialised the symbol to the constant; the archive's "
                  "shapes are inconsistent (edited or damaged?): re-export it";
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const bool has_a = i < a.size(), has_b = i < b.size();
    const Expr da = has_a ? a[a.size() - 1 - i] : Expr(int64_t{1});
    const Expr db = has_b ? b[b.size() - 1 - i] : Expr(int64_t{1});
    Expr& o = out[rank - 1 - i];
    if (da == db || is_const(db, 1)) {
      o = da;
    } else if (is_const(da, 1)) {
      o = db;
    } else {
      USER_CHECK(!(da.is_constant() && db.is_constant()))
          << "shapes " << shape_to_string(a) << " and " << shape_to_string(b) << " cannot be broadcast together";
      check_not_a_specialised_pair(da, db, "broadcasting " + shape_to_string(a) + " with " + shape_to_string(b));
      // torch proved the two equal when it traced; keep the simpler (constant) form.
      o = db.is_constant() ? db : da;
    }
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  return expand(t, shape);
}

// ---- elementwise ----

// Floor division of integers from C's truncating Div: q - 1 where the remainder is non-zero and
// its sign differs from the divisor's (Python // semantics, which torch's "floor" mode uses).
Tensor integer_floor_div(TranslationContext& cx, const Tensor& a, const Tensor& b) {
  Tensor q = binary(cx, Op::Div, a, b);
  Tensor r = binary(cx, Op::Mod, a, b);
  Tensor zero = constant(cx, ir::Scalar::of_int(0), a.dtype);
  Tensor inexact = binary(cx, Op::Ne, r, zero);
  Tensor signs_differ = binary(cx, Op::Ne, binary(cx, Op::Lt, r, zero), binary(cx, Op::Lt, b, zero));
  Tensor adjust = cast(cx, binary(cx, Op::And, inexact, signs_differ), a.dtype);
  return binary(cx, Op::Sub, q, adjust);
}

Tensor unary(TranslationContext& cx, ir::Op op, const Tensor& a) {
  INTERNAL_CHECK(op_has(op, ir::kUnary) && op != ir::Op::Cast) << ir::op_name(op) << " is not a unary op";
  ir::Node n;
  n.op = op;
  n.dtype = op == ir::Op::IsNan ? DType::Bool : a.dtype;
  n.shape = a.shape();
  n.inputs = {a.ref};
  return cx.add(std::move(n));
}

Tensor binary(TranslationContext& cx, ir::Op op, const Tensor& a, const Tensor& b) {
  INTERNAL_CHECK(op_has(op, ir::kBinary)) << ir::op_name(op) << " is not a binary op";
  INTERNAL_CHECK(a.dtype == b.dtype) << ir::op_name(op) << " of " << ir::dtype_name(a.dtype) << " and "
                                     << ir::dtype_name(b.dtype);
  Shape shape = broadcast_shapes(a.shape(), b.shape());
  ir::Node n;
  n.op = op;
  n.dtype = op_has(op, ir::kComparison) ? DType::Bool : a.dtype;
  n.shape = shape;
  n.inputs = {broadcast_to(a, shape).ref, broadcast_to(b, shape).ref};
  return cx.add(std::move(n));
}

Tensor where(TranslationContext& cx, const Tensor& cond, const Tensor& a, const Tensor& b) {
  INTERNAL_CHECK(cond.dtype == DType::Bool) << "where condition is " << ir::dtype_name(cond.dtype);
  INTERNAL_CHECK(a.dtype == b.dtype) << "where of " << ir::dtype_name(a.dtype) << " and " << ir::dtype_name(b.dtype);
  Shape shape = broadcast_shapes(cond.shape(), broadcast_shapes(a.shape(), b.shape()));
  ir::Node n;
  n.op = ir::Op::Where;
  n.dtype = a.dtype;
  n.shape = shape;
  n.inputs = {broadcast_to(cond, shape).ref, broadcast_to(a, shape).ref, broadcast_to(b, shape).ref};
  return cx.add(std::move(n));
}

// ---- reductions ----

namespace {

// A reduction's `dims` (empty = all dims) wrapped, ascending, each once.
std::vector<int> reduced_axes(int rank, const std::vector<int>& dims) {
  std::vector<int> axes;
  for (int d : dims) axes.push_back(wrap_dim(d, rank));
  if (dims.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

}  // namespace

Tensor reduce(TranslationContext& cx, ir::Op op, const Tensor& t, const std::vector<int>& dims, bool keepdim) {
  INTERNAL_CHECK(op_has(op, ir::kReduction)) << ir::op_name(op) << " is not a reduction";
  if (t.rank() == 0) return t;  // reducing a scalar over dim 0/-1 or all dims is the scalar itself
  const std::vector<int> axes = reduced_axes(t.rank(), dims);
  // A chain of f16/bf16 nodes would round between axes (a bf16 sum over a sliced H and W was
  // 0.13 off eager's); torch accumulates sums and products in f32 and rounds once. Max and min
  // are exact in any dtype.
  const bool widen = axes.size() > 1 && ir::is_half(t.dtype) && (op == Op::SumReduce || op == Op::ProdReduce);
  Tensor out = widen ? cast(cx, t, compute_dtype(t.dtype)) : t;
  // The last axis first: in a dense tensor it is the innermost, so the first (and largest) pass
  // reduces contiguous rows, and the later ones read its much smaller result (channel_mean, a
  // mean over (0, 2, 3) of NCHW, took 292 us this way against 502 us from axis 0 up).
  for (auto axis_it = axes.rbegin(); axis_it != axes.rend(); ++axis_it) {
    const int axis = *axis_it;
    ir::Node n;
    n.op = op;
    n.dtype = out.dtype;
    n.shape = out.shape();
    n.shape[axis] = Expr(int64_t{1});
    n.axis = axis;
    n.inputs = {out.ref};
    out = cx.add(std::move(n));
  }
  if (widen) out = cast(cx, out, t.dtype);
  if (!keepdim)
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) out = with_view(out, out.ref.view.squeeze(*it));
  return out;
}

MergedReduction merge_reduced_dims(const Tensor& t, const std::vector<int>& dims) {
  MergedReduction m{t, {}, t.shape(), {}};
  if (t.rank() == 0) return m;  // reduce() gives a scalar back as it is
  m.dims = reduced_axes(t.rank(), dims);
  for (int d : m.dims) m.keepdim_shape[d] = Expr(int64_t{1});
  m.axes = m.dims;
  Shape merged_shape;
  std::vector<int> merged_axes;
  for (int d = 0; d < t.rank(); ++d) {
    const bool reduced = std::binary_search(m.dims.begin(), m.dims.end(), d);
    const bool follows_reduced = d > 0 && std::binary_search(m.dims.begin(), m.dims.end(), d - 1);
    if (reduced && follows_reduced) {
      merged_shape.back() = merged_shape.back() * t.shape()[d];
      continue;
    }
    if (reduced) merged_axes.push_back(static_cast<int>(merged_shape.size()));
    merged_shape.push_back(t.shape()[d]);
  }
  if (merged_axes.size() == m.dims.size()) return m;
  if (std::optional<ir::View> v = t.ref.view.reshape(merged_shape)) {
    m.input = with_view(t, *v);
    m.axes = std::move(merged_axes);
  }
  return m;
}

Tensor MergedReduction::restore(const Tensor& reduced, bool keepdim) const {
  Tensor out = reduced;
  if (out.shape() != keepdim_shape) {
    std::optional<ir::View> v = out.ref.view.reshape(keepdim_shape);
    INTERNAL_CHECK(v.has_value()) << "viewing a merged reduction's result in its input's rank failed";
    out = with_view(out, *v);
  }
  if (!keepdim)
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) out = with_view(out, out.ref.view.squeeze(*it));
  return out;
}

// ---- scans ----

Tensor cumsum(TranslationContext& cx, const Tensor& t, int axis) {
  INTERNAL_CHECK(t.rank() >= 1 && t.dtype != DType::Bool)
      << "cumsum of a " << t.rank() << "-d " << ir::dtype_name(t.dtype)
      << " tensor: the caller casts and keeps 0-d apart";
  ir::Node n;
  n.op = ir::Op::CumSum;
  n.dtype = t.dtype;
  n.shape = t.shape();
  n.axis = wrap_dim(axis, t.rank());
  n.inputs = {t.ref};
  return cx.add(std::move(n));
}

// ---- contraction ----

Tensor matmul(TranslationContext& cx, const Tensor& a, const Tensor& b) {
  USER_CHECK(a.rank() >= 1 && b.rank() >= 1) << "matmul needs operands of rank >= 1, got " << a.rank() << " and "
                                             << b.rank();
  USER_CHECK(a.dtype == b.dtype) << "matmul of " << ir::dtype_name(a.dtype) << " and " << ir::dtype_name(b.dtype);
  const bool a_vector = a.rank() == 1, b_vector = b.rank() == 1;
  Tensor lhs = a_vector ? unsqueeze(a, 0) : a;
  Tensor rhs = b_vector ? unsqueeze(b, 1) : b;
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  const Expr& k_lhs = ls[ls.size() - 1];
  const Expr& k_rhs = rs[rs.size() - 2];
  USER_CHECK(k_lhs == k_rhs || !(k_lhs.is_constant() && k_rhs.is_constant()))
      << "matmul: shapes " << shape_to_string(a.shape()) << " and " << shape_to_string(b.shape())
      << " cannot be multiplied";
  check_not_a_specialised_pair(k_lhs, k_rhs,
                               "matmul of " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  Shape batch = broadcast_shapes(Shape(ls.begin(), ls.end() - 2), Shape(rs.begin(), rs.end() - 2));
  Shape lhs_shape = batch, rhs_shape = batch, out_shape = batch;
  lhs_shape.insert(lhs_shape.end(), ls.end() - 2, ls.end());
  rhs_shape.insert(rhs_shape.end(), {k_lhs, rs.back()});
  out_shape.insert(out_shape.end(), {ls[ls.size() - 2], rs.back()});
  ir::Node n;
  n.op = ir::Op::Matmul;
  n.dtype = a.dtype;
  n.shape = out_shape;
  n.inputs = {broadcast_to(lhs, lhs_shape).ref, broadcast_to(rhs, rhs_shape).ref};
  Tensor out = cx.add(std::move(n));
  if (b_vector) out = with_view(out, out.ref.view.squeeze(out.rank() - 1));
  if (a_vector) out = with_view(out, out.ref.view.squeeze(out.rank() - (b_vector ? 1 : 2)));
  return out;
}

Tensor grouped_matmul(TranslationContext& cx, const Tensor& a, const Tensor& b, const Tensor& offs) {
  INTERNAL_CHECK(a.rank() == 2 && b.rank() == 3 && offs.rank() == 1 && a.dtype == b.dtype && ir::is_floating(a.dtype))
      << "grouped matmul of " << shape_to_string(a.shape()) << " " << ir::dtype_name(a.dtype) << " x "
      << shape_to_string(b.shape()) << " " << ir::dtype_name(b.dtype);
  ir::Node n;
  n.op = ir::Op::GroupedMatmul;
  n.dtype = a.dtype;
  n.shape = {a.shape()[0], b.shape()[2]};
  n.inputs = {a.ref, b.ref, cast(cx, offs, DType::I64).ref};
  return cx.add(std::move(n));
}

// ---- indexing ----

Tensor index_along(const Tensor& positions, int dim, ir::Shape shape) {
  Tensor index = positions;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d)
    if (d != dim) index = unsqueeze(index, d);
  shape[dim] = positions.shape()[0];
  return expand(index, shape);
}

Tensor gather(TranslationContext& cx, const Tensor& data, int axis, const Tensor& index) {
  USER_CHECK(index.rank() == data.rank()) << "gather: index of rank " << index.rank() << " for data of rank "
                                          << data.rank();
  USER_CHECK(ir::is_integral(index.dtype)) << "gather: index must be an integer tensor, got "
                                           << ir::dtype_name(index.dtype);
  ir::Node n;
  n.op = ir::Op::Gather;
  n.dtype = data.dtype;
  n.shape = index.shape();
  n.axis = wrap_dim(axis, data.rank());
  n.inputs = {data.ref, cast(cx, index, DType::I64).ref};
  return cx.add(std::move(n));
}

Tensor scatter(TranslationContext& cx, const Tensor& data, int axis, const Tensor& index, const Tensor& src,
               bool accumulate) {
  USER_CHECK(ir::is_integral(index.dtype)) << "scatter: index must be an integer tensor, got "
                                           << ir::dtype_name(index.dtype);
  INTERNAL_CHECK(index.shape() == src.shape()) << "scatter: index " << shape_to_string(index.shape()) << " and src "
                                               << shape_to_string(src.shape()) << " differ";
  ir::Node n;
  n.op = ir::Op::Scatter;
  n.dtype = data.dtype;
  n.shape = data.shape();
  n.axis = wrap_dim(axis, data.rank());
  n.accumulate = accumulate;
  n.inputs = {data.ref, cast(cx, index, DType::I64).ref, cast(cx, src, data.dtype).ref};
  return cx.add(std::move(n));
}

Tensor true_positions(TranslationContext& cx, const Tensor& mask) {
  INTERNAL_CHECK(mask.dtype == DType::Bool) << "true_positions of a " << ir::dtype_name(mask.dtype) << " mask";
  const Expr n = numel(mask.shape());
  const Tensor flat = reshape(cx, mask, {n});
  const Tensor ones = cast(cx, flat, DType::I64);
  const std::string count = cx.fresh_symbol("nz");
  cx.bind_data_value(count, reduce(cx, Op::SumReduce, ones, {0}, /*keepdim=*/false));
  // The rank of each true element among them; false elements go to a spare last slot.
  const Tensor rank = binary(cx, Op::Sub, cumsum(cx, ones, 0), constant(cx, ir::Scalar::of_int(1), DType::I64));
  const Tensor slot = where(cx, flat, rank, size_value(cx, n, DType::I64));
  const Tensor slots = constant(cx, ir::Scalar::of_int(0), DType::I64, {n + Expr(int64_t{1})});
  const Tensor positions = scatter(cx, slots, 0, slot, iota(cx, n, DType::I64), /*accumulate=*/false);
  const ir::View first_count({Expr::symbol(count)}, {Expr(int64_t{1})}, Expr(int64_t{0}));
  return Tensor{ir::TensorRef{positions.ref.node, first_count}, DType::I64};
}

Tensor nonzero(TranslationContext& cx, const Tensor& x) {
  const Tensor mask = binary(cx, Op::Ne, x, constant(cx, ir::Scalar::of_int(0), x.dtype));
  const Tensor positions = true_positions(cx, mask);
  const Expr count = positions.shape()[0];
  const int rank = x.rank();
  const Shape shape = {count, Expr(int64_t{rank})};
  Tensor coordinates = constant(cx, ir::Scalar::of_int(0), DType::I64, shape);
  if (rank == 0) return coordinates;
  // Coordinate d of flat position p is (p / stride_d) % size_d (p >= 0: truncation is floor).
  const Tensor p = expand(unsqueeze(positions, 1), shape);
  const Tensor column = iota(cx, shape, 1, DType::I64);
  Expr stride(int64_t{1});
  for (int d = rank - 1; d >= 0; --d) {
    Tensor value = is_one(stride) ? p : binary(cx, Op::Div, p, size_value(cx, stride, DType::I64));
    if (d > 0) value = binary(cx, Op::Mod, value, size_value(cx, x.shape()[d], DType::I64));
    const Tensor is_d = binary(cx, Op::Eq, column, constant(cx, ir::Scalar::of_int(d), DType::I64));
    coordinates = where(cx, is_d, value, coordinates);
    stride = stride * x.shape()[d];
  }
  return coordinates;
}

}  // namespace luminal::translator
