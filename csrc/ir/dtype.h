// Element types of IR tensors. Semantics of arithmetic per dtype are documented on the
// primitives in ops.def; storage is little-endian, f16/bf16 as IEEE binary16 / bfloat16 bits.
#pragma once

#include <cstddef>
#include <string>

namespace luminal::ir {

#define LUMINAL_DTYPES(X) \
  X(F32, "f32", 4)        \
  X(F16, "f16", 2)        \
  X(BF16, "bf16", 2)      \
  X(F64, "f64", 8)        \
  X(I8, "i8", 1)          \
  X(I16, "i16", 2)        \
  X(I32, "i32", 4)        \
  X(I64, "i64", 8)        \
  X(U8, "u8", 1)          \
  X(Bool, "bool", 1)

enum class DType {
#define LUMINAL_DTYPE_ENUM(name, text, bytes) name,
  LUMINAL_DTYPES(LUMINAL_DTYPE_ENUM)
#undef LUMINAL_DTYPE_ENUM
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);
bool is_floating(DType t);
bool is_integral(DType t);  // integers, not bool
inline bool is_bool(DType t) { return t == DType::Bool; }
inline bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }
// The dtype CumSum keeps its running sum in (ops.def), torch's CPU at::acc_type: f64 for f32
// and f64, f32 for f16 and bf16, i64 for integers. The reference runtime and both emitters
// read it here so that they add in the same type in the same order.
DType scan_accumulator(DType t);

}  // namespace luminal::ir
