#include "ir/dtype.h"

namespace luminal::ir {

size_t dtype_size(DType t) {
  switch (t) {
#define LUMINAL_DTYPE_SIZE(name, text, bytes) \
  case DType::name:                           \
    return bytes;
    LUMINAL_DTYPES(LUMINAL_DTYPE_SIZE)
#undef LUMINAL_DTYPE_SIZE
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
#define LUMINAL_DTYPE_NAME(name, text, bytes) \
  case DType::name:                           \
    return text;
    LUMINAL_DTYPES(LUMINAL_DTYPE_NAME)
#undef LUMINAL_DTYPE_NAME
  }
  return "?";
}

bool is_floating(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool is_integral(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 || t == DType::U8;
}

DType scan_accumulator(DType t) {
  if (t == DType::F32 || t == DType::F64) return DType::F64;
  if (t == DType::F16 || t == DType::BF16) return DType::F32;
  return DType::I64;
}

}  // namespace luminal::ir
