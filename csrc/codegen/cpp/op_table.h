// The C++ op table: how each primitive, dtype conversion and reduction reads in generated C++.
// All target-specific text lives here and in the emitter's loop skeleton; a CUDA table will
// derive from this one and override entries (intrinsics, half types) only.
//
// Compute domains: f32/f16/bf16 compute in float (16-bit types rounded after every op, as
// torch does), f64 in double, integers in int64_t (wrapped to their width after every op),
// bool in bool. Semantics are ops.def's; where the reference runtime computes in double the
// generated code computes in float, which differs by at most an ulp per op.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/ops.h"

namespace luminal::codegen::cpp {

// How one reduction reads: `accumulator` declared with `init`, updated by `combine` (with %a
// and %x standing for the accumulator and the element), vectorised with `simd_clause`, and
// turned into the result by `finish` (%a) before rounding to the result dtype.
struct ReductionText {
  std::string accumulator_type;
  std::string init;
  std::string combine;
  std::string simd_clause;
  std::string extra_declaration;  // e.g. a NaN flag for max/min
  std::string finish;
  bool needs_elements = false;  // max/min of nothing is an error
};

class CppOpTable {
 public:
  virtual ~CppOpTable() = default;
  virtual std::string storage_type(ir::DType t) const;
  virtual std::string compute_type(ir::DType t) const;
  // The compute value of a storage element `element` (e.g. "p3[i]").
  virtual std::string load(ir::DType t, const std::string& element) const;
  // The storage value of compute value `v`.
  virtual std::string store(ir::DType t, const std::string& v) const;
  // Rounds a compute value to what dtype `t` can hold (identity for f32, f64, i64, bool).
  virtual std::string round(ir::DType t, const std::string& v) const;
  virtual std::string literal(const ir::Scalar& s, ir::DType t) const;
  // An int64_t index value as dtype `t` (Iota).
  virtual std::string from_index(ir::DType t, const std::string& v) const;
  // Cast: compute value of dtype `from` to compute value of dtype `to`, rounded.
  virtual std::string convert(ir::DType from, ir::DType to, const std::string& v) const;
  // An elementwise op. `in` is the dtype of the first value input (for Where, of the branches).
  // Sets `may_fail` when the expression can report an error through `lm_status` (integer
  // division by zero). Throws UnsupportedError for pairs ops.def leaves undefined.
  virtual std::string op(ir::Op op, ir::DType in, ir::DType out, const std::vector<std::string>& args,
                         bool& may_fail) const;
  virtual ReductionText reduction(ir::Op op, ir::DType t, int id) const;
};

const CppOpTable& cpp_op_table();

}  // namespace luminal::codegen::cpp
