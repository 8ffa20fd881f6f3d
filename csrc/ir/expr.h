// Symbolic integer expressions for shapes, strides and offsets.
//
// A dim is an Expr over named symbols ("s0" = sequence length) bound at run time from the
// input shapes, so one compile serves every value of a dynamic dim. Exprs are immutable
// values; constructors fold constants and the identities x+0, x*1, x*0 so that fully static
// shapes stay plain integers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace luminal::ir {

// Values of symbols for one call.
using SymbolBindings = std::map<std::string, int64_t>;

class Expr {
 public:
  enum class Kind { Constant, Symbol, Add, Mul, FloorDiv, Mod, Max, Min };

  Expr() : Expr(int64_t{0}) {}
  Expr(int64_t value);  // NOLINT: implicit so that shapes can be written as {2, s, 64}
  Expr(int value) : Expr(int64_t{value}) {}
  static Expr symbol(const std::string& name);

  Kind kind() const;
  bool is_constant() const { return kind() == Kind::Constant; }
  bool is_symbol() const { return kind() == Kind::Symbol; }
  int64_t constant_value() const;       // INTERNAL_CHECKs is_constant()
  const std::string& symbol_name() const;  // INTERNAL_CHECKs is_symbol()
  const std::vector<Expr>& operands() const;

  // Throws UserError when a symbol has no binding.
  int64_t evaluate(const SymbolBindings& bindings) const;
  std::string to_string() const;
  void collect_symbols(std::vector<std::string>& out) const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr floordiv(const Expr& a, const Expr& b);
  friend Expr mod(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);
  friend Expr min(const Expr& a, const Expr& b);
  // Structural equality after folding: 2*s0 == 2*s0, but s0+s0 != 2*s0.
  friend bool operator==(const Expr& a, const Expr& b);
  friend bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }

 private:
  struct Node;
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  static Expr make(Kind kind, std::vector<Expr> operands);
  std::shared_ptr<const Node> node_;
};

using Shape = std::vector<Expr>;

std::string shape_to_string(const Shape& shape);
Expr numel(const Shape& shape);
std::vector<int64_t> evaluate_shape(const Shape& shape, const SymbolBindings& bindings);
// True when every dim is a constant.
bool is_static(const Shape& shape);
inline bool is_zero(const Expr& e) { return e.is_constant() && e.constant_value() == 0; }
inline bool is_one(const Expr& e) { return e.is_constant() && e.constant_value() == 1; }
// Whether `e` is a multiple of `m` (m > 0) for every value of its symbols, as its form shows: a
// constant multiple of m, a product with such a factor, or a sum of such terms. False where that
// is not evident (so a caller may only drop what this proves).
bool is_multiple_of(const Expr& e, int64_t m);

}  // namespace luminal::ir
