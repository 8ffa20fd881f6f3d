#include "translator/spatial.h"

#include <algorithm>
#include <limits>

#include "common/error.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;

std::vector<int64_t> spatial_ints(NodeArgs& args, const std::string& name, size_t k,
                                  const std::vector<int64_t>& if_empty) {
  const pt2::Argument& a = args.raw(name);
  std::vector<int64_t> values;
  if (a.kind == pt2::Argument::Kind::Int) {
    values = {a.ints.at(0)};
  } else {
    values = args.integers(name);
  }
  if (values.empty()) values = if_empty;
  if (values.size() == 1) values.assign(k, values[0]);
  USER_CHECK(values.size() == k) << "argument '" << name << "' has " << values.size() << " values for " << k
                                 << " spatial dims";
  return values;
}

int64_t static_dim(const Tensor& t, int dim, const char* op) {
  const Expr& size = t.shape()[dim];
  UNSUPPORTED_CHECK(size.is_constant()) << op << " over dim " << dim << " of the symbolic size " << size.to_string()
                                        << ": its windows are derived from a static size";
  return size.constant_value();
}

ir::Scalar lowest_value(DType dtype) {
  switch (dtype) {
    case DType::I8: return ir::Scalar::of_int(std::numeric_limits<int8_t>::min());
    case DType::I16: return ir::Scalar::of_int(std::numeric_limits<int16_t>::min());
    case DType::I32: return ir::Scalar::of_int(std::numeric_limits<int32_t>::min());
    case DType::I64: return ir::Scalar::of_int(std::numeric_limits<int64_t>::min());
    case DType::U8:
    case DType::Bool: return ir::Scalar::of_int(0);
    default: return ir::Scalar::of_float(-std::numeric_limits<double>::infinity());
  }
}

Tensor pad_dim(TranslationContext& cx, const Tensor& t, int dim, int64_t left, int64_t right, const ir::Scalar& value) {
  Tensor x = t;
  if (left < 0 || right < 0) {
    const int64_t size = static_dim(x, dim, "pad");
    x = slice(x, dim, Expr(std::max<int64_t>(0, -left)), Expr(size - std::max<int64_t>(0, -right)), 1);
  }
  left = std::max<int64_t>(0, left);
  right = std::max<int64_t>(0, right);
  if (left == 0 && right == 0) return x;
  const int64_t size = static_dim(x, dim, "pad");
  ir::Shape padded = x.shape();
  padded[dim] = Expr(left + size + right);
  Tensor out = constant(cx, value, x.dtype, padded);
  if (size == 0) return out;
  Tensor where_to = binary(cx, ir::Op::Add, positions(cx, size), int_constant(cx, left));
  return scatter(cx, out, dim, index_along(where_to, dim, x.shape()), x, /*accumulate=*/false);
}

Tensor sliding_windows(const Tensor& t, const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                       const std::vector<int64_t>& dilation, const std::vector<int64_t>& out) {
  const ir::View& v = t.ref.view;
  const int k = static_cast<int>(kernel.size());
  const int lead = t.rank() - k;
  INTERNAL_CHECK(lead >= 0) << "windows over " << k << " dims of a rank-" << t.rank() << " tensor";
  ir::Shape shape(v.shape().begin(), v.shape().begin() + lead);
  std::vector<Expr> strides(v.strides().begin(), v.strides().begin() + lead);
  for (int i = 0; i < k; ++i) {
    INTERNAL_CHECK(out[i] == 0 || (out[i] - 1) * stride[i] + (kernel[i] - 1) * dilation[i] + 1 <=
                                      static_dim(t, lead + i, "sliding windows"))
        << "window " << i << " runs past the padded input";
    shape.push_back(Expr(out[i]));
    strides.push_back(v.strides()[lead + i] * Expr(stride[i]));
  }
  for (int i = 0; i < k; ++i) {
    shape.push_back(Expr(kernel[i]));
    strides.push_back(v.strides()[lead + i] * Expr(dilation[i]));
  }
  return Tensor{ir::TensorRef{t.ref.node, ir::View(shape, strides, v.offset())}, t.dtype};
}

Tensor split_dim(const Tensor& t, int dim, int64_t outer, int64_t inner_size) {
  const ir::View& v = t.ref.view;
  const Expr& size = t.shape()[dim];
  INTERNAL_CHECK(!size.is_constant() || size.constant_value() == outer * inner_size)
      << "split of a dim of size " << size.to_string() << " into " << outer << " x " << inner_size;
  ir::Shape shape = v.shape();
  std::vector<Expr> strides = v.strides();
  const Expr inner(inner_size);
  shape[dim] = inner;
  shape.insert(shape.begin() + dim, Expr(outer));
  strides.insert(strides.begin() + dim, v.strides()[dim] * inner);
  return Tensor{ir::TensorRef{t.ref.node, ir::View(shape, strides, v.offset())}, t.dtype};
}

int64_t pooling_output_size(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t span = size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // div_rtn: division rounding toward negative infinity.
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

int64_t right_pad_for(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, int64_t out) {
  const int64_t needed = (out - 1) * stride + (kernel - 1) * dilation + 1;
  return std::max(pad, needed - size - pad);
}

Tensor positions(TranslationContext& cx, int64_t n) { return iota(cx, Expr(n), DType::I64); }

Tensor int_constant(TranslationContext& cx, int64_t v) { return constant(cx, ir::Scalar::of_int(v), DType::I64); }

Tensor float_constant(TranslationContext& cx, double v, DType dtype) {
  return constant(cx, ir::Scalar::of_float(v), dtype);
}

}  // namespace luminal::translator
