#include "ir/expr.h"

#include <algorithm>

#include "common/error.h"

namespace luminal::ir {

struct Expr::Node {
  Kind kind;
  int64_t value = 0;
  std::string name;
  std::vector<Expr> operands;
};

namespace {
// Python's floor division and modulo: sizes are non-negative, but offsets of negative
// slices are folded before they reach here, so keep torch's (= sympy's) semantics anyway.
int64_t floor_div(int64_t a, int64_t b) {
  USER_CHECK(b != 0) << "division by zero in a symbolic shape expression";
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }
}  // namespace

Expr::Expr(int64_t value) : node_(std::make_shared<const Node>(Node{Kind::Constant, value, {}, {}})) {}

Expr Expr::symbol(const std::string& name) {
  return Expr(std::make_shared<const Node>(Node{Kind::Symbol, 0, name, {}}));
}

Expr::Kind Expr::kind() const { return node_->kind; }

int64_t Expr::constant_value() const {
  INTERNAL_CHECK(is_constant()) << "expression " << to_string() << " is not a constant";
  return node_->value;
}

const std::string& Expr::symbol_name() const {
  INTERNAL_CHECK(is_symbol()) << "expression " << to_string() << " is not a symbol";
  return node_->name;
}

const std::vector<Expr>& Expr::operands() const { return node_->operands; }

Expr Expr::make(Kind kind, std::vector<Expr> operands) {
  const Expr& a = operands[0];
  const Expr& b = operands[1];
  if (a.is_constant() && b.is_constant()) {
    int64_t x = a.constant_value(), y = b.constant_value();
    switch (kind) {
      case Kind::Add: return Expr(x + y);
      case Kind::Mul: return Expr(x * y);
      case Kind::FloorDiv: return Expr(floor_div(x, y));
      case Kind::Mod: return Expr(floor_mod(x, y));
      case Kind::Max: return Expr(std::max(x, y));
      case Kind::Min: return Expr(std::min(x, y));
      default: break;
    }
  }
  auto is = [](const Expr& e, int64_t v) { return e.is_constant() && e.constant_value() == v; };
  switch (kind) {
    case Kind::Add:
      if (is(a, 0)) return b;
      if (is(b, 0)) return a;
      break;
    case Kind::Mul:
      if (is(a, 0) || is(b, 0)) return Expr(int64_t{0});
      if (is(a, 1)) return b;
      if (is(b, 1)) return a;
      break;
    case Kind::FloorDiv:
      if (is(b, 1)) return a;
      break;
    case Kind::Mod:
      if (is(b, 1)) return Expr(int64_t{0});
      break;
    case Kind::Max:
    case Kind::Min:
      if (a == b) return a;
      break;
    default:
      break;
  }
  return Expr(std::make_shared<const Node>(Node{kind, 0, {}, std::move(operands)}));
}

Expr operator+(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::Add, {a, b}); }
Expr operator-(const Expr& a, const Expr& b) { return a + Expr(int64_t{-1}) * b; }
Expr operator*(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::Mul, {a, b}); }
Expr floordiv(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::FloorDiv, {a, b}); }
Expr mod(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::Mod, {a, b}); }
Expr max(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::Max, {a, b}); }
Expr min(const Expr& a, const Expr& b) { return Expr::make(Expr::Kind::Min, {a, b}); }

bool operator==(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return true;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Expr::Kind::Constant: return a.node_->value == b.node_->value;
    case Expr::Kind::Symbol: return a.node_->name == b.node_->name;
    default: return a.node_->operands == b.node_->operands;
  }
}

int64_t Expr::evaluate(const SymbolBindings& bindings) const {
  switch (kind()) {
    case Kind::Constant:
      return node_->value;
    case Kind::Symbol: {
      auto it = bindings.find(node_->name);
      USER_CHECK(it != bindings.end()) << "symbolic dim '" << node_->name
                                       << "' is not bound by any input shape";
      return it->second;
    }
    default:
      break;
  }
  int64_t x = operands()[0].evaluate(bindings);
  int64_t y = operands()[1].evaluate(bindings);
  switch (kind()) {
    case Kind::Add: return x + y;
    case Kind::Mul: return x * y;
    case Kind::FloorDiv: return floor_div(x, y);
    case Kind::Mod: return floor_mod(x, y);
    case Kind::Max: return std::max(x, y);
    case Kind::Min: return std::min(x, y);
    default: break;
  }
  INTERNAL_ERROR() << "unhandled expression kind";
  return 0;
}

std::string Expr::to_string() const {
  switch (kind()) {
    case Kind::Constant: return std::to_string(node_->value);
    case Kind::Symbol: return node_->name;
    default: break;
  }
  const std::string x = operands()[0].to_string();
  const std::string y = operands()[1].to_string();
  switch (kind()) {
    case Kind::Add: return "(" + x + " + " + y + ")";
    case Kind::Mul: return x + "*" + y;
    case Kind::FloorDiv: return "(" + x + " // " + y + ")";
    case Kind::Mod: return "(" + x + " % " + y + ")";
    case Kind::Max: return "max(" + x + ", " + y + ")";
    case Kind::Min: return "min(" + x + ", " + y + ")";
    default: break;
  }
  return "?";
}

void Expr::collect_symbols(std::vector<std::string>& out) const {
  if (is_symbol()) {
    if (std::find(out.begin(), out.end(), node_->name) == out.end()) out.push_back(node_->name);
    return;
  }
  for (const Expr& e : operands()) e.collect_symbols(out);
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].to_string();
  }
  return s + "]";
}

Expr numel(const Shape& shape) {
  Expr n(int64_t{1});
  for (const Expr& d : shape) n = n * d;
  return n;
}

std::vector<int64_t> evaluate_shape(const Shape& shape, const SymbolBindings& bindings) {
  std::vector<int64_t> out;
  out.reserve(shape.size());
  for (const Expr& d : shape) out.push_back(d.evaluate(bindings));
  return out;
}

bool is_multiple_of(const Expr& e, int64_t m) {
  if (e.is_constant()) return e.constant_value() % m == 0;
  if (e.kind() == Expr::Kind::Mul) return is_multiple_of(e.operands()[0], m) || is_multiple_of(e.operands()[1], m);
  if (e.kind() == Expr::Kind::Add) return is_multiple_of(e.operands()[0], m) && is_multiple_of(e.operands()[1], m);
  return false;
}

bool is_static(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Expr& e) { return e.is_constant(); });
}

}  // namespace luminal::ir
