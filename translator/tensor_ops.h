// Building blocks for op handlers: each builds IR nodes (or only a new view) in the context
// and returns the result as a Tensor. Broadcasting, type promotion and dim wrapping follow
// torch exactly; handlers compose these rather than adding IR nodes by hand.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "translator/context.h"

namespace luminal::translator {

// ---- dtypes ----
// A Python number's category, which is all torch's promotion looks at for wrapped scalars.
enum class ScalarKind { Bool, Int, Float };
// torch.promote_types: the smallest dtype both convert to (f16 with bf16 is f32, u8 with i8 i16).
ir::DType promote_dtypes(ir::DType a, ir::DType b);
// torch.result_type over tensors and Python scalars: dimensioned tensors decide within a
// category, 0-d tensors and then scalars only when they are of a higher category (bool < int <
// float); a float scalar means the default dtype f32.
ir::DType result_type(const std::vector<Tensor>& tensors, const std::vector<ScalarKind>& scalars);
// torch.result_type for two tensors (dim-less 0-d tensors count as scalars of their category,
// as torch's promotion does: a 0-d f64 tensor does not promote an f32 tensor).
ir::DType promote_types(const Tensor& a, const Tensor& b);
// torch.result_type(tensor, python_scalar): a float scalar promotes integer/bool tensors to the
// default float dtype (f32); an int scalar promotes bool to i64; otherwise the tensor's dtype.
ir::DType promote_with_scalar(const Tensor& a, const ir::Scalar& s);
Tensor cast(TranslationContext& cx, const Tensor& t, ir::DType dtype);  // no node if equal
// The dtype a composition of several primitives computes in: f32 for f16/bf16, as torch's CPU
// kernels upcast once and round once (softmax, layer_norm, mean, gelu), else `t` itself.
ir::DType compute_dtype(ir::DType t);

// An operand of an elementwise op: a tensor, or a Python number that export inlined
// (mul.Tensor(x, 2.0)). A number promotes as a wrapped scalar; a symbolic size used as a
// number is a Python int whose value lives in `tensor` (see size_value).
struct Operand {
  std::optional<Tensor> tensor;
  bool is_number = false;
  ir::Scalar scalar;
  ScalarKind kind = ScalarKind::Int;
};
ir::DType result_type(const std::vector<Operand>& operands);
// The operand as a tensor of `dtype` (numbers become 0-d constants).
Tensor materialize(TranslationContext& cx, const Operand& operand, ir::DType dtype);

// ---- sources ----
// The value is converted to `dtype` as torch would (floats to integers truncate, to bool != 0).
Tensor constant(TranslationContext& cx, const ir::Scalar& value, ir::DType dtype, const ir::Shape& shape = {});
// The index along `axis` at every position of `shape`; the 1-d form is 0..length-1.
Tensor iota(TranslationContext& cx, const ir::Shape& shape, int axis, ir::DType dtype);
Tensor iota(TranslationContext& cx, const ir::Expr& length, ir::DType dtype);
// A 0-d tensor holding the value of a symbolic int (`x * seq_len`, `x * t.item()`): its
// arithmetic over the values of its symbols, an input size counted as a sum of ones (the IR has
// no symbolic scalar), a data value read from its tensor.
Tensor size_value(TranslationContext& cx, const ir::Expr& size, ir::DType dtype);

// ---- movement (views only, unless stated) ----
int wrap_dim(int64_t dim, int rank);  // UserError when out of range
Tensor permute(const Tensor& t, const std::vector<int>& order);
Tensor transpose(const Tensor& t, int dim0, int dim1);
Tensor expand(const Tensor& t, const ir::Shape& shape);  // torch.expand; -1 keeps the dim
Tensor unsqueeze(const Tensor& t, int dim);
Tensor squeeze(const Tensor& t, int dim);  // no-op when the dim is not 1, as torch
Tensor slice(const Tensor& t, int dim, std::optional<ir::Expr> start, std::optional<ir::Expr> end, int64_t step);
Tensor select(const Tensor& t, int dim, const ir::Expr& index);
// torch.reshape: a view when the strides allow, else a Copy then a view. -1 is inferred.
Tensor reshape(TranslationContext& cx, const Tensor& t, const std::vector<ir::Expr>& shape);
Tensor contiguous(TranslationContext& cx, const Tensor& t);  // a Copy node unless already dense
ir::Shape broadcast_shapes(const ir::Shape& a, const ir::Shape& b);  // UserError if incompatible
Tensor broadcast_to(const Tensor& t, const ir::Shape& shape);

// ---- elementwise (inputs broadcast; no promotion: cast first) ----
Tensor unary(TranslationContext& cx, ir::Op op, const Tensor& a);
Tensor binary(TranslationContext& cx, ir::Op op, const Tensor& a, const Tensor& b);  // same dtype
// Floor division of integers (Python's //), from the IR's truncating Div.
Tensor integer_floor_div(TranslationContext& cx, const Tensor& a, const Tensor& b);
Tensor where(TranslationContext& cx, const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- reductions ----
// Reduces over each dim in `dims` (empty = all dims). keepdim as torch.
Tensor reduce(TranslationContext& cx, ir::Op op, const Tensor& t, const std::vector<int>& dims, bool keepdim);

// A reduction's input with each run of adjacent reduced dims viewed as one dim, where its view
// allows that without a copy (a contiguous NCHW tensor's H and W): mean over (0, 2, 3) then
// reduces rows of H*W elements once, where a dim at a time made a pass over rows as short as W.
// Callers merge the input before their elementwise work (a cast, x - mean) so that it fuses into
// the reduction as usual, reduce `axes` with keepdim=true, and restore() the result.
struct MergedReduction {
  Tensor input;           // the input, viewed merged (or as it was, when nothing merges)
  std::vector<int> axes;  // the reduced dims of that view, ascending
  ir::Shape keepdim_shape;  // the input's shape with 1 at each reduced dim
  std::vector<int> dims;  // the input's reduced dims, ascending
  // A result of reducing `input` over `axes` with keepdim=true, in the input's rank
  // (keepdim) or without the reduced dims.
  Tensor restore(const Tensor& reduced, bool keepdim) const;
};
// `dims` as reduce() takes them (empty = all dims).
MergedReduction merge_reduced_dims(const Tensor& t, const std::vector<int>& dims);

// ---- scans ----
// torch.cumsum along `axis` in t's own dtype, which must not be bool (CumSum in ir/ops.def; the
// caller casts first for cumsum's dtype and promotion rules). Rank >= 1.
Tensor cumsum(TranslationContext& cx, const Tensor& t, int axis);

// ---- contraction ----
// torch.matmul semantics for rank >= 1 operands (1-d operands are unsqueezed then squeezed).
Tensor matmul(TranslationContext& cx, const Tensor& a, const Tensor& b);
// a [S, K] x b [G, K, N] with row groups ending at offs [G] -> [S, N] (GroupedMatmul in
// ir/ops.def); a and b of one floating dtype, offs of any integer dtype.
Tensor grouped_matmul(TranslationContext& cx, const Tensor& a, const Tensor& b, const Tensor& offs);

// ---- indexing ----
Tensor gather(TranslationContext& cx, const Tensor& data, int axis, const Tensor& index);
// `positions` (a 1-d i64 tensor of length n) as a Gather/Scatter index along `dim` for a
// tensor of `shape`: [1, .., n, .., 1] expanded to `shape` with dim's size replaced by n.
Tensor index_along(const Tensor& positions, int dim, ir::Shape shape);
Tensor scatter(TranslationContext& cx, const Tensor& data, int axis, const Tensor& index, const Tensor& src,
               bool accumulate);
// The flat (row-major) positions of `mask`'s true elements, in order: a view of length `count`,
// a data symbol the runtime binds when the mask is computed. A scan of the mask gives each true
// element its rank, and one Scatter writes its position there.
Tensor true_positions(TranslationContext& cx, const Tensor& mask);
// torch.nonzero: the coordinates of the non-zero elements of `x`, [count, rank], i64.
Tensor nonzero(TranslationContext& cx, const Tensor& x);

}  // namespace luminal::translator
