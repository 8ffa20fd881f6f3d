// Nodes that compute no tensor: runtime assertions, size queries and the SymInt arithmetic
// (_operator.add/...) and comparisons export emits for dynamic shapes and data-dependent sizes.
#include <functional>
#include <optional>

#include "common/error.h"
#include "translator/handlers.h"
#include "translator/sym_expr.h"

namespace luminal::translator {

using ir::Expr;

// torch checks dtype/device at run time; the translation already knows the dtype, so a
// mismatch can only be a translation bug.
void translate_assert_tensor_metadata(NodeArgs& args) {
  Tensor a = args.tensor("a");
  if (std::optional<ir::DType> dtype = args.dtype("dtype")) {
    INTERNAL_CHECK(*dtype == a.dtype) << "tensor translated as " << ir::dtype_name(a.dtype) << ", the program asserts "
                                      << ir::dtype_name(*dtype);
  }
}

void translate_sym_size_int(NodeArgs& args) {
  Tensor self = args.tensor("self");
  args.set_sym_output(0, self.shape()[wrap_dim(args.integer("dim"), self.rank())]);
}

void translate_sym_numel(NodeArgs& args) { args.set_sym_output(0, ir::numel(args.tensor("self").shape())); }

// Strides and storage offsets are the program's: IR values have no storage of their own, and a
// program that asks computes with the values eager would give, which its TensorMeta records.
namespace {
const pt2::TensorMeta& program_meta(NodeArgs& args, const std::string& name) {
  const pt2::Argument& a = args.raw(name);
  USER_CHECK(a.kind == pt2::Argument::Kind::Tensor) << "argument '" << name << "' is not a tensor";
  const auto& values = args.cx().program().graph.tensor_values;
  auto it = values.find(a.tensors.at(0));
  USER_CHECK(it != values.end()) << "tensor '" << a.tensors[0] << "' has no tensor_values entry";
  return it->second;
}
}  // namespace

void translate_sym_stride_int(NodeArgs& args) {
  const pt2::TensorMeta& meta = program_meta(args, "self");
  const int dim = wrap_dim(args.integer("dim"), static_cast<int>(meta.strides.size()));
  args.set_sym_output(0, to_ir_expr(meta.strides.at(static_cast<size_t>(dim))));
}

void translate_sym_storage_offset(NodeArgs& args) {
  args.set_sym_output(0, to_ir_expr(program_meta(args, "self").storage_offset));
}

void translate_sym_add(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") + args.sym_int("b")); }
void translate_sym_sub(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") - args.sym_int("b")); }
void translate_sym_mul(NodeArgs& args) { args.set_sym_output(0, args.sym_int("a") * args.sym_int("b")); }
void translate_sym_floordiv(NodeArgs& args) { args.set_sym_output(0, floordiv(args.sym_int("a"), args.sym_int("b"))); }
void translate_sym_mod(NodeArgs& args) { args.set_sym_output(0, mod(args.sym_int("a"), args.sym_int("b"))); }
// torch.sym_max / sym_min: Python's max()/min() on SymInts (Gemma-3's sliding-window cache
// computes its mask offset as max(cumulative_length - window + 1, 0) on a Python int that dynamo
// turns into a SymInt after its first change).
void translate_sym_max(NodeArgs& args) { args.set_sym_output(0, max(args.sym_int("a"), args.sym_int("b"))); }
void translate_sym_min(NodeArgs& args) { args.set_sym_output(0, min(args.sym_int("a"), args.sym_int("b"))); }

// Comparisons of symbolic ints, as expressions that are 1 when they hold and 0 when not: what
// export asserts on a data-dependent size (u0 >= 0, u0 <= 16 after a nonzero of 16 elements).
namespace {
void compare(NodeArgs& args, const std::function<Expr(const Expr&, const Expr&)>& holds) {
  args.set_sym_bool_output(0, holds(args.sym_int("a"), args.sym_int("b")));
}

// A condition the program asserts: checked now when it is constant, else by the runtime once
// its symbols are bound (a data symbol's only then).
void assert_holds(NodeArgs& args, const Expr& holds, const std::string& message) {
  if (holds.is_constant()) {
    USER_CHECK(holds.constant_value() != 0) << message;
    return;
  }
  args.cx().require_data_symbols(holds);
  args.cx().graph().add_assertion(ir::SymbolAssertion{holds, message});
}
// torch._check_is_size / constrain_as_size: the value lies in [min, max] (min 0 for a size).
void constrain_range(NodeArgs& args, std::optional<int64_t> default_min) {
  const Expr size = args.sym_int("size");
  const std::optional<int64_t> lo = args.is_none("min") ? default_min : std::optional<int64_t>(args.integer("min"));
  const std::string what = "the symbolic size " + size.to_string();
  if (lo) assert_holds(args, at_least(size, Expr(*lo)), what + " must be at least " + std::to_string(*lo));
  if (!args.is_none("max")) {
    const int64_t hi = args.integer("max");
    assert_holds(args, at_least(Expr(hi), size), what + " must be at most " + std::to_string(hi));
  }
}
}  // namespace

void translate_sym_eq(NodeArgs& args) { compare(args, equal); }
void translate_sym_ne(NodeArgs& args) {
  compare(args, [](const Expr& a, const Expr& b) { return Expr(int64_t{1}) - equal(a, b); });
}
void translate_sym_ge(NodeArgs& args) { compare(args, at_least); }
void translate_sym_gt(NodeArgs& args) {
  compare(args, [](const Expr& a, const Expr& b) { return at_least(a, b + Expr(int64_t{1})); });
}
void translate_sym_le(NodeArgs& args) {
  compare(args, [](const Expr& a, const Expr& b) { return at_least(b, a); });
}
void translate_sym_lt(NodeArgs& args) {
  compare(args, [](const Expr& a, const Expr& b) { return at_least(b, a + Expr(int64_t{1})); });
}

// Logic on the comparisons' 0/1 expressions: torch._check(k != 5) asserts sym_not(k == 5).
void translate_sym_not(NodeArgs& args) { args.set_sym_bool_output(0, Expr(int64_t{1}) - args.sym_bool("a")); }
void translate_sym_and(NodeArgs& args) { args.set_sym_bool_output(0, args.sym_bool("a") * args.sym_bool("b")); }
void translate_sym_or(NodeArgs& args) { args.set_sym_bool_output(0, max(args.sym_bool("a"), args.sym_bool("b"))); }

void translate_assert_scalar(NodeArgs& args) { assert_holds(args, args.sym_bool("self"), args.string("assert_msg")); }

void translate_sym_constrain_range(NodeArgs& args) { constrain_range(args, std::nullopt); }
void translate_sym_constrain_range_for_size(NodeArgs& args) { constrain_range(args, 0); }

}  // namespace luminal::translator
