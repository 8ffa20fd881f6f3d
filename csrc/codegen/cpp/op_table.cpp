#include "codegen/cpp/op_table.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"

namespace luminal::codegen::cpp {

namespace {

using ir::DType;
using ir::Op;

bool is_float_compute(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

std::string float_literal(double v, DType t) {
  const bool single = t != DType::F64;
  if (std::isnan(v)) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (single ? "__builtin_inff()" : "__builtin_inf()");
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  std::string s = text;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return single ? "((float)" + s + ")" : "(" + s + ")";
}

std::string call(const std::string& fn, const std::vector<std::string>& args) {
  std::string s = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

}  // namespace

std::string CppOpTable::storage_type(DType t) const {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16:
    case DType::BF16: return "uint16_t";
    case DType::F64: return "double";
    case DType::I8: return "int8_t";
    case DType::I16: return "int16_t";
    case DType::I32: return "int32_t";
    case DType::I64: return "int64_t";
    case DType::U8:
    case DType::Bool: return "uint8_t";
  }
  return "?";
}

std::string CppOpTable::compute_type(DType t) const {
  if (is_float_compute(t)) return "float";
  if (t == DType::F64) return "double";
  if (t == DType::Bool) return "bool";
  return "int64_t";
}

std::string CppOpTable::load(DType t, const std::string& e) const {
  switch (t) {
    case DType::F32:
    case DType::F64: return e;
    case DType::F16: return "lm_h2f(" + e + ")";
    case DType::BF16: return "lm_bf2f(" + e + ")";
    case DType::Bool: return "(" + e + " != 0)";
    default: return "(int64_t)" + e;
  }
}

std::string CppOpTable::store(DType t, const std::string& v) const {
  switch (t) {
    case DType::F32:
    case DType::F64: return v;
    case DType::F16: return "lm_f2h(" + v + ")";
    case DType::BF16: return "lm_f2bf(" + v + ")";
    case DType::Bool: return "(uint8_t)(" + v + ")";
    default: return "(" + storage_type(t) + ")(" + v + ")";
  }
}

std::string CppOpTable::round(DType t, const std::string& v) const {
  switch (t) {
    case DType::F16: return "lm_rh(" + v + ")";
    case DType::BF16: return "lm_rbf(" + v + ")";
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::U8: return "(int64_t)(" + storage_type(t) + ")(" + v + ")";
    default: return v;
  }
}

std::string CppOpTable::literal(const ir::Scalar& s, DType t) const {
  if (t == DType::Bool) return s.is_integer ? (s.integer != 0 ? "true" : "false") : (s.floating != 0 ? "true" : "false");
  if (ir::is_floating(t)) {
    if (s.is_integer) {
      const std::string c = "((" + compute_type(t) + ")INT64_C(" + std::to_string(s.integer) + "))";
      return round(t, c);
    }
    return round(t, float_literal(s.floating, t));
  }
  if (s.is_integer) return round(t, "INT64_C(" + std::to_string(s.integer) + ")");
  return round(t, "lm_f2i(" + float_literal(s.floating, DType::F64) + ")");
}

std::string CppOpTable::from_index(DType t, const std::string& v) const {
  if (t == DType::Bool) return "(" + v + " != 0)";
  if (ir::is_floating(t)) return round(t, "(" + compute_type(t) + ")(" + v + ")");
  return round(t, v);
}

std::string CppOpTable::convert(DType from, DType to, const std::string& v) const {
  if (from == to) return v;
  if (to == DType::Bool) return "(" + v + " != 0)";
  if (ir::is_floating(from) && !ir::is_floating(to)) return round(to, "lm_f2i((double)" + v + ")");
  if (ir::is_floating(to)) {
    // f64 -> f16 rounds through float, as the reference (and torch) do.
    return round(to, "(" + compute_type(to) + ")(" + v + ")");
  }
  return round(to, "(int64_t)(" + v + ")");
}

std::string CppOpTable::op(Op op, DType in, DType out, const std::vector<std::string>& a, bool& may_fail) const {
  const bool fl = ir::is_floating(in);
  const bool single = in != DType::F64;
  auto fn = [&](const char* f) { return call(single ? std::string(f) + "f" : std::string(f), a); };
  auto unsupported = [&]() -> std::string {
    UNSUPPORTED_ERROR() << ir::op_name(op) << " is not defined on " << ir::dtype_name(in)
                        << " (the translator casts to a dtype the op supports first)";
    return "";
  };
  std::string e;
  switch (op) {
    case Op::Copy: return a[0];
    case Op::Cast: return convert(in, out, a[0]);
    case Op::Neg: e = fl ? "(-" + a[0] + ")" : (in == DType::Bool ? unsupported() : "lm_wsub(0, " + a[0] + ")"); break;
    case Op::Abs:
      if (in == DType::Bool) return unsupported();
      e = fl ? call(single ? "__builtin_fabsf" : "__builtin_fabs", a) : "(" + a[0] + " < 0 ? lm_wsub(0, " + a[0] + ") : " + a[0] + ")";
      break;
    case Op::Recip: if (!fl) return unsupported(); e = single ? "(1.0f / " + a[0] + ")" : "(1.0 / " + a[0] + ")"; break;
    case Op::Sqrt: if (!fl) return unsupported(); e = call(single ? "__builtin_sqrtf" : "__builtin_sqrt", a); break;
    case Op::Exp: if (!fl) return unsupported(); e = call(single ? "lm_expf" : "exp", a); break;
    case Op::Log: if (!fl) return unsupported(); e = fn("log"); break;
    case Op::Sin: if (!fl) return unsupported(); e = fn("sin"); break;
    case Op::Cos: if (!fl) return unsupported(); e = fn("cos"); break;
    case Op::Tanh: if (!fl) return unsupported(); e = fn("tanh"); break;
    case Op::Erf: if (!fl) return unsupported(); e = call(single ? "lm_erff" : "erf", a); break;
    case Op::Sigmoid: if (!fl) return unsupported(); e = call("lm_sigmoid", a); break;
    case Op::Floor: e = fl ? call(single ? "__builtin_floorf" : "__builtin_floor", a) : a[0]; break;
    case Op::Ceil: e = fl ? call(single ? "__builtin_ceilf" : "__builtin_ceil", a) : a[0]; break;
    // nearbyint rounds half to even in the default rounding mode, as torch.round does.
    case Op::Round: e = fl ? call(single ? "__builtin_nearbyintf" : "__builtin_nearbyint", a) : a[0]; break;
    case Op::Trunc: e = fl ? call(single ? "__builtin_truncf" : "__builtin_trunc", a) : a[0]; break;
    case Op::Not:
      if (fl) return unsupported();
      e = in == DType::Bool ? "(!" + a[0] + ")" : "(~" + a[0] + ")";
      break;
    case Op::IsNan: return fl ? "(" + a[0] + " != " + a[0] + ")" : "false";
    case Op::Add: e = fl ? "(" + a[0] + " + " + a[1] + ")" : (in == DType::Bool ? "(" + a[0] + " || " + a[1] + ")" : call("lm_wadd", a)); break;
    case Op::Sub: e = fl ? "(" + a[0] + " - " + a[1] + ")" : (in == DType::Bool ? "(" + a[0] + " != " + a[1] + ")" : call("lm_wsub", a)); break;
    case Op::Mul: e = fl ? "(" + a[0] + " * " + a[1] + ")" : (in == DType::Bool ? "(" + a[0] + " && " + a[1] + ")" : call("lm_wmul", a)); break;
    case Op::Div:
      if (fl) {
        e = "(" + a[0] + " / " + a[1] + ")";
      } else {
        may_fail = true;
        e = "lm_idiv(" + a[0] + ", " + a[1] + ", lm_status)";
      }
      break;
    case Op::Mod:
      if (fl) {
        e = fn("fmod");
      } else {
        may_fail = true;
        e = "lm_imod(" + a[0] + ", " + a[1] + ", lm_status)";
      }
      break;
    case Op::Max: e = fl ? call("lm_fmax", a) : (in == DType::Bool ? "(" + a[0] + " || " + a[1] + ")" : call("lm_imax", a)); break;
    case Op::Min: e = fl ? call("lm_fmin", a) : (in == DType::Bool ? "(" + a[0] + " && " + a[1] + ")" : call("lm_imin", a)); break;
    case Op::Pow:
      if (in == DType::Bool) return unsupported();
      e = fl ? fn("pow") : call("lm_ipow", a);
      break;
    case Op::Lt: return "(" + a[0] + " < " + a[1] + ")";
    case Op::Le: return "(" + a[0] + " <= " + a[1] + ")";
    case Op::Eq: return "(" + a[0] + " == " + a[1] + ")";
    case Op::Ne: return "(" + a[0] + " != " + a[1] + ")";
    case Op::And: if (fl) return unsupported(); e = in == DType::Bool ? "(" + a[0] + " && " + a[1] + ")" : "(" + a[0] + " & " + a[1] + ")"; break;
    case Op::Or: if (fl) return unsupported(); e = in == DType::Bool ? "(" + a[0] + " || " + a[1] + ")" : "(" + a[0] + " | " + a[1] + ")"; break;
    case Op::Xor: if (fl) return unsupported(); e = in == DType::Bool ? "(" + a[0] + " != " + a[1] + ")" : "(" + a[0] + " ^ " + a[1] + ")"; break;
    case Op::Where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
    default: INTERNAL_ERROR() << ir::op_name(op) << " is not an elementwise op"; return "";
  }
  // Negating or choosing between values of the output dtype gives one of that dtype exactly (a
  // NaN's payload aside): rounding it again is a wasted vector sequence per op in f16/bf16.
  const bool exact = in == out && (op == Op::Neg || op == Op::Abs || op == Op::Max || op == Op::Min);
  return exact ? e : round(out, e);
}

ReductionText CppOpTable::reduction(Op op, DType t, int id) const {
  const std::string acc = "acc" + std::to_string(id);
  const std::string nan = "nan" + std::to_string(id);
  ReductionText r;
  const bool fl = ir::is_floating(t);
  const std::string ftype = compute_type(t);
  switch (op) {
    case Op::SumReduce:
    case Op::ProdReduce: {
      const bool sum = op == Op::SumReduce;
      // Integers accumulate in uint64_t so that overflow wraps instead of being undefined.
      r.accumulator_type = fl ? ftype : "uint64_t";
      r.init = sum ? "0" : "1";
      r.combine = fl ? (sum ? "%a += %x;" : "%a *= %x;") : (sum ? "%a += (uint64_t)%x;" : "%a *= (uint64_t)%x;");
      r.simd_clause = std::string("reduction(") + (sum ? "+" : "*") + ":" + acc + ")";
      r.finish = fl ? "%a" : "(int64_t)%a";
      break;
    }
    case Op::MaxReduce:
    case Op::MinReduce: {
      const bool mx = op == Op::MaxReduce;
      r.needs_elements = true;
      r.accumulator_type = fl ? ftype : "int64_t";
      if (fl) {
        r.init = t == DType::F64 ? (mx ? "-__builtin_inf()" : "__builtin_inf()") : (mx ? "-__builtin_inff()" : "__builtin_inff()");
        r.extra_declaration = "int " + nan + " = 0;";
        r.combine = std::string("%a = %x ") + (mx ? ">" : "<") + " %a ? %x : %a; " + nan + " |= (%x != %x);";
        r.simd_clause = std::string("reduction(") + (mx ? "max" : "min") + ":" + acc + ") reduction(|:" + nan + ")";
        r.finish = nan + " ? (" + ftype + ")__builtin_nan(\"\") : %a";
      } else {
        r.init = mx ? "INT64_MIN" : "INT64_MAX";
        r.combine = std::string("%a = (int64_t)%x ") + (mx ? ">" : "<") + " %a ? (int64_t)%x : %a;";
        r.simd_clause = std::string("reduction(") + (mx ? "max" : "min") + ":" + acc + ")";
        r.finish = t == DType::Bool ? "(%a != 0)" : "%a";
      }
      break;
    }
    default: INTERNAL_ERROR() << ir::op_name(op) << " is not a reduction";
  }
  if (t == DType::Bool && op != Op::MaxReduce && op != Op::MinReduce) r.finish = "(" + r.finish + " != 0)";
  return r;
}

const CppOpTable& cpp_op_table() {
  static const CppOpTable table;
  return table;
}

}  // namespace luminal::codegen::cpp
