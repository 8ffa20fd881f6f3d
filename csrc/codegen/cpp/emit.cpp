#include "codegen/cpp/emit.h"

#include <cctype>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/cpp/op_table.h"
#include "codegen/value_range.h"
#include "common/error.h"

namespace luminal::codegen::cpp {

using ir::DType;
using ir::Expr;

std::string symbol_var(const std::string& name) {
  std::string s = "S_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

std::string expr_text(const Expr& e) {
  switch (e.kind()) {
    case Expr::Kind::Constant: {
      const int64_t v = e.constant_value();
      return v < 0 ? "(INT64_C(" + std::to_string(v) + "))" : "INT64_C(" + std::to_string(v) + ")";
    }
    case Expr::Kind::Symbol: return symbol_var(e.symbol_name());
    default: break;
  }
  const std::string a = expr_text(e.operands()[0]);
  const std::string b = expr_text(e.operands()[1]);
  switch (e.kind()) {
    case Expr::Kind::Add: return "(" + a + " + " + b + ")";
    case Expr::Kind::Mul: return "(" + a + " * " + b + ")";
    case Expr::Kind::FloorDiv: return "lm_floordiv(" + a + ", " + b + ")";
    case Expr::Kind::Mod: return "lm_floormod(" + a + ", " + b + ")";
    case Expr::Kind::Max: return "lm_imax(" + a + ", " + b + ")";
    case Expr::Kind::Min: return "lm_imin(" + a + ", " + b + ")";
    default: break;
  }
  INTERNAL_ERROR() << "unhandled expression kind";
  return "";
}

namespace {
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
// Where identifier `name` next occurs whole in `text` from `from`, or npos.
size_t find_identifier(const std::string& text, const std::string& name, size_t from) {
  for (size_t at = text.find(name, from); at != std::string::npos; at = text.find(name, at + 1)) {
    const bool starts = at == 0 || !identifier_char(text[at - 1]);
    const bool ends = at + name.size() == text.size() || !identifier_char(text[at + name.size()]);
    if (starts && ends) return at;
  }
  return std::string::npos;
}
}  // namespace

bool mentions(const std::string& text, const std::string& name) {
  return find_identifier(text, name, 0) != std::string::npos;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
}

void replace_identifier(std::string& text, const std::string& name, const std::string& to) {
  for (size_t pos = 0; (pos = find_identifier(text, name, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, name.size(), to);
}

bool index_per_row(const Kernel& kernel, const Index& index) {
  return index.strides.empty() || is_zero(index.strides[kernel.reduce_axis]);
}

std::vector<bool> per_row_values(const Kernel& kernel, bool row_kernel) {
  std::vector<bool> per_row(kernel.values.size(), false);
  if (!row_kernel) return per_row;
  auto computes_per_row = [&](const Value& v) {
    switch (v.kind) {
      case ValueKind::Literal:
      case ValueKind::Accumulated: return true;
      case ValueKind::Load:
      case ValueKind::IotaAt: return index_per_row(kernel, v.index);
      case ValueKind::GatherLoad: return index_per_row(kernel, v.index) && per_row[v.args[0]];
      case ValueKind::Compute:
        for (int a : v.args)
          if (!per_row[a]) return false;
        return true;
    }
    return false;
  };
  for (size_t i = 0; i < kernel.values.size(); ++i) per_row[i] = computes_per_row(kernel.values[i]);
  return per_row;
}

int column_lane_axis(const Kernel& kernel) {
  const int axis = kernel.reduce_axis;
  if (kernel.kind != KernelKind::Loop || axis < 0 || kernel.reductions.empty()) return -1;
  int lane = -1;
  for (int d = static_cast<int>(kernel.domain.size()) - 1; d >= 0 && lane < 0; --d)
    if (d != axis && !is_one(kernel.domain[d])) lane = d;
  if (lane < 0) return -1;
  bool contiguous_lanes = false;
  for (const Value& v : kernel.values) {
    if (v.kind == ValueKind::GatherLoad) return -1;
    if (v.kind != ValueKind::Load || v.index.strides.empty()) continue;
    if (is_one(v.index.strides[axis])) return -1;  // a row at a time reads this one contiguously
    if (is_one(v.index.strides[lane])) contiguous_lanes = true;
  }
  if (!contiguous_lanes) return -1;
  // One pass: no reduction's input depends on an accumulated value.
  std::vector<bool> after_reduction(kernel.values.size(), false);
  for (size_t i = 0; i < kernel.values.size(); ++i) {
    const Value& v = kernel.values[i];
    after_reduction[i] = v.kind == ValueKind::Accumulated;
    for (int a : v.args) after_reduction[i] = after_reduction[i] || after_reduction[a];
  }
  for (const Reduction& r : kernel.reductions)
    if (after_reduction[r.input]) return -1;
  const std::vector<bool> per_row = per_row_values(kernel, true);
  for (const Store& st : kernel.stores)
    if (!per_row[st.value] || !index_per_row(kernel, st.index)) return -1;
  return lane;
}

std::string index_text(const Kernel& kernel, const Index& index, int inner, bool row_scope) {
  std::string s = expr_text(index.offset);
  for (int d = 0; d < static_cast<int>(index.strides.size()); ++d) {
    const Expr& stride = index.strides[d];
    if (is_zero(stride) || is_one(kernel.domain[d])) continue;
    INTERNAL_CHECK(!(row_scope && d == inner)) << "a per-row index varies along the reduce axis";
    s += " + i" + std::to_string(d) + (is_one(stride) ? "" : " * " + expr_text(stride));
  }
  return s;
}

namespace {
// The domain dim whose loop index an IotaAt equals, kConstantZero when it is always 0, or
// kComputed when it needs the division.
constexpr int kConstantZero = -1;
constexpr int kComputed = -2;
int iota_loop_dim(const Kernel& kernel, const Value& v) {
  if (!is_zero(v.index.offset)) return kComputed;
  int only = kConstantZero;
  // (i_d * divisor / divisor) % extent is i_d when dim d has the Iota's extent.
  for (int d = 0; d < static_cast<int>(v.index.strides.size()); ++d) {
    if (is_zero(v.index.strides[d])) continue;
    if (v.index.strides[d] == v.divisor && only == kConstantZero && v.extent == kernel.domain[d]) only = d;
    else return kComputed;
  }
  return only;
}
}  // namespace

std::string iota_text(const Kernel& kernel, const Value& v, int inner, bool row_scope) {
  const int dim = iota_loop_dim(kernel, v);
  if (dim >= 0) return "i" + std::to_string(dim);
  if (dim == kConstantZero) return "INT64_C(0)";
  return "((" + index_text(kernel, v.index, inner, row_scope) + ") / " + expr_text(v.divisor) + " % " +
         expr_text(v.extent) + ")";
}

namespace {
// Where a pointwise kernel compares its inner loop index with constants (cat's piece select,
// masks from arange), the points where a comparison flips. Looping over the pieces between them
// separately lets the compiler fold the comparison in each, and with it the clamps of cat's
// positions: the loads become affine and the loop vectorises instead of gathering. At most
// kMaxInnerSplits, sorted, each inside (0, extent).
constexpr size_t kMaxInnerSplits = 7;
std::vector<int64_t> inner_split_points(const Kernel& kernel, int inner) {
  if (kernel.reduce_axis >= 0 || inner < 0 || !kernel.domain[inner].is_constant()) return {};
  const int64_t extent = kernel.domain[inner].constant_value();
  const auto is_inner_index = [&](int id) {
    const Value& v = kernel.values[id];
    return v.kind == ValueKind::IotaAt && iota_loop_dim(kernel, v) == inner;
  };
  const auto literal = [&](int id) -> std::optional<int64_t> {
    const Value& v = kernel.values[id];
    if (v.kind != ValueKind::Literal || !v.literal.is_integer) return std::nullopt;
    return v.literal.integer;
  };
  std::set<int64_t> points;
  for (const Value& v : kernel.values) {
    if (v.kind != ValueKind::Compute || !ir::op_has(v.op, ir::kComparison)) continue;
    const bool index_first = is_inner_index(v.args[0]);
    const std::optional<int64_t> c = literal(v.args[index_first ? 1 : 0]);
    if (!c || !(index_first || is_inner_index(v.args[1]))) continue;
    // i < c and c <= i flip at c; i <= c and c < i flip at c + 1; == and != at both.
    const bool flips_at_c = v.op == ir::Op::Lt ? index_first : v.op == ir::Op::Le ? !index_first : true;
    const bool flips_after_c = v.op == ir::Op::Lt ? !index_first : v.op == ir::Op::Le ? index_first : true;
    if (flips_at_c) points.insert(*c);
    if (flips_after_c && *c < extent) points.insert(*c + 1);
  }
  std::vector<int64_t> inside;
  for (int64_t p : points)
    if (p > 0 && p < extent) inside.push_back(p);
  if (inside.size() > kMaxInnerSplits) return {};
  return inside;
}
}  // namespace

std::string scan_row(const Kernel& kernel, const CppOpTable& table, const std::string& indent) {
  const ScanSpec& s = kernel.scan;
  const DType t = kernel.params[1].dtype;
  // Integers add in uint64_t so that overflow wraps instead of being undefined.
  const bool integer = !ir::is_floating(s.accumulate);
  const std::string sum = integer ? "(int64_t)lm_sum" : "lm_sum";
  // The store rounds (or wraps) to the output dtype itself when the sum is already in that
  // dtype's compute type (f16/bf16 in float, integers in int64); f32 narrows from double.
  const std::string value =
      table.compute_type(s.accumulate) == table.compute_type(t) ? sum : table.convert(s.accumulate, t, sum);
  const std::string element = table.load(t, "p0[" + index_text(kernel, s.in, s.axis, false) + "]");
  const std::string out = "p1[" + index_text(kernel, s.out, s.axis, false) + "]";
  const std::string i = "i" + std::to_string(s.axis);
  std::string code = indent + (integer ? "uint64_t" : table.compute_type(s.accumulate)) + " lm_sum = 0;\n";
  code += indent + "for (int64_t " + i + " = 0; " + i + " < " + expr_text(kernel.domain[s.axis]) + "; ++" + i + ") {\n";
  code += indent + "  lm_sum += " + (integer ? "(uint64_t)" : "") + element + ";\n";
  code += indent + "  " + out + " = " + table.store(t, value) + ";\n";
  code += indent + "}\n";
  return code;
}

namespace {

// The prelude's element kind (lm_f32, lm_bf16, lm_f16) that reads a kernel operand of this float
// dtype, widening f16/bf16 to f32 in registers.
const char* prelude_element(DType t) {
  switch (t) {
    case DType::F32: return "lm_f32";
    case DType::BF16: return "lm_bf16";
    case DType::F16: return "lm_f16";
    default: break;
  }
  INTERNAL_ERROR() << "no prelude element kind for " << ir::dtype_name(t);
  return "";
}

class Emitter {
 public:
  Emitter(const Kernel& k) : k_(k), table_(cpp_op_table()) {
    rank_ = static_cast<int>(k.domain.size());
    row_ = k.reduce_axis >= 0;
    inner_ = row_ ? k.reduce_axis : rank_ - 1;
    per_row_ = cpp::per_row_values(k, row_);
    uses_.assign(k.values.size(), 0);
    for (const Value& v : k.values)
      for (int a : v.args) ++uses_[a];
    for (const Reduction& r : k.reductions) ++uses_[r.input];
    for (const Store& st : k.stores) ++uses_[st.value];
    // A kernel that can report an error returns from inside its loops, which `omp simd` forbids.
    for (const Value& v : k.values) {
      if (v.kind == ValueKind::GatherLoad && !gather_position_in_range(k, v)) may_fail_ = true;
      if (v.kind == ValueKind::Compute && !ir::is_floating(v.dtype) && (v.op == ir::Op::Div || v.op == ir::Op::Mod))
        may_fail_ = true;
    }
  }

  std::string emit(const std::string& name) {
    std::ostringstream out;
    out << "// " << (k_.label.empty() ? "kernel" : k_.label) << "\n";
    out << "extern \"C\" int64_t " << name
        << "(void* const* lm_params, const int64_t* lm_symbols, int64_t lm_begin, int64_t lm_end, int64_t* lm_info) {\n";
    const std::vector<std::string> symbols = k_.symbols();
    for (size_t i = 0; i < symbols.size(); ++i)
      out << "  const int64_t " << symbol_var(symbols[i]) << " = lm_symbols[" << i << "];\n";
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const Param& p = k_.params[i];
      out << "  " << (p.is_output ? "" : "const ") << table_.storage_type(p.dtype) << "* __restrict p" << i << " = ("
          << (p.is_output ? "" : "const ") << table_.storage_type(p.dtype) << "*)lm_params[" << i << "];\n";
    }
    out << "  int64_t lm_status = 0;\n  (void)lm_status; (void)lm_info;\n";
    if (k_.kind == KernelKind::Scatter) {
      out << scatter_body();
    } else if (k_.kind == KernelKind::Gemv) {
      out << gemv_body();
    } else if (k_.kind == KernelKind::Attention) {
      out << attention_body();
    } else if (k_.kind == KernelKind::Scan) {
      out << scan_body();
    } else {
      out << loop_body();
    }
    out << "  return lm_status;\n}\n";
    return out.str();
  }

 private:
  bool index_per_row(const Index& index) const { return cpp::index_per_row(k_, index); }

  // ---- text pieces ----
  std::string index_text(const Index& index, bool row_scope) const {
    return cpp::index_text(k_, index, inner_, row_scope);
  }

  std::string value_name(int id) const { return "v" + std::to_string(id); }

  // `text` less an outermost table_.round(t, ...) wrapper, if it has one.
  std::string without_rounding(const std::string& text, DType t) const {
    const std::string marker = "@";
    const std::string wrapped = table_.round(t, marker);
    const size_t at = wrapped.find(marker);
    const std::string open = wrapped.substr(0, at), close = wrapped.substr(at + 1);
    if (open.empty() || text.size() < open.size() + close.size() || text.compare(0, open.size(), open) != 0 ||
        text.compare(text.size() - close.size(), close.size(), close) != 0)
      return text;
    // The wrapper's parenthesis must be the one that closes at the end: "lm_rbf(a) + lm_rbf(b)"
    // is not wrapped as a whole.
    int depth = 0;
    for (size_t i = open.size() - 1; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0) return i == text.size() - 1 ? text.substr(open.size(), text.size() - open.size() - close.size()) : text;
    }
    return text;
  }

  struct Scope {
    std::string* code;
    std::set<int>* done;
    bool row_scope;
    std::string indent;
  };

  // Makes sure value `id` is defined in the right scope and returns its name. `unrounded`: a
  // half-precision Compute is defined without its final rounding to f16/bf16 (for a store,
  // which rounds the same way).
  std::string ref(int id, Scope& loop, bool unrounded = false) {
    if (row_ && per_row_[id] && !loop.row_scope && k_.lane_axis < 0) {
      Scope row{&row_code_, &row_done_, true, "    "};
      return ref(id, row, unrounded);
    }
    if (loop.done->count(id)) return value_name(id);
    const Value& v = k_.values[id];
    std::string e;
    switch (v.kind) {
      case ValueKind::Literal: e = table_.literal(v.literal, v.dtype); break;
      case ValueKind::Load:
        e = table_.load(v.dtype, "p" + std::to_string(v.param) + "[" + index_text(v.index, loop.row_scope) + "]");
        break;
      case ValueKind::IotaAt: e = table_.from_index(v.dtype, iota_text(v, loop.row_scope)); break;
      case ValueKind::Accumulated: e = "r" + std::to_string(v.args[0]); break;
      case ValueKind::Compute: {
        std::vector<std::string> args;
        for (int a : v.args) args.push_back(ref(a, loop));
        const DType in = v.op == ir::Op::Where ? k_.values[v.args[1]].dtype : k_.values[v.args[0]].dtype;
        bool may_fail = false;
        e = table_.op(v.op, in, v.dtype, args, may_fail);
        if (unrounded) e = without_rounding(e, v.dtype);
        break;
      }
      case ValueKind::GatherLoad: {
        const std::string idx = ref(v.args[0], loop);
        const std::string g = "g" + std::to_string(id);
        *loop.code += loop.indent + "const int64_t " + g + " = (int64_t)" + idx + ";\n";
        if (!gather_position_in_range(k_, v))
          *loop.code += loop.indent + "if (" + g + " < 0 || " + g + " >= " + expr_text(v.extent) +
                        ") { lm_info[0] = " + g + "; lm_info[1] = " + expr_text(v.extent) + "; return 1; }\n";
        e = table_.load(v.dtype, "p" + std::to_string(v.param) + "[" + index_text(v.index, loop.row_scope) + " + " + g +
                                     " * " + expr_text(v.gather_stride) + "]");
        break;
      }
    }
    *loop.code += loop.indent + "const " + table_.compute_type(v.dtype) + " " + value_name(id) + " = " + e + ";\n";
    loop.done->insert(id);
    return value_name(id);
  }

  std::string iota_text(const Value& v, bool row_scope) const {
    return cpp::iota_text(k_, v, inner_, row_scope);
  }

  // `value` (compute-type text) written to store `s`'s element, in the param's storage type
  // (`converted`: the text already is of the storage type).
  std::string store_statement(const Store& s, const std::string& value, const Scope& scope,
                              bool converted = false) const {
    return scope.indent + "p" + std::to_string(s.param) + "[" + index_text(s.index, scope.row_scope) +
           "] = " + (converted ? value : table_.store(k_.params[s.param].dtype, value)) + ";\n";
  }
  // Whether value `id` is a bf16 value exactly as some input holds it or a literal rounded to
  // bf16: a load, or a Where between such values.
  bool bf16_as_loaded(int id) const {
    const Value& v = k_.values[id];
    if (v.dtype != DType::BF16) return false;
    switch (v.kind) {
      case ValueKind::Load:
      case ValueKind::GatherLoad:
      case ValueKind::Literal: return true;
      case ValueKind::Compute: return v.op == ir::Op::Where && bf16_as_loaded(v.args[1]) && bf16_as_loaded(v.args[2]);
      default: return false;
    }
  }

  // How a store writes its value (store_line, lane_store_line).
  enum class StoreForm {
    // A bf16 value loaded, or selected among loaded and literal ones (a masked_fill, a copy):
    // its bits. Rounding it again cost a bf16 causal mask a third of its time.
    Bits,
    // A half-precision result read by nothing else, defined without its final rounding: a store
    // to f16/bf16 rounds to nearest-even itself, and rounding twice gives the same bits (the
    // rounding was a quarter of a bf16 pointwise kernel's time).
    Unrounded,
    Converted,  // converted to the param's dtype, rounding where that is half precision
  };
  StoreForm store_form(const Store& s) const {
    const DType t = k_.params[s.param].dtype;
    const Value& stored = k_.values[s.value];
    if (t == DType::BF16 && bf16_as_loaded(s.value)) return StoreForm::Bits;
    if ((t == DType::BF16 || t == DType::F16) && stored.dtype == t && stored.kind == ValueKind::Compute &&
        uses_[s.value] == 1)
      return StoreForm::Unrounded;
    return StoreForm::Converted;
  }

  std::string store_line(const Store& s, Scope& scope) {
    switch (store_form(s)) {
      case StoreForm::Bits:
        return store_statement(s, "lm_bf16_bits(" + ref(s.value, scope) + ")", scope, /*converted=*/true);
      case StoreForm::Unrounded: return store_statement(s, ref(s.value, scope, true), scope);
      case StoreForm::Converted: break;
    }
    return store_statement(s, convert_for_store(s.value, k_.params[s.param].dtype, ref(s.value, scope)), scope);
  }
  std::string convert_for_store(int value, DType to, const std::string& v) const {
    return k_.values[value].dtype == to ? v : table_.convert(k_.values[value].dtype, to, v);
  }

  std::string simd_pragma(const std::string& clause) const {
    if (may_fail_) return "";
    return "    #pragma omp simd" + (clause.empty() ? "" : " " + clause) + "\n";
  }

  // The inner loop over [begin, end); by default the whole inner extent.
  std::string loop_header(const std::string& indent, const std::string& begin = "0",
                          const std::string& end = "") const {
    const std::string var = "i" + std::to_string(inner_);
    return indent + "for (int64_t " + var + " = " + begin + "; " + var + " < " +
           (end.empty() ? expr_text(k_.domain[inner_]) : end) + "; ++" + var + ") {\n";
  }

  // Declares the loop variables of `dims` (outermost first) from `item`: the work item lm_p, or
  // an expression of it.
  std::string item_indices(const std::vector<int>& dims, const std::string& item = "lm_p") const {
    if (dims.empty()) return "    (void)lm_p;\n";
    std::string out = "    int64_t lm_r = " + item + ";\n";
    for (int j = static_cast<int>(dims.size()) - 1; j >= 0; --j) {
      const std::string var = "    const int64_t i" + std::to_string(dims[j]) + " = ";
      const std::string extent = expr_text(k_.domain[dims[j]]);
      if (j == 0) out += var + "lm_r;\n";
      else if (is_one(k_.domain[dims[j]])) out += var + "0;\n";
      else out += var + "lm_r % " + extent + "; lm_r /= " + extent + ";\n";
    }
    return out;
  }

  // A row kernel's last pass may keep its element value, and the final pass read it back
  // instead of computing it again: softmax then evaluates exp once per element, not twice.
  // Only where the value contains a transcendental (else recomputing is as cheap as reloading).
  // The value goes into the output itself where that is exact and safe: one varying store, in
  // the value's own dtype, f32/f64 (a half-precision output would round it), and the store's
  // value depends on nothing else per element (no other load), so an output sharing memory
  // with an input is never read after the stash overwrote it. Otherwise, for an f32/f64 value
  // over a static row of at most kMaxScratchStash elements (a half-precision softmax), it goes
  // into a row-sized array on the stack.
  static constexpr int64_t kMaxScratchStash = 8192;
  struct Stash {
    const Store* store = nullptr;  // the output that receives it
    bool scratch = false;          // or the stack array lm_stash
  };
  Stash stash_plan() const {
    if (!row_ || k_.reductions.empty()) return {};
    const int x = k_.reductions.back().input;
    const DType xt = k_.values[x].dtype;
    if (per_row_[x] || (xt != DType::F32 && xt != DType::F64)) return {};
    std::function<bool(int)> transcendental = [&](int id) {
      const Value& v = k_.values[id];
      if (v.kind != ValueKind::Compute) return false;
      if (v.op == ir::Op::Exp || v.op == ir::Op::Log || v.op == ir::Op::Tanh || v.op == ir::Op::Erf ||
          v.op == ir::Op::Sigmoid)
        return true;
      for (int a : v.args)
        if (transcendental(a)) return true;
      return false;
    };
    if (!transcendental(x)) return {};
    const Store* varying = nullptr;
    bool one_varying = true;
    for (const Store& s : k_.stores) {
      if (per_row_[s.value] && index_per_row(s.index)) continue;
      if (varying) one_varying = false;
      varying = &s;
    }
    if (!varying) return {};
    bool uses_x = false;
    std::function<bool(int)> only_through_x = [&](int id) {
      if (id == x) return uses_x = true;
      const Value& v = k_.values[id];
      if (per_row_[id] || v.kind == ValueKind::Literal) return true;
      if (v.kind != ValueKind::Compute) return false;
      for (int a : v.args)
        if (!only_through_x(a)) return false;
      return true;
    };
    if (one_varying && k_.params[varying->param].dtype == xt && only_through_x(varying->value) && uses_x)
      return {varying, false};
    const ir::Expr& extent = k_.domain[inner_];
    if (extent.is_constant() && extent.constant_value() <= kMaxScratchStash) return {nullptr, true};
    return {};
  }

  // A row kernel whose reductions need elements (max/min) fails on an empty reduce axis.
  std::string empty_row_check() const {
    for (const Reduction& r : k_.reductions)
      if (cpp_op_table().reduction(r.op, r.dtype, 0).needs_elements)
        return "  if (" + expr_text(k_.domain[inner_]) + " == 0) return 2;\n";
    return "";
  }

  std::string loop_body() {
    if (row_ && k_.lane_axis >= 0) return column_row_body();
    std::ostringstream out;
    if (row_) out << empty_row_check();
    out << "  for (int64_t lm_p = lm_begin; lm_p < lm_end; ++lm_p) {\n";
    std::vector<int> outer;
    for (int d = 0; d < rank_; ++d)
      if (d != inner_) outer.push_back(d);
    out << item_indices(outer);

    if (!row_) {
      if (inner_ < 0) {  // rank 0: one element
        std::string code;
        std::set<int> done;
        Scope scope{&code, &done, false, "    "};
        for (const Store& s : k_.stores) code += store_line(s, scope);
        out << code;
      } else {
        std::string code;
        std::set<int> done;
        Scope scope{&code, &done, false, "      "};
        for (const Store& s : k_.stores) {
          std::string line = store_line(s, scope);
          code += line;
        }
        const std::vector<int64_t> splits = inner_split_points(k_, inner_);
        std::vector<const Store*> stores;
        for (const Store& s : k_.stores) stores.push_back(&s);
        if (splits.empty()) {
          const std::string lanes = lane_loop(stores, "0", expr_text(k_.domain[inner_]));
          out << lanes << simd_pragma("") << loop_header("    ", lanes.empty() ? "0" : "lm_lane_end") << code
              << "    }\n";
        } else {
          // (Splits exist only over a constant extent.)
          std::vector<int64_t> bounds = {0};
          bounds.insert(bounds.end(), splits.begin(), splits.end());
          bounds.push_back(k_.domain[inner_].constant_value());
          for (size_t r = 0; r + 1 < bounds.size(); ++r) {
            const std::string begin = "INT64_C(" + std::to_string(bounds[r]) + ")";
            const std::string end = "INT64_C(" + std::to_string(bounds[r + 1]) + ")";
            piece_ = {bounds[r], bounds[r + 1]};
            const std::string lanes = lane_loop(stores, begin, end);
            piece_.reset();
            out << (lanes.empty() ? "" : "    {\n" + lanes) << simd_pragma("")
                << loop_header("    ", lanes.empty() ? begin : "lm_lane_end", end) << code << "    }\n"
                << (lanes.empty() ? "" : "    }\n");
          }
        }
      }
      out << "  }\n";
      return out.str();
    }

    // Row kernel: one pass per reduction, then the varying stores.
    row_code_.clear();
    row_done_.clear();
    const Stash stash = stash_plan();
    const std::string inner_var = "i" + std::to_string(inner_);
    if (stash.scratch)
      out << "    " << table_.compute_type(k_.values[k_.reductions.back().input].dtype) << " lm_stash["
          << expr_text(k_.domain[inner_]) << "];\n";
    for (size_t ri = 0; ri < k_.reductions.size(); ++ri) {
      const Reduction& r = k_.reductions[ri];
      const DType in_dtype = k_.values[r.input].dtype;
      ReductionText text = table_.reduction(r.op, in_dtype, static_cast<int>(ri));
      std::string body;
      std::set<int> done;
      Scope scope{&body, &done, false, "      "};
      const std::string x = ref(r.input, scope);
      if (ri + 1 == k_.reductions.size()) {
        if (stash.store) body += store_statement(*stash.store, x, scope);
        if (stash.scratch) body += scope.indent + "lm_stash[" + inner_var + "] = " + x + ";\n";
      }
      const std::string acc = "acc" + std::to_string(ri);
      std::string combine = text.combine;
      replace_all(combine, "%a", acc);
      replace_all(combine, "%x", x);
      std::string finish = text.finish;
      replace_all(finish, "%a", acc);
      out << row_code_;  // per-row values this pass needs
      row_code_.clear();
      out << "    " << text.accumulator_type << " " << acc << " = " << text.init << ";\n";
      if (!text.extra_declaration.empty()) out << "    " << text.extra_declaration << "\n";
      out << simd_pragma(text.simd_clause) << loop_header("    ") << body << "      " << combine << "\n    }\n";
      const std::string result_type = table_.compute_type(r.dtype);
      out << "    const " << result_type << " r" << ri << " = "
          << table_.round(r.dtype, "(" + result_type + ")(" + finish + ")") << ";\n";
    }
    std::string final_body;
    std::set<int> final_done;
    Scope final_scope{&final_body, &final_done, false, "      "};
    if (stash.store || stash.scratch) {
      // The stash holds the value in its own dtype either way (stash_plan requires the output's
      // dtype to be the value's).
      const int value = k_.reductions.back().input;
      const DType t = k_.values[value].dtype;
      const std::string read =
          stash.store ? table_.load(t, "p" + std::to_string(stash.store->param) + "[" +
                                           index_text(stash.store->index, false) + "]")
                      : "lm_stash[" + inner_var + "]";
      final_body += final_scope.indent + "const " + table_.compute_type(t) + " " + value_name(value) + " = " + read +
                    ";\n";
      final_done.insert(value);
    }
    // Per-row values are all defined before the final pass (row_code_), whichever store asks
    // for them first; the per-row store lines themselves come after it.
    std::string row_stores;
    Scope row_scope{&row_code_, &row_done_, true, "    "};
    std::vector<const Store*> varying;
    for (const Store& s : k_.stores) {
      if (per_row_[s.value] && index_per_row(s.index)) {
        std::string line = store_line(s, row_scope);
        row_stores += line;
      } else {
        std::string line = store_line(s, final_scope);
        final_body += line;
        varying.push_back(&s);
      }
    }
    // (A stash is read back by the scalar loop only.)
    const std::string lanes =
        stash.store || stash.scratch || final_body.empty() ? "" : lane_loop(varying, "0", expr_text(k_.domain[inner_]));
    out << row_code_;
    row_code_.clear();
    if (!lanes.empty())
      out << lanes << simd_pragma("") << loop_header("    ", "lm_lane_end") << final_body << "    }\n";
    else if (!final_body.empty())
      out << simd_pragma("") << loop_header("    ") << final_body << "    }\n";
    out << row_stores;
    out << "  }\n";
    return out.str();
  }

  // A row kernel with Kernel::lane_axis (cpp::column_lane_axis): a work item is a run of up to
  // lane_run() indices of the lane dim, one accumulator each on the stack. Every step along the
  // reduce axis runs all reductions over the run (the lanes contiguous in memory, the loop
  // vectorised across them), then each lane's per-row values and stores. Each lane sums its
  // elements in order along the axis.
  std::string column_row_body() {
    const int lane = k_.lane_axis;
    const std::string run = std::to_string(k_.lane_run());
    const std::string lane_var = "i" + std::to_string(lane);
    std::ostringstream out;
    out << empty_row_check();
    out << "  const int64_t lm_runs = (" << expr_text(k_.domain[lane]) << " + " << run << " - 1) / " << run << ";\n";
    out << "  for (int64_t lm_p = lm_begin; lm_p < lm_end; ++lm_p) {\n";
    std::vector<int> outer;
    for (int d = 0; d < rank_; ++d)
      if (d != inner_ && d != lane) outer.push_back(d);
    out << "    const int64_t lm_lane0 = lm_p % lm_runs * " << run << ";\n";
    out << "    const int64_t lm_lanes = lm_imin(" << run << ", " << expr_text(k_.domain[lane]) << " - lm_lane0);\n";
    out << item_indices(outer, "lm_p / lm_runs");
    std::string step, finish;
    std::set<int> done;
    Scope scope{&step, &done, false, "        "};
    for (size_t ri = 0; ri < k_.reductions.size(); ++ri) {
      const Reduction& r = k_.reductions[ri];
      const ReductionText text = table_.reduction(r.op, k_.values[r.input].dtype, static_cast<int>(ri));
      const std::string acc = "acc" + std::to_string(ri), nan = "nan" + std::to_string(ri);
      out << "    " << text.accumulator_type << " " << acc << "[" << run << "];\n";
      out << "    for (int64_t lm_j = 0; lm_j < " << run << "; ++lm_j) " << acc << "[lm_j] = " << text.init << ";\n";
      if (!text.extra_declaration.empty()) out << "    int " << nan << "[" << run << "] = {};\n";
      // The table's accumulator and NaN flag, indexed by the lane.
      const std::string x = ref(r.input, scope);
      std::string combine = text.combine;
      replace_all(combine, "%a", acc + "[lm_j]");
      replace_all(combine, "%x", x);
      replace_identifier(combine, nan, nan + "[lm_j]");
      step += scope.indent + combine + "\n";
      std::string result = text.finish;
      replace_all(result, "%a", acc + "[lm_j]");
      replace_identifier(result, nan, nan + "[lm_j]");
      const std::string result_type = table_.compute_type(r.dtype);
      finish += "      const " + result_type + " r" + std::to_string(ri) + " = " +
                table_.round(r.dtype, "(" + result_type + ")(" + result + ")") + ";\n";
    }
    out << "    for (int64_t i" << inner_ << " = 0; i" << inner_ << " < " << expr_text(k_.domain[inner_]) << "; ++i"
        << inner_ << ") {\n";
    out << "  " << simd_pragma("") << "      for (int64_t lm_j = 0; lm_j < lm_lanes; ++lm_j) {\n";
    out << "        const int64_t " << lane_var << " = lm_lane0 + lm_j;\n" << step << "      }\n    }\n";
    // Each lane's results, per-row values and stores.
    row_code_.clear();
    row_done_.clear();
    Scope row_scope{&row_code_, &row_done_, true, "      "};
    std::string stores;
    for (const Store& st : k_.stores) stores += store_line(st, row_scope);
    out << "    for (int64_t lm_j = 0; lm_j < lm_lanes; ++lm_j) {\n";
    out << "      const int64_t " << lane_var << " = lm_lane0 + lm_j;\n" << finish << row_code_ << stores << "    }\n";
    out << "  }\n";
    return out.str();
  }

  // ---- explicit 16-lane loops ----
  // Where the CPU has AVX512-BF16 (LM_LANE_LOOPS in the prelude), a simd loop over the inner dim
  // whose every value is f32 or bf16, read contiguously (or the same along the whole loop: a
  // per-row value, a literal) and computed by + - * /, negation, reciprocal, exp, sigmoid, erf
  // and casts between the two, with a bf16 value or output or an erf, first runs as explicit
  // 16-lane code (prelude's kLaneHelpers) over its whole vectors; the scalar loop does the rest.
  // GCC vectorises the scalar loop too, but rounds to bf16 in seven integer operations per
  // vector where this is one vcvtneps2bf16: a bf16 RMSNorm's final pass spent two thirds of its
  // instructions rounding (docs/lessons.md, 2026-12-06 (morning)). A loop with an erf takes
  // kErfLaneVectors vectors per iteration, each value computed for all of them before the next
  // and the erfs interleaved step by step (lm_erff_lanes): one vector's erf is a dependency chain
  // the core cannot overlap enough of (2026-12-06 (night)). Each lane computes what the scalar
  // code computes, in the same order: the same bits.
  // Memoised per value (lane_known_: -1 not yet known): a value read twice by each of a chain
  // of ops (x = x * x, 32 times) made the walk exponential.
  bool lane_value(int id) {
    if (lane_known_[id] < 0) lane_known_[id] = lane_value_uncached(id) ? 1 : 0;
    return lane_known_[id] == 1;
  }
  bool lane_value_uncached(int id) {
    const Value& v = k_.values[id];
    if (v.dtype != DType::F32 && v.dtype != DType::BF16) return false;
    if (row_ && per_row_[id]) return true;
    switch (v.kind) {
      case ValueKind::Literal: return true;
      case ValueKind::Load: {
        if (inner_ >= static_cast<int>(v.index.strides.size())) return false;
        const ir::Expr& stride = v.index.strides[inner_];
        return is_zero(stride) || is_one(stride);
      }
      case ValueKind::GatherLoad: return lane_gather(v).has_value();
      case ValueKind::Compute: {
        if (v.op == ir::Op::Where) {
          const std::optional<bool> condition = piece_condition(v.args[0]);
          return condition && lane_value(v.args[*condition ? 1 : 2]);
        }
        switch (v.op) {
          case ir::Op::Add: case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Neg:
          case ir::Op::Recip: case ir::Op::Sigmoid: case ir::Op::Exp: case ir::Op::Erf: case ir::Op::Cast: break;
          default: return false;
        }
        for (int a : v.args)
          if (!lane_value(a)) return false;
        return true;
      }
      default: return false;
    }
  }
  // Whether `id` or a value it is computed from within the loop is `wanted`, memoised in `memo`
  // as lane_known_ is: reaches_bf16 a bf16 value, reaches_erf an erf the loop computes (not a
  // per-row one, which the row's scalar code computes).
  bool reaches(int id, std::vector<signed char>& memo, const std::function<bool(int)>& wanted) {
    if (memo[id] < 0) {
      const Value& v = k_.values[id];
      bool found = wanted(id);
      if (!found && v.kind == ValueKind::Compute && !(row_ && per_row_[id]))
        for (int a : v.args) found = found || reaches(a, memo, wanted);
      memo[id] = found ? 1 : 0;
    }
    return memo[id] == 1;
  }
  bool reaches_bf16(int id) {
    return reaches(id, reaches_bf16_, [&](int v) { return k_.values[v].dtype == DType::BF16; });
  }
  bool reaches_erf(int id) {
    return reaches(id, reaches_erf_, [&](int v) {
      return k_.values[v].kind == ValueKind::Compute && k_.values[v].op == ir::Op::Erf && !(row_ && per_row_[v]);
    });
  }
  std::vector<signed char> lane_known_, reaches_bf16_, reaches_erf_;
  // Vectors per lane-loop iteration: 1, or kErfLaneVectors in a loop with an erf, where each lane
  // value is an array of them (w<id>[lm_k]) and each statement a loop over lm_k.
  static constexpr int kErfLaneVectors = 4;
  int lane_vectors_ = 1;

  // Inside one piece of a split inner loop (inner_split_points), [first, last): cat's piece
  // selects and clamped positions there are constants and i + c, which make rotate_half's
  // gathers contiguous loads (RoPE).
  std::optional<std::pair<int64_t, int64_t>> piece_;
  struct Affine {  // a * i + b, i the inner loop index
    int64_t a = 0, b = 0;
  };
  // Value `id` as an affine function of the inner index over the piece, where it is one
  // (memoised per piece in piece_affine_).
  std::vector<std::optional<std::optional<Affine>>> piece_affine_;
  std::optional<Affine> piece_affine(int id) {
    if (!piece_affine_[id]) piece_affine_[id] = piece_affine_uncached(id);
    return *piece_affine_[id];
  }
  std::optional<Affine> piece_affine_uncached(int id) {
    if (!piece_) return std::nullopt;
    const Value& v = k_.values[id];
    if (v.dtype != DType::I64 && v.dtype != DType::I32) return std::nullopt;
    if (v.kind == ValueKind::IotaAt && iota_loop_dim(k_, v) == inner_) return Affine{1, 0};
    if (v.kind == ValueKind::Literal && v.literal.is_integer) return Affine{0, v.literal.integer};
    if (v.kind != ValueKind::Compute) return std::nullopt;
    const auto at = [&](const Affine& f, int64_t i) { return f.a * i + f.b; };
    const int64_t first = piece_->first, last = piece_->second - 1;
    switch (v.op) {
      case ir::Op::Copy: return piece_affine(v.args[0]);
      case ir::Op::Add:
      case ir::Op::Sub:
      case ir::Op::Min:
      case ir::Op::Max: {
        const std::optional<Affine> x = piece_affine(v.args[0]), y = piece_affine(v.args[1]);
        if (!x || !y) return std::nullopt;
        if (v.op == ir::Op::Add) return Affine{x->a + y->a, x->b + y->b};
        if (v.op == ir::Op::Sub) return Affine{x->a - y->a, x->b - y->b};
        // Both affine, so x - y is monotone: its sign at the piece's ends is its sign throughout.
        const bool x_le_y = at(*x, first) <= at(*y, first) && at(*x, last) <= at(*y, last);
        const bool y_le_x = at(*y, first) <= at(*x, first) && at(*y, last) <= at(*x, last);
        if (!x_le_y && !y_le_x) return std::nullopt;
        return (v.op == ir::Op::Min) == x_le_y ? x : y;
      }
      default: return std::nullopt;
    }
  }
  // Bool value `id` where it is the same over the whole piece.
  std::optional<bool> piece_condition(int id) {
    if (!piece_) return std::nullopt;
    const Value& v = k_.values[id];
    if (v.kind != ValueKind::Compute || v.dtype != DType::Bool) return std::nullopt;
    if (v.op != ir::Op::Lt && v.op != ir::Op::Le && v.op != ir::Op::Eq && v.op != ir::Op::Ne) return std::nullopt;
    const std::optional<Affine> x = piece_affine(v.args[0]), y = piece_affine(v.args[1]);
    if (!x || !y) return std::nullopt;
    const auto holds = [&](int64_t i) {
      const int64_t l = x->a * i + x->b, r = y->a * i + y->b;
      return v.op == ir::Op::Lt ? l < r : v.op == ir::Op::Le ? l <= r : v.op == ir::Op::Eq ? l == r : l != r;
    };
    // x - y is monotone, so < and <= hold throughout where they hold at both ends; == and != only
    // where x - y is constant.
    const int64_t first = piece_->first, last = piece_->second - 1;
    const bool constant_difference = x->a == y->a;
    if ((v.op == ir::Op::Eq || v.op == ir::Op::Ne) && !constant_difference) return std::nullopt;
    if (holds(first) != holds(last)) return std::nullopt;
    return holds(first);
  }
  // A gather in the piece whose position is an affine function of the inner index and whose
  // element stride along it is 0 or 1: a broadcast or a contiguous load.
  struct LaneGather {
    Affine position;
    bool broadcast = false;  // element stride 0
  };
  std::optional<LaneGather> lane_gather(const Value& v) {
    const std::optional<Affine> position = piece_affine(v.args[0]);
    if (!position || !v.gather_stride.is_constant() || inner_ >= static_cast<int>(v.index.strides.size()) ||
        !v.index.strides[inner_].is_constant())
      return std::nullopt;
    const int64_t stride = v.index.strides[inner_].constant_value() + position->a * v.gather_stride.constant_value();
    if (stride != 0 && stride != 1) return std::nullopt;
    return LaneGather{*position, stride == 0};
  }
  // The lane value read at element `at` (text of an lvalue): the same for every lane where
  // `broadcast`, else 16 contiguous elements from it.
  std::string lane_load(DType t, const std::string& at, bool broadcast) const {
    if (broadcast) return "lm_splat16(" + table_.load(t, at) + ")";
    return std::string(t == DType::BF16 ? "lm_lanes_bf16(&" : "lm_lanes_f32(&") + at + ")";
  }

  std::string lane_name(int id) const { return "w" + std::to_string(id) + (lane_vectors_ > 1 ? "[lm_k]" : ""); }
  // `statement` for each of the iteration's vectors: itself with one vector, else in a loop over
  // lm_k that declares the inner index of vector lm_k.
  std::string each_lane_vector(const std::string& indent, const std::string& statement) const {
    if (lane_vectors_ == 1) return indent + statement + "\n";
    const std::string i = "i" + std::to_string(inner_);
    return indent + "for (int lm_k = 0; lm_k < " + std::to_string(lane_vectors_) + "; ++lm_k) { const int64_t " + i +
           " = lm_lane_base + 16 * lm_k; " + statement + " }\n";
  }

  // ref() for the lane loop: value `id` as an lm_f32x16 of the 16 elements from the loop index.
  std::string lane_ref(int id, Scope& loop, bool unrounded = false) {
    if (row_ && per_row_[id]) {
      Scope row{&row_code_, &row_done_, true, "    "};
      return "lm_splat16(" + ref(id, row) + ")";
    }
    if (loop.done->count(id)) return lane_name(id);
    const Value& v = k_.values[id];
    std::string e;
    switch (v.kind) {
      case ValueKind::Literal: e = "lm_splat16(" + table_.literal(v.literal, v.dtype) + ")"; break;
      case ValueKind::Load:
        e = lane_load(v.dtype, "p" + std::to_string(v.param) + "[" + index_text(v.index, false) + "]",
                      is_zero(v.index.strides[inner_]));
        break;
      case ValueKind::GatherLoad: {
        const LaneGather gather = *lane_gather(v);
        const Affine& position = gather.position;
        const std::string i = "i" + std::to_string(inner_);
        e = lane_load(v.dtype,
                      "p" + std::to_string(v.param) + "[" + index_text(v.index, false) + " + (" +
                          (position.a == 0 ? "" : std::to_string(position.a) + " * " + i + " + ") +
                          std::to_string(position.b) + ") * " + expr_text(v.gather_stride) + "]",
                      gather.broadcast);
        break;
      }
      case ValueKind::Compute: {
        if (v.op == ir::Op::Where) return lane_ref(v.args[*piece_condition(v.args[0]) ? 1 : 2], loop, unrounded);
        std::vector<std::string> args;
        for (int a : v.args) args.push_back(lane_ref(a, loop));
        const DType in = k_.values[v.args[0]].dtype;
        if (v.op == ir::Op::Erf) {
          // All the iteration's vectors at once (its argument copied into an array of them).
          INTERNAL_CHECK(lane_vectors_ == kErfLaneVectors) << "an erf in a lane loop of one vector: " << k_.label;
          const std::string x = "x" + std::to_string(id), w = "w" + std::to_string(id), count = std::to_string(lane_vectors_);
          *loop.code += loop.indent + "lm_f32x16 " + x + "[" + count + "], " + w + "[" + count + "];\n" +
                        each_lane_vector(loop.indent, x + "[lm_k] = " + args[0] + ";") + loop.indent + "lm_erff_lanes<" +
                        count + ">(" + x + ", " + w + ");\n";
          loop.done->insert(id);
          return lane_name(id);
        }
        if (v.op == ir::Op::Cast) {
          // f32 -> bf16 rounds; bf16 -> f32 and same-dtype casts keep the value.
          e = in == DType::F32 && v.dtype == DType::BF16 && !unrounded ? "lm_rbf(" + args[0] + ")" : args[0];
        } else {
          bool may_fail = false;
          e = table_.op(v.op, in, v.dtype, args, may_fail);
          if (unrounded) e = without_rounding(e, v.dtype);
        }
        break;
      }
      default: INTERNAL_ERROR() << "value " << id << " is not a lane value in " << k_.label;
    }
    if (lane_vectors_ == 1) {
      *loop.code += loop.indent + "const lm_f32x16 " + lane_name(id) + " = " + e + ";\n";
    } else {
      *loop.code += loop.indent + "lm_f32x16 w" + std::to_string(id) + "[" + std::to_string(lane_vectors_) + "];\n" +
                    each_lane_vector(loop.indent, lane_name(id) + " = " + e + ";");
    }
    loop.done->insert(id);
    return lane_name(id);
  }

  // store_line() for the lane loop (an f32 or bf16 param; a bf16 value is exact in f32).
  std::string lane_store_line(const Store& s, Scope& scope) {
    const std::string at = "&p" + std::to_string(s.param) + "[" + index_text(s.index, false) + "]";
    const StoreForm form = store_form(s);
    const std::string value = lane_ref(s.value, scope, form == StoreForm::Unrounded);
    const char* store = k_.params[s.param].dtype == DType::F32 ? "lm_store_lanes_f32("
                        : form == StoreForm::Bits               ? "lm_store_lanes_bf16_bits("
                                                                : "lm_store_lanes_bf16(";
    return each_lane_vector(scope.indent, store + at + ", " + value + ");");
  }

  // The lane loop over [begin, lm_lane_end) for `stores`, declaring lm_lane_end (begin without
  // LM_LANE_LOOPS) for the scalar loop that follows up to `end`; "" where the loop does not qualify.
  std::string lane_loop(const std::vector<const Store*>& stores, const std::string& begin, const std::string& end) {
    if (may_fail_ || inner_ < 0 || stores.empty()) return "";
    // (What a value is can differ between the pieces of a split loop.)
    lane_known_.assign(k_.values.size(), -1);
    reaches_bf16_.assign(k_.values.size(), -1);
    reaches_erf_.assign(k_.values.size(), -1);
    piece_affine_.assign(k_.values.size(), std::nullopt);
    bool bf16 = false, erf = false;
    for (const Store* s : stores) {
      const DType t = k_.params[s->param].dtype;
      if ((t != DType::F32 && t != DType::BF16) || inner_ >= static_cast<int>(s->index.strides.size()) ||
          !is_one(s->index.strides[inner_]) || !lane_value(s->value))
        return "";
      bf16 = bf16 || t == DType::BF16 || reaches_bf16(s->value);
      erf = erf || reaches_erf(s->value);
    }
    if (!bf16 && !erf) return "";
    lane_vectors_ = erf ? kErfLaneVectors : 1;
    std::string code;
    std::set<int> done;
    Scope scope{&code, &done, false, "      "};
    for (const Store* s : stores) code += lane_store_line(*s, scope);
    const std::string step = std::to_string(16 * lane_vectors_);
    const std::string i = lane_vectors_ == 1 ? "i" + std::to_string(inner_) : "lm_lane_base";
    lane_vectors_ = 1;
    return "#if LM_LANE_LOOPS\n    const int64_t lm_lane_end = " + begin + " + (" + end + " - " + begin + ") / " + step +
           " * " + step + ";\n    for (int64_t " + i + " = " + begin + "; " + i + " < lm_lane_end; " + i + " += " + step +
           ") {\n" + code + "    }\n#else\n    const int64_t lm_lane_end = " + begin + ";\n#endif\n";
  }

  // ---- gemv ----
  // Work items are output columns (with every row of a: the M dim is looped inside, so that the
  // block's weight rows stay in cache across a's rows); an item that starts a block of the
  // tile's weight rows (kGemvRows by default) inside this chunk and inside its batch computes the
  // whole block.
  std::string gemv_body() const {
    if (k_.gemv.columns) return column_gemv_body();
    const GemvSpec& g = k_.gemv;
    const DType t = k_.params[2].dtype;
    const DType w = k_.params[1].dtype;
    const int n_axis = rank_ - 1;
    const bool strips = k_.gemv_strips();
    INTERNAL_CHECK((!g.has_bias && !g.has_output_scale) ||
                   (g.group == 0 && ir::is_floating(t) && k_.params.size() == 3u + g.has_bias + g.has_output_scale))
        << "a bias or scale epilogue on a GEMV that is not a float one of a per-channel or float weight: " << k_.label;
    INTERNAL_CHECK(!g.amx_tiles ||
                   (strips && t == DType::BF16 && (w == DType::BF16 ? g.bf16_pairs : w == DType::I8) && k_.tile == 0))
        << "AMX tiles on a GEMV that is not a bf16 prompt's strips one of 32-row blocks: " << k_.label;
    const ir::Expr& a_rows = k_.domain[rank_ - 2];
    // bf16 weights read in place as bf16 pairs take six rows for any prompt: twelve rows a 4 KiB
    // stride apart (a depth of 2048) share L1 sets, and a 16 x 2048 x 8192 product took 3.3 ms
    // against 2.1 with six on two Zen 4 cores.
    const bool one_strip = a_rows.is_constant() && a_rows.constant_value() <= 16 && w != DType::BF16;
    const int64_t block = k_.tile > 0 ? k_.tile
                          : g.amx_tiles ? kAmxGemvRows
                          : strips      ? (one_strip ? kGemvOneStripRows : kGemvStripRows)
                                        : kGemvRows;
    const std::string rows = std::to_string(block);
    // f32 weights' strips take panels of blocks where the strips outgrow L2 (lm_gemv_strips):
    // the sums of a block, or of a panel's blocks, are block_rows rows at most.
    const bool panels = strips && t == DType::F32 && w == DType::F32;
    const std::string block_rows = std::to_string(panels ? block * kGemvStripPanelBlocks : block);
    std::ostringstream out, pointers;
    // The row function's call is call_head + R + call_tail; with strips, the strip function's is
    // strips_head + R + strips_tail.
    std::string call_head, call_tail, strips_head = "lm_gemv_strips<",
                                      strips_tail = ">(lm_strips, (" + expr_text(a_rows) + "), lm_w, lm_row_stride, lm_depth, ";
    std::string group_args;  // a grouped weight's arguments after the depth
    // A [1, N] GEMV whose row kernel reads rows one after another runs the halves of a chunk's
    // whole blocks as two streams: pair_call sums block lm_q's rows into lm_sums and block
    // lm_half + lm_q's into lm_sums_b; pair_half, the count of rows of each half (0: no pairs).
    std::string pair_call, pair_half;
    const char* sum_type = "float";
    // The scratch this call has allocated so far, freed on every way out of the kernel.
    std::string frees;
    const auto fail = [&](int64_t code) { return "{ " + frees + "return " + std::to_string(code) + "; }"; };
    out << "  const int64_t lm_depth = " << expr_text(g.depth) << ";\n";
    if (widens_activations()) {
      // bf16 activations times int8 weights without batch dims: `a` is widened to f32 once per
      // call, so that the rows stream one after another as with f32 activations
      // (lm_gemv_rows_sequential, lm_gemv_row_groups_bf16); the products are the same f32 values.
      // A per-channel weight's rows (lm_bf16_i8_rows) widen it in registers instead where the
      // CPU has AVX-512: then lm_wide stays null. (+ 1: an empty `a` is not an allocation failure.)
      const std::string widens = g.group > 0 ? "true" : "lm_bf16_i8_rows::kWidensA";
      out << "  const int64_t lm_a_rows = " << expr_text(k_.domain[rank_ - 2]) << ";\n";
      out << "  float* lm_wide = nullptr;\n";
      out << "  if (" << widens << ") {\n";
      out << "    lm_wide = (float*)__builtin_malloc(sizeof(float) * (lm_a_rows * lm_depth + 1));\n";
      out << "    if (lm_wide == nullptr) " << fail(static_cast<int64_t>(kKernelOutOfMemory)) << "\n";
      frees += "__builtin_free(lm_wide); ";
      out << "    for (int64_t lm_m = 0; lm_m < lm_a_rows; ++lm_m) {\n";
      out << "      const int64_t i0 = 0, i1 = 0;  // a's index at row 0 (its stride along N is 0)\n";
      out << "      (void)i0; (void)i1;\n";
      out << "      lm_widen_bf16(p0 + " << index_text(g.a, false) << " + lm_m * "
          << expr_text(g.a.strides[rank_ - 2]) << ", lm_depth, lm_wide + lm_m * lm_depth);\n    }\n  }\n";
    }
    if (t == DType::I32) {
      // int8 or uint8 x int8, summed exactly in i32 (lm_gemv_rows_i8).
      const DType a_dtype = k_.params[0].dtype;
      INTERNAL_CHECK(w == DType::I8 && (a_dtype == DType::I8 || a_dtype == DType::U8))
          << "i32 gemv of " << ir::dtype_name(a_dtype) << " by " << ir::dtype_name(w);
      pointers << "    const " << (a_dtype == DType::U8 ? "unsigned" : "signed") << " char* lm_a = p0 + "
               << index_text(g.a, false) << ";\n";
      pointers << "    const signed char* lm_w = p1 + " << index_text(g.w, false) << ";\n";
      call_head = "lm_gemv_rows_i8<";
      call_tail = ">(lm_a_row, lm_w, lm_row_stride, lm_depth, lm_sums)";
      sum_type = "int32_t";
    } else if (g.group > 0) {
      // Dequantized per group in registers (lm_gemv_rows_grouped).
      INTERNAL_CHECK((t == DType::F32 || t == DType::BF16) && w == DType::I8 && k_.params[3].dtype == t)
          << "grouped gemv of " << ir::dtype_name(t) << " with " << ir::dtype_name(k_.params[3].dtype) << " scales";
      const char* element = t == DType::F32 ? "float" : "uint16_t";
      out << "  const int64_t lm_scale_row = " << expr_text(g.scale.strides[n_axis])
          << ", lm_scale_group = " << expr_text(g.scale_group_stride) << ";\n";
      out << "  const int64_t lm_zero_row = " << (g.has_zero ? expr_text(g.zero.strides[n_axis]) : "0")
          << ", lm_zero_group = " << (g.has_zero ? expr_text(g.zero_group_stride) : "0") << ";\n";
      if (widens_activations())
        pointers << "    const float* lm_a = lm_wide;\n";
      else
        pointers << "    const " << element << "* lm_a = p0 + " << index_text(g.a, false) << ";\n";
      pointers << "    const signed char* lm_w = p1 + " << index_text(g.w, false) << ";\n";
      pointers << "    const " << element << "* lm_s = p3 + " << index_text(g.scale, false) << ";\n";
      pointers << "    const signed char* lm_z = " << (g.has_zero ? "p4 + " + index_text(g.zero, false) : "nullptr")
               << ";\n";
      // The weight's int4 values packed two a byte, the last param (GemvSpec::int4_pairs): null
      // where the runtime has no such copy, and the rows read the int8 bytes.
      std::string pairs = "nullptr";
      if (g.int4_pairs) {
        INTERNAL_CHECK(!strips && !g.has_bias && t == DType::BF16 && g.group == 32 &&
                       k_.params.back().dtype == DType::U8)
            << "int4 pairs on a GEMV that is not a bf16 decode row's of groups of 32: " << k_.label;
        const std::string param = "p" + std::to_string(k_.params.size() - 1);
        pointers << "    const unsigned char* lm_pairs = " << param << " == nullptr ? nullptr : " << param << " + ("
                 << index_text(g.w, false) << ") / 2;\n";
        pairs = "lm_pairs";
      }
      group_args = std::to_string(g.group) + ", lm_s, lm_scale_row, lm_scale_group, lm_z, lm_zero_row, lm_zero_group, ";
      call_head = "lm_gemv_rows_grouped<";
      call_tail = ">(lm_a_row, lm_w, lm_row_stride, lm_depth, " + group_args + "&lm_totals, lm_sums, " + pairs + ")";
      strips_head = t == DType::BF16 ? "lm_gemv_bf16_strips_grouped<" : "lm_gemv_strips_grouped<";
      if (!strips) {
        // The sums of `a` per group the row kernels share (lm_group_totals). (+ 1: no groups is
        // not an allocation failure.)
        out << "  float* lm_totals_sums = (float*)__builtin_malloc(sizeof(float) * (lm_depth / " << g.group
            << " + 1));\n";
        out << "  if (lm_totals_sums == nullptr) " << fail(static_cast<int64_t>(kKernelOutOfMemory)) << "\n";
        frees += "__builtin_free(lm_totals_sums); ";
        if (t == DType::BF16) {
          // ... and `a` rounded back to bf16 for the rows' vdpbf16ps (lm_bf16_pairs_of).
          out << "  uint16_t* lm_totals_pairs = (uint16_t*)__builtin_malloc(sizeof(uint16_t) * (lm_depth + 1));\n";
          out << "  if (lm_totals_pairs == nullptr) " << fail(static_cast<int64_t>(kKernelOutOfMemory)) << "\n";
          frees += "__builtin_free(lm_totals_pairs); ";
          out << "  lm_group_totals lm_totals{nullptr, lm_totals_sums, nullptr, lm_totals_pairs};\n";
        } else {
          out << "  lm_group_totals lm_totals{nullptr, lm_totals_sums, nullptr, nullptr};\n";
        }
      }
      if (rank_ == 2 && is_one(k_.domain[0])) {
        pair_call = "lm_gemv_rows_grouped_pair<" + rows + ">(lm_a, lm_w, lm_row_stride, lm_depth, " + group_args +
                    "&lm_totals, lm_half, lm_sums, lm_sums_b, " + pairs + ")";
        pair_half = "(lm_end - lm_begin) / (2 * " + rows + ") * " + rows;
      }
    } else {
      const bool int8 = w == DType::I8;
      // (An int8 weight's AMX blocks dequantize chunks: lm_gemv_bf16_strips<kAmxGemvRows>.)
      if (t == DType::BF16) strips_head = g.amx_tiles && !int8 ? "lm_gemv_bf16_amx<" : "lm_gemv_bf16_strips<";
      INTERNAL_CHECK((t == DType::F32 || t == DType::BF16 || t == DType::F16) && (w == t || (int8 && t != DType::F16)))
          << "gemv of " << ir::dtype_name(t) << " by a " << ir::dtype_name(w) << " weight";
      const char* element = !int8 ? prelude_element(t) : t == DType::F32 ? "lm_f32_i8" : "lm_bf16_i8";
      if (widens_activations()) {
        element = "lm_bf16_i8_rows";
        pointers << "    const lm_bf16_i8_rows::TA* lm_a = lm_bf16_i8_rows::rows_a(p0 + " << index_text(g.a, false)
                 << ", lm_wide);\n";
      } else {
        pointers << "    const " << element << "::TA* lm_a = p0 + " << index_text(g.a, false) << ";\n";
      }
      pointers << "    const " << element << "::TW* lm_w = p1 + " << index_text(g.w, false) << ";\n";
      call_head = std::string("lm_gemv_rows<") + element + ", ";
      call_tail = ">(lm_a_row, lm_w, lm_row_stride, lm_depth, lm_sums)";
      if (rank_ == 2 && is_one(k_.domain[0])) {
        pair_call = std::string("lm_gemv_rows_pair<") + element + ", " + rows +
                    ">(lm_a, lm_w, lm_w + lm_half * lm_row_stride, lm_row_stride, lm_depth, lm_sums, lm_sums_b)";
        pair_half = std::string(element) + "::kSequentialRows ? (lm_end - lm_begin) / (2 * " + rows + ") * " + rows +
                    " : 0";
      }
    }
    out << "  const int64_t lm_row_stride = " << expr_text(g.w.strides[n_axis]) << ";\n";
    out << "  const int64_t lm_out_stride = " << expr_text(g.out.strides[n_axis]) << ";\n";
    if (!strips) out << "  " << sum_type << " lm_sums[" << rows << "];\n";
    if (t == DType::I32) out << "  int32_t lm_prompt_sums[8 * " << rows << "];\n";
    const int m_axis = rank_ - 2;
    const std::string m_count = expr_text(k_.domain[m_axis]);
    // The store's operands (GemvSpec::has_output_scale, has_bias), params after the output in that
    // order: weight row `row`'s scale (its index from the work item's, as the output's) converted
    // as the Cast before the Mul converts it, and its bias.
    const int scale_param = 3, bias_param = g.has_output_scale ? 4 : 3;
    const auto operand_of_row = [&](int param, const Index& index, const std::string& row) {
      return table_.load(k_.params[param].dtype, "p" + std::to_string(param) + "[" + index_text(index, false) + " + (" +
                                                     row + ") * " + expr_text(index.strides[n_axis]) + "]");
    };
    const auto output_scale_of_row = [&](const std::string& row) {
      return table_.convert(k_.params[scale_param].dtype, t, operand_of_row(scale_param, g.output_scale, row));
    };
    // A sum's stored value: without a scale, the sum plus its bias, rounded once (as eager's
    // addmm); with one, the sum rounded to the output's dtype, times the scale, rounded (the
    // product's store and the Mul's arithmetic, bit for bit), then plus the bias and rounded (the
    // Add's).
    const auto stored = [&](const std::string& sum, const std::string& scale, const std::string& bias) {
      if (!g.has_output_scale) return table_.store(t, g.has_bias ? "(" + sum + " + " + bias + ")" : sum);
      // (op() rounds each result to t, as the pointwise kernels' values are.)
      bool may_fail = false;
      std::string value = table_.op(ir::Op::Mul, t, t, {table_.round(t, sum), scale}, may_fail);
      if (g.has_bias) value = table_.op(ir::Op::Add, t, t, {value, bias}, may_fail);
      return table_.store(t, value);
    };
    // ... of weight row `row`'s sum in the row GEMV.
    const auto stored_row = [&](const std::string& sum, const std::string& row) {
      return stored(sum, g.has_output_scale ? output_scale_of_row(row) : std::string(),
                    g.has_bias ? operand_of_row(bias_param, g.bias, row) : std::string());
    };
    if (strips) {
      // f32 with a few rows of `a` (lm_gemv_strips): `a` packed into strips of 16 rows by the
      // first item of each batch index this call computes, the sums of a block [rows x strips *
      // 16] on the stack. Their count is a constant (passes::is_gemv), or symbolic and at most
      // symbolic_gemv_rows when the runtime calls the kernel (passes::is_gemv_for_few_rows). bf16
      // activations are packed by lm_pack_bf16_strips, as bf16 pairs or widened to f32 strips.
      // (+ 31: bf16 pairs pad the depth to a multiple of 4, or of 32 where the CPU has AMX; + 1:
      // an empty `a` is not an allocation failure.)
      const ir::Expr& m = k_.domain[m_axis];
      const int64_t most_rows = m.is_constant() ? m.constant_value() : symbolic_gemv_rows(g.bf16_pairs);
      const int64_t most_strips = (most_rows + 15) / 16;
      out << "  const int64_t lm_strip_count = (" << m_count << " + 15) / 16;\n";
      if (!m.is_constant())
        out << "  if (lm_strip_count > " << most_strips << ") " << fail(static_cast<int64_t>(kKernelTooManyRows)) << "\n";
      if (panels) {
        // Panels of up to kGemvStripPanelBlocks blocks (lm_gemv_strips): their sums, up to
        // 192 KiB at 1,024 rows, on the heap rather than a pool thread's stack.
        out << "  const int64_t lm_panel_blocks = lm_strip_panel_blocks(lm_strip_count, lm_depth, "
            << kGemvStripPanelBlocks << ");\n";
        out << "  const int64_t lm_block_floats = " << rows << " * lm_panel_blocks * lm_strip_count * 16;\n";
        out << "  float* lm_block = (float*)__builtin_malloc(sizeof(float) * (lm_block_floats + 1));\n";
        out << "  if (lm_block == nullptr) " << fail(static_cast<int64_t>(kKernelOutOfMemory)) << "\n";
        frees += "__builtin_free(lm_block); ";
        out << "  __builtin_memset(lm_block, 0, sizeof(float) * lm_block_floats);\n";
      } else {
        out << "  float lm_block[" << rows << " * " << most_strips << " * 16] = {};\n";
      }
      if (g.has_bias) out << "  float lm_bias[" << block_rows << "];\n";
      if (g.has_output_scale) out << "  float lm_output_scale[" << block_rows << "];\n";
      // 64-byte aligned (+ 16 floats): AMX loads the strips as B tiles, at a third of the rate
      // where their rows straddle cache lines (docs/lessons.md, 2026-12-02 afternoon).
      out << "  float* lm_strips_base = (float*)__builtin_malloc(sizeof(float) * (lm_strip_count * 16 * (lm_depth + 31) + "
             "16));\n";
      out << "  if (lm_strips_base == nullptr) " << fail(static_cast<int64_t>(kKernelOutOfMemory)) << "\n";
      frees += "__builtin_free(lm_strips_base); ";
      out << "  float* lm_strips = (float*)(((uintptr_t)lm_strips_base + 63) & ~(uintptr_t)63);\n";
      out << "  const void* lm_packed = nullptr;  // the `a` lm_strips holds\n";
    }
    std::vector<int> dims;
    for (int d = 0; d < rank_; ++d)
      if (d != m_axis) dims.push_back(d);
    // A work item's indices, operand pointers and output offset.
    const std::string item_head = item_indices(dims) + "    const int64_t i" + std::to_string(m_axis) + " = 0;\n" +
                                  pointers.str() + "    const int64_t lm_o = " + index_text(g.out, false) + ";\n";
    std::string first_item = "lm_begin";
    if (!pair_call.empty() && !strips) {
      // Blocks lm_q of the first half and lm_half + lm_q of the second, together; the rest (at
      // most 2 * rows - 1 items) below. Item n's weight row (and scale and zero-point rows) are
      // one row stride after item n - 1's.
      out << "  const int64_t lm_half = " << pair_half << ";\n";
      out << "  " << sum_type << " lm_sums_b[" << rows << "];\n";
      out << "  for (int64_t lm_q = 0; lm_q < lm_half; lm_q += " << rows << ") {\n";
      out << "    const int64_t lm_p = lm_begin + lm_q;\n" << item_head;
      out << "    " << pair_call << ";\n";
      out << "    for (int lm_u = 0; lm_u < " << rows << "; ++lm_u) {\n";
      out << "      p2[lm_o + lm_u * lm_out_stride] = " << stored_row("lm_sums[lm_u]", "lm_u") << ";\n";
      out << "      p2[lm_o + (lm_half + lm_u) * lm_out_stride] = "
          << stored_row("lm_sums_b[lm_u]", "lm_half + lm_u") << ";\n";
      out << "    }\n  }\n";
      first_item = "lm_begin + 2 * lm_half";
    }
    out << "  for (int64_t lm_p = " << first_item << "; lm_p < lm_end;) {\n" << item_head;
    if (panels) {
      // As many whole blocks as the panel takes, left in this chunk and this batch index.
      out << "    const int64_t lm_left = " << expr_text(k_.domain[n_axis]) << " - i" << n_axis
          << " < lm_end - lm_p ? " << expr_text(k_.domain[n_axis]) << " - i" << n_axis << " : lm_end - lm_p;\n";
      out << "    const int lm_rows = lm_left < " << rows << " ? 1 : " << rows << " * (int)(lm_left / " << rows
          << " < lm_panel_blocks ? lm_left / " << rows << " : lm_panel_blocks);\n";
    } else {
      out << "    const int lm_rows = (i" << n_axis << " + " << rows << " <= " << expr_text(k_.domain[n_axis])
          << " && lm_p + " << rows << " <= lm_end) ? " << rows << " : 1;\n";
    }
    if (strips) {
      out << "    if (lm_packed != lm_a) {\n";
      out << "      " << (t == DType::BF16 ? "lm_pack_bf16_strips" : "lm_pack_strips") << "(lm_a, "
          << expr_text(g.a.strides[m_axis]) << ", " << m_count
          << ", lm_depth, lm_strips);\n";
      out << "      lm_packed = lm_a;\n    }\n";
      strips_tail += group_args + "lm_block);\n";
      if (panels)  // a panel of lm_rows / rows blocks
        out << "    if (lm_rows >= " << rows << ") " << strips_head << rows << ">(lm_strips, (" << expr_text(a_rows)
            << "), lm_w, lm_row_stride, lm_depth, lm_block, lm_rows / " << rows << ");\n";
      else
        out << "    if (lm_rows == " << rows << ") " << strips_head << rows << strips_tail;
      // The rows past the last whole block one at a time (on AMX: as bf16 pairs, from the same strips).
      out << "    else " << (g.amx_tiles && w == DType::BF16 ? std::string("lm_gemv_bf16_strips<") : strips_head) << "1"
          << strips_tail;
      // Each weight row's bias and scale, for the store (`stored`).
      const std::string sum = "lm_block[lm_u * lm_strip_count * 16 + lm_s + lm_i]";
      if (g.has_bias)
        out << "    for (int lm_u = 0; lm_u < lm_rows; ++lm_u) lm_bias[lm_u] = " << operand_of_row(bias_param, g.bias, "lm_u")
            << ";\n";
      if (g.has_output_scale)
        out << "    for (int lm_u = 0; lm_u < lm_rows; ++lm_u) lm_output_scale[lm_u] = " << output_scale_of_row("lm_u")
            << ";\n";
      // A strip's sixteen rows at a time: each weight row's sums (plus its bias) rounded to the
      // output's dtype as one vector, then stored row by row of the output, where the block's
      // outputs of one row of `a` are adjacent (a weight row at a time wrote 64 rows a row stride
      // apart per value: 1.9 of a 64-row int4 GEMV's 16.5 ms on one Zen 4 core). Rounding value
      // by value in that order took 8% of a 32 x 768 x 3072 bf16 product on a Zen 4 core, this
      // 4%. Lanes past the rows hold sums of zero rows (or zeros from lm_block's initialiser).
      out << "    for (int64_t lm_s = 0; lm_s < " << m_count << "; lm_s += 16) {\n";
      out << "      " << table_.storage_type(t) << " lm_rounded[" << block_rows << " * 16];\n";
      // (`omp simd`: otherwise GCC unrolls the sixteen and vectorises across the weight rows.)
      out << "      for (int lm_u = 0; lm_u < lm_rows; ++lm_u) {\n";
      out << "        #pragma omp simd\n";
      out << "        for (int lm_i = 0; lm_i < 16; ++lm_i) lm_rounded[lm_u * 16 + lm_i] = "
          << stored(sum, "lm_output_scale[lm_u]", "lm_bias[lm_u]")
          << ";\n      }\n";
      out << "      const int64_t lm_strip_rows = " << m_count << " - lm_s < 16 ? " << m_count << " - lm_s : 16;\n";
      out << "      for (int64_t lm_i = 0; lm_i < lm_strip_rows; ++lm_i)\n";
      out << "        for (int lm_u = 0; lm_u < lm_rows; ++lm_u)\n";
      out << "          p2[lm_o + (lm_s + lm_i) * " << expr_text(g.out.strides[m_axis])
          << " + lm_u * lm_out_stride] = lm_rounded[lm_u * 16 + lm_i];\n";
      out << "    }\n";
      out << "    lm_p += lm_rows;\n  }\n";
      out << "  " << frees << "\n";
      return out.str();
    }
    std::string first_row = "0";
    if (t == DType::I32) {
      // Eight rows of `a` at a time against the block (lm_gemv_prompt_i8), the rest row by row.
      const std::string a_stride = expr_text(g.a.strides[m_axis]), out_stride = expr_text(g.out.strides[m_axis]);
      out << "    int64_t lm_m8 = 0;\n";
      out << "    for (; lm_m8 + 8 <= " << m_count << "; lm_m8 += 8) {\n";
      out << "      if (lm_rows == " << rows << ") lm_gemv_prompt_i8<" << rows << ">(lm_a + lm_m8 * " << a_stride << ", "
          << a_stride << ", lm_w, lm_row_stride, lm_depth, lm_prompt_sums);\n";
      out << "      else lm_gemv_prompt_i8<1>(lm_a + lm_m8 * " << a_stride << ", " << a_stride
          << ", lm_w, lm_row_stride, lm_depth, lm_prompt_sums);\n";
      out << "      for (int lm_i = 0; lm_i < 8; ++lm_i)\n";
      out << "        for (int lm_u = 0; lm_u < lm_rows; ++lm_u)\n";
      out << "          p2[lm_o + (lm_m8 + lm_i) * " << out_stride
          << " + lm_u * lm_out_stride] = lm_prompt_sums[lm_i * lm_rows + lm_u];\n";
      out << "    }\n";
      first_row = "lm_m8";
    }
    out << "    for (int64_t lm_m = " << first_row << "; lm_m < " << m_count << "; ++lm_m) {\n";
    std::string a_row_stride = expr_text(g.a.strides[m_axis]);
    if (widens_activations())  // lm_wide's rows, where it holds `a`
      a_row_stride = g.group > 0 ? "lm_depth" : "(lm_bf16_i8_rows::kWidensA ? lm_depth : " + a_row_stride + ")";
    out << "      const auto* lm_a_row = lm_a + lm_m * " << a_row_stride << ";\n";
    out << "      const int64_t lm_o_row = lm_o + lm_m * " << expr_text(g.out.strides[m_axis]) << ";\n";
    out << "      if (lm_rows == " << rows << ") " << call_head << rows << call_tail << ";\n";
    out << "      else " << call_head << "1" << call_tail << ";\n";
    out << "      for (int lm_u = 0; lm_u < lm_rows; ++lm_u) p2[lm_o_row + lm_u * lm_out_stride] = "
        << stored_row("lm_sums[lm_u]", "lm_u") << ";\n";
    out << "    }\n";
    out << "    lm_p += lm_rows;\n  }\n";
    if (!frees.empty()) out << "  " << frees << "\n";
    return out.str();
  }

  // Whether the row GEMV widens its bf16 activations once per call (gemv_body): always for a
  // grouped weight, for a per-channel one where lm_bf16_i8_rows::kWidensA (AVX2); the strips
  // pack them themselves (lm_pack_bf16_strips).
  bool widens_activations() const {
    return !k_.gemv.columns && k_.params[2].dtype == DType::BF16 && k_.params[1].dtype == DType::I8 && rank_ == 2 &&
           !k_.gemv_strips();
  }

  // A work item is a run of k_.column_run() output columns of one batch index, computed in one
  // pass over the weight's rows (lm_gemv_columns).
  std::string column_gemv_body() const {
    const GemvSpec& g = k_.gemv;
    const DType t = k_.params[2].dtype;
    INTERNAL_CHECK((t == DType::BF16 || t == DType::F16 || (t == DType::F32 && g.rows_in_item)) &&
                   k_.params[0].dtype == t && k_.params[1].dtype == t)
        << "column gemv of " << ir::dtype_name(t);
    const int n_axis = rank_ - 1;
    const std::string run = std::to_string(k_.column_run());
    const std::string n = expr_text(k_.domain[n_axis]);
    std::ostringstream out;
    if (g.rows_in_item) {
      // [M, N]: every row of `a` in each item, its sums [M x run] on the stack (M <= 64, run <= 64).
      INTERNAL_CHECK(g.bf16_pairs == (t == DType::BF16) && (t == DType::BF16 || t == DType::F32) && rank_ == 2 &&
                     k_.domain[0].is_constant() && k_.column_run() <= kColumnRowsRun)
          << "column gemv of a prompt's rows in " << ir::dtype_name(t) << " over " << rank_ << " dims";
      const char* element = t == DType::BF16 ? "uint16_t" : "float";
      const std::string rows = expr_text(k_.domain[0]);
      out << "  const int64_t lm_depth = " << expr_text(g.depth) << ", lm_w_step = " << expr_text(g.w_depth_stride)
          << ";\n";
      out << "  const int64_t lm_rows = " << rows << ", lm_a_row = " << expr_text(g.a.strides[0])
          << ", lm_out_row = " << expr_text(g.out.strides[0]) << ", lm_out_stride = " << expr_text(g.out.strides[1])
          << ";\n";
      out << "  float lm_block[" << rows << " * " << run << "];\n";
      out << "  for (int64_t lm_p = lm_begin; lm_p < lm_end; ++lm_p) {\n";
      out << "    const int64_t i0 = 0, i1 = lm_p * " << run << ";\n";
      out << "    const " << element << "* lm_a = p0 + " << index_text(g.a, false) << ";\n";
      out << "    const " << element << "* lm_w = p1 + " << index_text(g.w, false) << ";\n";
      out << "    const int64_t lm_o = " << index_text(g.out, false) << ";\n";
      out << "    const int64_t lm_cols = " << n << " - i1 < " << run << " ? " << n << " - i1 : " << run << ";\n";
      out << "    lm_gemm_" << (t == DType::BF16 ? "bf16" : "f32")
          << "_columns(lm_a, lm_a_row, lm_rows, lm_w, lm_w_step, lm_depth, lm_cols, lm_block, " << run << ");\n";
      out << "    for (int64_t lm_m = 0; lm_m < lm_rows; ++lm_m)\n";
      out << "      for (int64_t lm_u = 0; lm_u < lm_cols; ++lm_u)\n";
      out << "        p2[lm_o + lm_m * lm_out_row + lm_u * lm_out_stride] = "
          << table_.store(t, "lm_block[lm_m * " + run + " + lm_u]") << ";\n";
      out << "  }\n";
      return out.str();
    }
    out << "  const int64_t lm_depth = " << expr_text(g.depth) << ", lm_a_step = " << expr_text(g.a_depth_stride)
        << ", lm_w_step = " << expr_text(g.w_depth_stride) << ";\n";
    out << "  const int64_t lm_out_stride = " << expr_text(g.out.strides[n_axis]) << ";\n";
    out << "  const int64_t lm_runs = (" << n << " + " << run << " - 1) / " << run << ";\n";
    out << "  float lm_sums[" << run << "];\n";
    std::vector<int> batch_dims;
    for (int d = 0; d < n_axis; ++d) batch_dims.push_back(d);
    out << "  for (int64_t lm_p = lm_begin; lm_p < lm_end; ++lm_p) {\n";
    out << item_indices(batch_dims, "lm_p / lm_runs");
    out << "    const int64_t i" << n_axis << " = lm_p % lm_runs * " << run << ";\n";
    out << "    const uint16_t* lm_a = p0 + " << index_text(g.a, false) << ";\n";
    out << "    const uint16_t* lm_w = p1 + " << index_text(g.w, false) << ";\n";
    out << "    const int64_t lm_o = " << index_text(g.out, false) << ";\n";
    out << "    const int64_t lm_cols = " << n << " - i" << n_axis << " < " << run << " ? " << n << " - i" << n_axis
        << " : " << run << ";\n";
    out << "    lm_gemv_columns<" << prelude_element(t)
        << ">(lm_a, lm_a_step, lm_w, lm_w_step, lm_depth, lm_cols, lm_sums);\n";
    out << "    for (int64_t lm_u = 0; lm_u < lm_cols; ++lm_u) p2[lm_o + lm_u * lm_out_stride] = "
        << table_.store(t, "lm_sums[lm_u]") << ";\n";
    out << "  }\n";
    return out.str();
  }

  // ---- attention ----
  // A work item is one index of the batch dims: one head's [L, Ev] output.
  std::string attention_body() const {
    const AttentionSpec& a = k_.attention;
    const int batch_rank = rank_ - 2;
    auto pointer = [&](int param, const MatrixOperand& m) {
      return "p" + std::to_string(param) + " + (" + index_over(m.batch, "i") + ")";
    };
    auto strides = [&](const MatrixOperand& m) { return expr_text(m.row_stride) + ", " + expr_text(m.col_stride); };
    std::ostringstream scale;
    scale.precision(17);
    scale << a.scale;
    const int out_param = static_cast<int>(k_.params.size()) - 1;
    std::vector<int> batch_dims;
    for (int d = 0; d < batch_rank; ++d) batch_dims.push_back(d);
    std::ostringstream out;
    out << "  const int64_t lm_L = " << expr_text(a.q_len) << ", lm_Ev = " << expr_text(a.value_dim) << ";\n";
    if (a.causal)
      out << "  const int64_t lm_shift = lm_causal_shift(" << a.causal_shift << ", "
          << (a.has_shift_param ? "(int64_t)p3[" + expr_text(a.shift_offset) + "]" : std::string("0")) << ", lm_L, "
          << expr_text(a.kv_len) << ");\n";
    out << "  lm_attention_windows lm_windows;\n";
    out << "  for (int64_t lm_p = lm_begin; lm_p < lm_end; ++lm_p) {\n";
    out << item_indices(batch_dims);
    // f16/bf16 q, k and v widen as they are read.
    out << "    if (!lm_attention_head<" << prelude_element(k_.params[0].dtype) << ", "
        << prelude_element(k_.params[1].dtype) << ", " << prelude_element(k_.params[2].dtype) << ">("
        << pointer(0, a.q) << ", " << strides(a.q) << ",\n        " << pointer(1, a.k)
        << ", " << strides(a.k) << ",\n        " << pointer(2, a.v) << ", " << strides(a.v) << ",\n        "
        << (a.has_bias ? pointer(3, a.bias) : std::string("nullptr")) << ", "
        << (a.has_bias ? strides(a.bias) : std::string("0, 0")) << ", "
        << (a.causal ? "true, lm_shift" : "false, 0") << ",\n        p" << out_param
        << " + lm_p * lm_L * lm_Ev, lm_L, " << expr_text(a.kv_len) << ", " << expr_text(a.head_dim)
        << ", lm_Ev, (float)" << scale.str() << ", " << (k_.tile > 0 ? k_.tile : kAttentionRows)
        << ", lm_windows, " << (a.bf16_probabilities ? "true" : "false") << "))\n";
    out << "      return " << static_cast<int64_t>(kKernelOutOfMemory) << ";\n";
    out << "  }\n";
    return out.str();
  }

  // ---- scan ----
  // A work item is one row: the other dims' loop variables come from lm_p.
  std::string scan_body() const {
    const ScanSpec& s = k_.scan;
    std::vector<int> row_dims;
    for (int d = 0; d < rank_; ++d)
      if (d != s.axis) row_dims.push_back(d);
    // The scalar loop over the rows, or over those the blocks leave.
    std::string out, first_row = "int64_t lm_p = lm_begin";
    if (s.row_blocks) {
      out = "  " + first_row + ";\n" + scan_row_blocks(row_dims);
      first_row.clear();
    }
    return out + "  for (" + first_row + "; lm_p < lm_end; ++lm_p) {\n" + item_indices(row_dims) +
           scan_row(k_, table_, "    ") + "  }\n";
  }

  // Blocks of kScanBlockRows rows from lm_p on: each row's start in both operands, then the
  // prelude's scan. A block costs the same however few of its rows are real, so it leaves fewer
  // than half a block's last rows to scan_body's scalar loop.
  std::string scan_row_blocks(const std::vector<int>& row_dims) const {
    const ScanSpec& s = k_.scan;
    const std::string type = table_.storage_type(k_.params[1].dtype);
    const std::string rows = std::to_string(kScanBlockRows);
    const auto row_start = [&](const Index& index) {
      Index start = index;
      start.strides[s.axis] = Expr(int64_t{0});
      return index_text(start, false);
    };
    std::string out = "  for (; lm_end - lm_p >= " + std::to_string(kScanBlockRows / 2) + "; lm_p += " + rows + ") {\n";
    out += "    const " + type + "* lm_rows_in[" + rows + "];\n";
    out += "    " + type + "* lm_rows_out[" + rows + "];\n";
    out += "    for (int64_t lm_b = 0; lm_b < " + rows + "; ++lm_b) {\n";
    out += "    const int64_t lm_q = lm_p + lm_b < lm_end ? lm_p + lm_b : lm_end - 1;  // a repeat past the end\n";
    out += item_indices(row_dims, "lm_q");
    out += "    lm_rows_in[lm_b] = p0 + " + row_start(s.in) + ";\n";
    out += "    lm_rows_out[lm_b] = p1 + " + row_start(s.out) + ";\n";
    out += "    }\n";
    out += "    lm_cumsum_rows" + rows + "(lm_rows_in, lm_rows_out, " + expr_text(k_.domain[s.axis]) + ");\n";
    return out + "  }\n";
  }

  // ---- scatter ----
  std::string nested_loops(const ir::Shape& shape, const std::string& body, const std::string& prefix) const {
    std::string open, close, indent = "  ";
    for (size_t d = 0; d < shape.size(); ++d) {
      const std::string v = prefix + std::to_string(d);
      open += indent + "for (int64_t " + v + " = 0; " + v + " < " + expr_text(shape[d]) + "; ++" + v + ") {\n";
      close = indent + "}\n" + close;
      indent += "  ";
    }
    return open + indent + body + "\n" + close;
  }
  static std::string index_over(const Index& index, const std::string& prefix) {
    std::string s = expr_text(index.offset);
    for (size_t d = 0; d < index.strides.size(); ++d)
      if (!is_zero(index.strides[d])) s += " + " + prefix + std::to_string(d) + " * " + expr_text(index.strides[d]);
    return s;
  }

  std::string scatter_body() const {
    const ScatterSpec& s = k_.scatter;
    const DType t = k_.params[0].dtype;
    std::string code;
    // out = data (skipped when the caller made them the same buffer, an in-place cache update).
    std::string contiguous = "INT64_C(0)";
    {
      Expr stride(int64_t{1});
      std::vector<Expr> strides(s.out_shape.size());
      for (int d = static_cast<int>(s.out_shape.size()) - 1; d >= 0; --d) {
        strides[d] = stride;
        stride = stride * s.out_shape[d];
      }
      Index out_index{Expr(int64_t{0}), strides};
      code += "  if ((const void*)p0 != (const void*)p1) {\n" +
              nested_loops(s.out_shape, "p0[" + index_over(out_index, "c") + "] = p1[" + index_over(s.data, "c") + "];", "c") +
              "  }\n";
      // Scatter target: the output position of each index element, the axis from the index.
      Index target{Expr(int64_t{0}), {}};
      for (size_t d = 0; d < s.index_shape.size(); ++d)
        target.strides.push_back(static_cast<int>(d) == s.axis ? Expr(int64_t{0}) : strides[d]);
      const std::string extent = expr_text(s.out_shape[s.axis]);
      std::string body = "const int64_t g = p2[" + index_over(s.index, "j") + "]; if (g < 0 || g >= " + extent +
                         ") { lm_info[0] = g; lm_info[1] = " + extent + "; return 1; } const int64_t o = " +
                         index_over(target, "j") + " + g * " + expr_text(strides[s.axis]) + "; ";
      const std::string src = "p3[" + index_over(s.src, "j") + "]";
      if (!s.accumulate) {
        body += "p0[o] = " + src + ";";
      } else {
        bool unused = false;
        const std::string sum =
            table_.op(ir::Op::Add, t, t, {table_.load(t, "p0[o]"), table_.load(t, src)}, unused);
        body += "p0[o] = " + table_.store(t, sum) + ";";
      }
      code += nested_loops(s.index_shape, body, "j");
    }
    return code;
  }

  const Kernel& k_;
  const CppOpTable& table_;
  int rank_ = 0;
  bool row_ = false;
  int inner_ = -1;
  bool may_fail_ = false;
  std::vector<bool> per_row_;
  std::vector<int> uses_;  // per value: the values, reductions and stores reading it
  std::string row_code_;
  std::set<int> row_done_;
};

}  // namespace

std::string emit_kernel(const Kernel& kernel, const std::string& name) { return Emitter(kernel).emit(name); }

}  // namespace luminal::codegen::cpp
