#include "codegen/cuda/op_table.h"

#include <map>

#include "common/error.h"

namespace luminal::codegen::cuda {

namespace {

using ir::DType;
using ir::Op;

// GCC builtin -> CUDA device function. nearbyint rounds half to even in the default rounding
// mode, as torch.round does; CUDA's rint is the same operation.
const std::map<std::string, std::string>& builtin_spellings() {
  static const std::map<std::string, std::string> map = {
      {"__builtin_fabsf", "fabsf"},   {"__builtin_fabs", "fabs"},       {"__builtin_sqrtf", "sqrtf"},
      {"__builtin_sqrt", "sqrt"},     {"__builtin_floorf", "floorf"},   {"__builtin_floor", "floor"},
      {"__builtin_ceilf", "ceilf"},   {"__builtin_ceil", "ceil"},       {"__builtin_nearbyintf", "rintf"},
      {"__builtin_nearbyint", "rint"}, {"__builtin_truncf", "truncf"},  {"__builtin_trunc", "trunc"},
      {"__builtin_inff", "lm_inff"},  {"__builtin_inf", "lm_inf"},      {"__builtin_nanf", "lm_nanf"},
      {"__builtin_nan", "lm_nan"},
  };
  return map;
}

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string cuda_spelling(const std::string& text) {
  static const std::string prefix = "__builtin_";
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t at = text.find(prefix, i);
    if (at == std::string::npos || (at > 0 && is_identifier_char(text[at - 1]))) {
      const size_t stop = at == std::string::npos ? text.size() : at + 1;
      out.append(text, i, stop - i);
      i = stop;
      continue;
    }
    size_t end = at + prefix.size();
    while (end < text.size() && is_identifier_char(text[end])) ++end;
    const std::string name = text.substr(at, end - at);
    auto it = builtin_spellings().find(name);
    INTERNAL_CHECK(it != builtin_spellings().end())
        << "the C++ op table writes " << name << ", which has no CUDA spelling in codegen/cuda/op_table.cpp";
    out.append(text, i, at - i);
    out += it->second;
    i = end;
  }
  return out;
}

std::string CudaOpTable::storage_type(DType t) const {
  switch (t) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    default: return CppOpTable::storage_type(t);
  }
}

std::string CudaOpTable::literal(const ir::Scalar& s, DType t) const {
  return cuda_spelling(CppOpTable::literal(s, t));
}

std::string CudaOpTable::convert(DType from, DType to, const std::string& v) const {
  return cuda_spelling(CppOpTable::convert(from, to, v));
}

std::string CudaOpTable::op(Op op, DType in, DType out, const std::vector<std::string>& args, bool& may_fail) const {
  return cuda_spelling(CppOpTable::op(op, in, out, args, may_fail));
}

cpp::ReductionText CudaOpTable::reduction(Op op, DType t, int id) const {
  cpp::ReductionText r = CppOpTable::reduction(op, t, id);
  r.init = cuda_spelling(r.init);
  r.combine = cuda_spelling(r.combine);
  r.finish = cuda_spelling(r.finish);
  r.simd_clause.clear();
  return r;
}

std::string CudaOpTable::merge_functor(Op op) const {
  switch (op) {
    case Op::SumReduce: return "lm_sum_op";
    case Op::ProdReduce: return "lm_prod_op";
    // Partial accumulators are never NaN (the combine step's comparisons skip NaN and record it
    // in the flag), so a plain comparison merges them.
    case Op::MaxReduce: return "lm_max_op";
    case Op::MinReduce: return "lm_min_op";
    default: INTERNAL_ERROR() << ir::op_name(op) << " is not a reduction"; return "";
  }
}

const CudaOpTable& cuda_op_table() {
  static const CudaOpTable table;
  return table;
}

}  // namespace luminal::codegen::cuda
