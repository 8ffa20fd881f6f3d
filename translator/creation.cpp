// Tensor factories: arange, full, zeros/ones, scalar_tensor, empty. Their values are Constant
// and Iota nodes; device keywords are accepted (the graph runs where its inputs live).
#include <cmath>

#include "common/error.h"
#include "translator/handlers.h"

namespace luminal::translator {

using ir::DType;
using ir::Expr;
using ir::Op;

namespace {

// torch.full infers the dtype from the fill value: bool, int64 or the default float.
DType dtype_for(NodeArgs& args, const std::string& value) {
  switch (args.scalar_kind(value)) {
    case ScalarKind::Bool: return DType::Bool;
    case ScalarKind::Int: return DType::I64;
    case ScalarKind::Float: break;
  }
  return DType::F32;
}

Operand number(const ir::Scalar& value) {
  Operand o;
  o.is_number = true;
  o.scalar = value;
  return o;
}

// `value` is a number, or a symbolic one computed from tensor data (`torch.full(n, t.item())`):
// then its tensor, converted and broadcast.
void fill(NodeArgs& args, const ir::Shape& shape, const Operand& value, DType default_dtype) {
  args.require_strided_layout();
  TranslationContext& cx = args.cx();
  const DType dtype = args.dtype("dtype").value_or(default_dtype);
  if (!value.tensor) return args.set_output(0, constant(cx, value.scalar, dtype, shape));
  args.set_output(0, expand(cast(cx, reshape(cx, *value.tensor, {}), dtype), shape));
}

void fill_like(NodeArgs& args, const Operand& value) {
  Tensor self = args.tensor("self");
  fill(args, self.shape(), value, self.dtype);
}

// arange: an Iota scaled and shifted. Integer bounds count in i64 (exact, symbolic ends such
// as a sequence length allowed); float bounds need a static length and count in f64, as
// torch's CPU kernel accumulates in double. Bool bounds are the ints 0 and 1.
void arange(NodeArgs& args, const std::optional<std::string>& start_name, const std::optional<std::string>& step_name) {
  TranslationContext& cx = args.cx();
  args.require_strided_layout();
  auto kind = [&](const std::optional<std::string>& name) {
    return name ? args.scalar_kind(*name) : ScalarKind::Int;
  };
  auto int_bound = [&](const std::optional<std::string>& name, int64_t otherwise) {
    if (!name) return Expr(otherwise);
    if (args.scalar_kind(*name) == ScalarKind::Bool) return Expr(static_cast<int64_t>(args.boolean(*name)));
    return args.sym_int(*name);
  };
  auto float_bound = [&](const std::optional<std::string>& name, double otherwise) {
    if (!name) return otherwise;
    if (args.scalar_kind(*name) == ScalarKind::Bool) return static_cast<double>(args.boolean(*name));
    return args.floating(*name);
  };
  const bool integral = kind(start_name) != ScalarKind::Float && args.scalar_kind("end") != ScalarKind::Float &&
                        kind(step_name) != ScalarKind::Float;
  const DType dtype = args.dtype("dtype").value_or(integral ? DType::I64 : DType::F32);
  Tensor values;
  if (integral) {
    const Expr start = int_bound(start_name, 0);
    const Expr step_expr = int_bound(step_name, 1);
    USER_CHECK(step_expr.is_constant()) << "arange with a symbolic step is not supported";
    const int64_t step = step_expr.constant_value();
    USER_CHECK(step != 0) << "arange step must be non-zero";
    const Expr end = int_bound(std::string("end"), 0);
    Expr length = step > 0 ? floordiv(end - start + Expr(step - 1), Expr(step))
                           : floordiv(start - end + Expr(-step - 1), Expr(-step));
    if (length.is_constant()) length = Expr(std::max<int64_t>(0, length.constant_value()));
    values = iota(cx, length, DType::I64);
    if (step != 1) values = binary(cx, Op::Mul, values, constant(cx, ir::Scalar::of_int(step), DType::I64));
    if (!(start.is_constant() && start.constant_value() == 0))
      values = binary(cx, Op::Add, values, size_value(cx, start, DType::I64));
  } else {
    const double start = float_bound(start_name, 0.0);
    const double step = float_bound(step_name, 1.0);
    const double end = float_bound(std::string("end"), 0.0);
    USER_CHECK(step != 0.0 && std::isfinite(start) && std::isfinite(end))
        << "arange(" << start << ", " << end << ", " << step << ") has no finite length";
    if (ir::is_floating(dtype)) {
      const int64_t length = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
      values = iota(cx, Expr(length), DType::F64);
      values = binary(cx, Op::Mul, values, constant(cx, ir::Scalar::of_float(step), DType::F64));
      values = binary(cx, Op::Add, values, constant(cx, ir::Scalar::of_float(start), DType::F64));
    } else {
      // An integer result of float bounds: torch truncates start and step to integers for the
      // values; the length comes from the truncated bounds for int64 and from the float bounds
      // for the narrower types (RangeFactories.cpp).
      const auto t_start = static_cast<int64_t>(start), t_end = static_cast<int64_t>(end),
                 t_step = static_cast<int64_t>(step);
      USER_CHECK(t_step != 0) << "arange step " << step << " truncates to 0 for an integer result";
      int64_t length = 0;
      if (dtype == DType::I64) {
        const int64_t sign = (t_step > 0) - (t_step < 0);
        length = (t_end - t_start + t_step - sign) / t_step;
      } else {
        length = static_cast<int64_t>(std::ceil((end - start) / step));
      }
      values = iota(cx, Expr(std::max<int64_t>(0, length)), DType::I64);
      values = binary(cx, Op::Mul, values, constant(cx, ir::Scalar::of_int(t_step), DType::I64));
      values = binary(cx, Op::Add, values, constant(cx, ir::Scalar::of_int(t_start), DType::I64));
    }
  }
  args.set_output(0, cast(cx, values, dtype));
}

}  // namespace

void translate_arange(NodeArgs& args) { arange(args, std::nullopt, std::nullopt); }
void translate_arange_start(NodeArgs& args) { arange(args, "start", std::nullopt); }
void translate_arange_start_step(NodeArgs& args) { arange(args, "start", "step"); }

void translate_full(NodeArgs& args) {
  fill(args, args.sym_ints("size"), args.operand("fill_value"), dtype_for(args, "fill_value"));
}

// full_like keeps self's dtype unless told otherwise (the fill value is converted).
void translate_full_like(NodeArgs& args) { fill_like(args, args.operand("fill_value")); }
void translate_zeros_like(NodeArgs& args) { fill_like(args, number(ir::Scalar::of_int(0))); }
void translate_ones_like(NodeArgs& args) { fill_like(args, number(ir::Scalar::of_int(1))); }
void translate_zeros(NodeArgs& args) { fill(args, args.sym_ints("size"), number(ir::Scalar::of_int(0)), DType::F32); }
void translate_ones(NodeArgs& args) { fill(args, args.sym_ints("size"), number(ir::Scalar::of_int(1)), DType::F32); }

// The attention mask's -inf comes through here, written "-Infinity" in the archive; dynamo
// returns a captured `.item()` through here as a 0-d tensor.
void translate_scalar_tensor(NodeArgs& args) { fill(args, {}, args.operand("s"), DType::F32); }

// empty's contents are unspecified; zeros are a valid choice and keep runs deterministic. The
// layout hints of empty_permuted and empty_strided change no value (IR values have no layout).
void translate_empty(NodeArgs& args) { fill(args, args.sym_ints("size"), number(ir::Scalar::of_int(0)), DType::F32); }

}  // namespace luminal::translator
