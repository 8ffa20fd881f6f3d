#include "translator/sym_expr.h"

#include <cctype>
#include <vector>

#include "common/error.h"

namespace luminal::translator {
namespace {

// Recursive descent over `Name(arg, arg, key=value)`; keyword arguments (the assumptions on a
// Symbol) carry nothing the IR needs and are skipped.
class SreprParser {
 public:
  explicit SreprParser(const std::string& text) : text_(text) {}

  ir::Expr parse() {
    ir::Expr e = call();
    skip_space();
    USER_CHECK(pos_ == text_.size()) << "symbolic size '" << text_ << "': trailing text at offset " << pos_;
    return e;
  }

 private:
  const std::string& text_;
  size_t pos_ = 0;

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    USER_CHECK(accept(c)) << "symbolic size '" << text_ << "': expected '" << c << "' at offset " << pos_;
  }
  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    USER_CHECK(pos_ > start) << "symbolic size '" << text_ << "': expected a name at offset " << start;
    return text_.substr(start, pos_ - start);
  }
  std::string quoted() {
    skip_space();
    USER_CHECK(pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"'))
        << "symbolic size '" << text_ << "': expected a quoted name at offset " << pos_;
    char quote = text_[pos_++];
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
    USER_CHECK(pos_ < text_.size()) << "symbolic size '" << text_ << "': unterminated string";
    return text_.substr(start, pos_++ - start);
  }
  int64_t integer_literal() {
    skip_space();
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    USER_CHECK(pos_ > start) << "symbolic size '" << text_ << "': expected an integer at offset " << start;
    try {
      return std::stoll(text_.substr(start, pos_ - start));
    } catch (const std::out_of_range&) {
      USER_ERROR() << "symbolic size '" << text_ << "': integer out of range";
    }
    return 0;
  }
  // Skips `key=value` up to the next ',' or ')' at this nesting level.
  void skip_keyword_value() {
    int depth = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (depth == 0 && (c == ',' || c == ')')) return;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      ++pos_;
    }
  }

  ir::Expr call() {
    const std::string name = identifier();
    expect('(');
    if (name == "Symbol") {
      std::string symbol = quoted();
      while (accept(',')) {
        identifier();
        expect('=');
        skip_keyword_value();
      }
      expect(')');
      return ir::Expr::symbol(symbol);
    }
    if (name == "Integer") {
      int64_t v = integer_literal();
      expect(')');
      return ir::Expr(v);
    }
    std::vector<ir::Expr> operands;
    if (!accept(')')) {
      do operands.push_back(call());
      while (accept(','));
      expect(')');
    }
    return apply(name, operands);
  }

  ir::Expr apply(const std::string& name, const std::vector<ir::Expr>& ops) {
    auto need = [&](size_t n) {
      USER_CHECK(ops.size() == n) << "symbolic size '" << text_ << "': " << name << " takes " << n << " operands";
    };
    if (name == "Add" || name == "Mul" || name == "Max" || name == "Min") {
      USER_CHECK(!ops.empty()) << "symbolic size '" << text_ << "': empty " << name;
      ir::Expr acc = ops[0];
      for (size_t i = 1; i < ops.size(); ++i) {
        if (name == "Add") acc = acc + ops[i];
        else if (name == "Mul") acc = acc * ops[i];
        else if (name == "Max") acc = max(acc, ops[i]);
        else acc = min(acc, ops[i]);
      }
      return acc;
    }
    if (name == "FloorDiv" || name == "CleanDiv") {  // CleanDiv: a FloorDiv torch knows is exact
      need(2);
      return floordiv(ops[0], ops[1]);
    }
    if (name == "Mod" || name == "PythonMod") {  // sizes are non-negative: both are floor modulo
      need(2);
      return mod(ops[0], ops[1]);
    }
    if (name == "Pow") {
      need(2);
      UNSUPPORTED_CHECK(ops[1].is_constant() && ops[1].constant_value() >= 0 && ops[1].constant_value() <= 64)
          << "symbolic size '" << text_ << "': only small non-negative integer powers are supported";
      ir::Expr acc(int64_t{1});
      for (int64_t i = 0; i < ops[1].constant_value(); ++i) acc = acc * ops[0];
      return acc;
    }
    UNSUPPORTED_ERROR() << "symbolic size '" << text_ << "': sympy function '" << name << "' is not supported";
    return ir::Expr();
  }
};

}  // namespace

ir::Expr parse_sym_expr(const std::string& srepr) { return SreprParser(srepr).parse(); }

ir::Expr to_ir_expr(const pt2::SymInt& size) {
  return size.is_concrete() ? ir::Expr(*size.value) : parse_sym_expr(size.expr.expr_str);
}

ir::Shape to_ir_shape(const std::vector<pt2::SymInt>& sizes) {
  ir::Shape shape;
  for (const pt2::SymInt& s : sizes) shape.push_back(to_ir_expr(s));
  return shape;
}

ir::Expr at_least(const ir::Expr& a, const ir::Expr& b) {
  const ir::Expr one(int64_t{1}), zero(int64_t{0});
  return one - min(max(b - a, zero), one);
}

ir::Expr equal(const ir::Expr& a, const ir::Expr& b) { return at_least(a, b) * at_least(b, a); }

}  // namespace luminal::translator
