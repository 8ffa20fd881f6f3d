// Parses the sympy expressions torch.export writes for symbolic sizes (SymExpr::expr_str) into
// ir::Expr. torch writes sympy's srepr: Symbol('s77', positive=True, integer=True), Integer(3),
// Add(...), Mul(...) (n-ary), Pow(x, Integer(2)) for products of a dim with itself (attention
// scores [s, s] have stride s**2), and torch's own FloorDiv / Mod / PythonMod / Max / Min.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "pt2/schema.h"

namespace luminal::translator {

// UnsupportedError naming the expression for a function we do not know (CeilToInt, ...);
// UserError for text that is not an srepr at all.
ir::Expr parse_sym_expr(const std::string& srepr);
// A size as written in a TensorMeta: its constant, or its parsed expression.
ir::Expr to_ir_expr(const pt2::SymInt& size);
ir::Shape to_ir_shape(const std::vector<pt2::SymInt>& sizes);

// Comparisons of symbolic ints as expressions that are 1 when they hold and 0 when not, for the
// runtime assertions on symbols (ir::SymbolAssertion).
ir::Expr at_least(const ir::Expr& a, const ir::Expr& b);  // a >= b
ir::Expr equal(const ir::Expr& a, const ir::Expr& b);

}  // namespace luminal::translator
