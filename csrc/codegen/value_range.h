// Bounds of a kernel's integer values, where the value DAG alone proves them: index arithmetic
// on IotaAt and literals (cat's clamped positions). A Gather whose position is proved in range
// needs no bounds check, so its loop has no early exit and can be vectorised.
#pragma once

#include <cstdint>
#include <optional>

#include "codegen/kernel.h"

namespace luminal::codegen {

struct IntRange {
  int64_t lo = 0, hi = 0;  // inclusive
};

// The range of value `id` of `kernel`, or nullopt where the analysis cannot bound it.
std::optional<IntRange> value_range(const Kernel& kernel, int id);

// Whether a GatherLoad's position provably lies in [0, extent).
bool gather_position_in_range(const Kernel& kernel, const Value& gather);

}  // namespace luminal::codegen
