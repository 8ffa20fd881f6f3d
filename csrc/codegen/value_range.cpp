#include "codegen/value_range.h"

#include <algorithm>

namespace luminal::codegen {

std::optional<IntRange> value_range(const Kernel& kernel, int id) {
  const Value& v = kernel.values.at(id);
  // Only i64 arithmetic: narrower integer types wrap where i64 does not overflow.
  if (v.dtype != ir::DType::I64) return std::nullopt;
  switch (v.kind) {
    case ValueKind::Literal:
      if (!v.literal.is_integer) return std::nullopt;
      return IntRange{v.literal.integer, v.literal.integer};
    case ValueKind::IotaAt:
      if (!v.extent.is_constant() || v.extent.constant_value() <= 0) return std::nullopt;
      return IntRange{0, v.extent.constant_value() - 1};
    case ValueKind::Compute: {
      if (v.args.size() != 2) return std::nullopt;
      const std::optional<IntRange> a = value_range(kernel, v.args[0]);
      const std::optional<IntRange> b = value_range(kernel, v.args[1]);
      if (!a || !b) return std::nullopt;
      IntRange r;
      switch (v.op) {
        case ir::Op::Add:
          if (__builtin_add_overflow(a->lo, b->lo, &r.lo) || __builtin_add_overflow(a->hi, b->hi, &r.hi))
            return std::nullopt;
          return r;
        case ir::Op::Sub:
          if (__builtin_sub_overflow(a->lo, b->hi, &r.lo) || __builtin_sub_overflow(a->hi, b->lo, &r.hi))
            return std::nullopt;
          return r;
        case ir::Op::Min: return IntRange{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
        case ir::Op::Max: return IntRange{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

bool gather_position_in_range(const Kernel& kernel, const Value& gather) {
  if (!gather.extent.is_constant()) return false;
  const std::optional<IntRange> r = value_range(kernel, gather.args.at(0));
  return r && r->lo >= 0 && r->hi < gather.extent.constant_value();
}

}  // namespace luminal::codegen
