// Reading and writing single elements of any dtype in the reference runtime's two compute
// domains: double for floating dtypes, int64 for integers and bool (held as 0/1).
//
// Storing rounds once to the output dtype: double -> f32 directly; double -> f16/bf16 through
// float, as torch's CPU kernels compute half types in float and round. Integers wrap (two's
// complement) to the output width; any value stored to bool becomes value != 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/error.h"
#include "common/half.h"
#include "ir/dtype.h"

namespace luminal::runtime::reference {

namespace detail {
template <typename T>
T read(const std::byte* data, int64_t offset) {
  T value;
  std::memcpy(&value, data + offset * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

template <typename T>
void write(std::byte* data, int64_t offset, T value) {
  std::memcpy(data + offset * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}
}  // namespace detail

// Float -> integer conversion truncates toward zero. C++ leaves NaN and out-of-range values
// undefined; x86 (and so torch on CPU) yields INT64_MIN for them, which we reproduce.
inline int64_t truncate_to_int64(double value) {
  constexpr double kTwoPow63 = 9223372036854775808.0;
  if (!(value >= -kTwoPow63 && value < kTwoPow63)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

inline double load_float(const std::byte* data, ir::DType dtype, int64_t offset) {
  using ir::DType;
  switch (dtype) {
    case DType::F32: return detail::read<float>(data, offset);
    case DType::F16: return half_to_float(detail::read<uint16_t>(data, offset));
    case DType::BF16: return bf16_to_float(detail::read<uint16_t>(data, offset));
    case DType::F64: return detail::read<double>(data, offset);
    case DType::I8: return detail::read<int8_t>(data, offset);
    case DType::I16: return detail::read<int16_t>(data, offset);
    case DType::I32: return detail::read<int32_t>(data, offset);
    case DType::I64: return static_cast<double>(detail::read<int64_t>(data, offset));
    case DType::U8: return detail::read<uint8_t>(data, offset);
    case DType::Bool: return detail::read<uint8_t>(data, offset) != 0 ? 1.0 : 0.0;
  }
  INTERNAL_ERROR() << "unknown dtype";
  return 0;
}

inline int64_t load_int(const std::byte* data, ir::DType dtype, int64_t offset) {
  using ir::DType;
  switch (dtype) {
    case DType::I8: return detail::read<int8_t>(data, offset);
    case DType::I16: return detail::read<int16_t>(data, offset);
    case DType::I32: return detail::read<int32_t>(data, offset);
    case DType::I64: return detail::read<int64_t>(data, offset);
    case DType::U8: return detail::read<uint8_t>(data, offset);
    case DType::Bool: return detail::read<uint8_t>(data, offset) != 0 ? 1 : 0;
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::F64: return truncate_to_int64(load_float(data, dtype, offset));
  }
  INTERNAL_ERROR() << "unknown dtype";
  return 0;
}

inline void store_float(std::byte* data, ir::DType dtype, int64_t offset, double value) {
  using ir::DType;
  switch (dtype) {
    case DType::F32: return detail::write<float>(data, offset, static_cast<float>(value));
    case DType::F16: return detail::write<uint16_t>(data, offset, float_to_half(static_cast<float>(value)));
    case DType::BF16: return detail::write<uint16_t>(data, offset, float_to_bf16(static_cast<float>(value)));
    case DType::F64: return detail::write<double>(data, offset, value);
    case DType::Bool: return detail::write<uint8_t>(data, offset, value != 0 ? 1 : 0);  // NaN is true, as in torch
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::U8: break;
  }
  // Integers: truncate toward zero, then wrap to the width (torch's float -> uint8 of -1.0 is 255).
  const int64_t truncated = truncate_to_int64(value);
  switch (dtype) {
    case DType::I8: return detail::write<int8_t>(data, offset, static_cast<int8_t>(truncated));
    case DType::I16: return detail::write<int16_t>(data, offset, static_cast<int16_t>(truncated));
    case DType::I32: return detail::write<int32_t>(data, offset, static_cast<int32_t>(truncated));
    case DType::I64: return detail::write<int64_t>(data, offset, truncated);
    case DType::U8: return detail::write<uint8_t>(data, offset, static_cast<uint8_t>(truncated));
    default: INTERNAL_ERROR() << "unknown dtype";
  }
}

inline void store_int(std::byte* data, ir::DType dtype, int64_t offset, int64_t value) {
  using ir::DType;
  switch (dtype) {
    case DType::I8: return detail::write<int8_t>(data, offset, static_cast<int8_t>(value));
    case DType::I16: return detail::write<int16_t>(data, offset, static_cast<int16_t>(value));
    case DType::I32: return detail::write<int32_t>(data, offset, static_cast<int32_t>(value));
    case DType::I64: return detail::write<int64_t>(data, offset, value);
    case DType::U8: return detail::write<uint8_t>(data, offset, static_cast<uint8_t>(value));
    case DType::Bool: return detail::write<uint8_t>(data, offset, value != 0 ? 1 : 0);
    case DType::F64: return detail::write<double>(data, offset, static_cast<double>(value));
    // int64 -> float in one rounding (not through double), as torch converts.
    case DType::F32: return detail::write<float>(data, offset, static_cast<float>(value));
    case DType::F16: return detail::write<uint16_t>(data, offset, float_to_half(static_cast<float>(value)));
    case DType::BF16: return detail::write<uint16_t>(data, offset, float_to_bf16(static_cast<float>(value)));
  }
  INTERNAL_ERROR() << "unknown dtype";
}

// The same, for kernels templated on their compute domain: T is double or int64_t.
template <typename T>
T load_value(const std::byte* data, ir::DType dtype, int64_t offset) {
  if constexpr (std::is_same_v<T, double>)
    return load_float(data, dtype, offset);
  else
    return load_int(data, dtype, offset);
}

template <typename T>
void store_value(std::byte* data, ir::DType dtype, int64_t offset, T value) {
  if constexpr (std::is_same_v<T, double>)
    store_float(data, dtype, offset, value);
  else
    store_int(data, dtype, offset, value);
}

// Integer arithmetic that wraps like the hardware instead of being undefined on overflow.
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

}  // namespace luminal::runtime::reference
