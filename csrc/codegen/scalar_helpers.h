// The scalar helpers both emitters' preludes share, as source text: float -> integer conversion,
// wrapping integer arithmetic, integer division/modulo/power with ops.def semantics, NaN-
// propagating max/min, Python floor division for index expressions. Each prelude defines LM_FN
// (`inline` for C++, `__device__ __forceinline__` for CUDA) before including this text, so the
// two targets compute these ops from one definition.
#pragma once

namespace luminal::codegen {

const char* scalar_helpers_source();

}  // namespace luminal::codegen
