#include "codegen/scalar_helpers.h"

namespace luminal::codegen {

const char* scalar_helpers_source() {
  return R"LUMINAL(// Float -> integer truncates toward zero; NaN and out-of-range give INT64_MIN, as x86 does.
LM_FN int64_t lm_f2i(double v) {
  const double two_pow_63 = 9223372036854775808.0;
  if (!(v >= -two_pow_63 && v < two_pow_63)) return INT64_MIN;
  return (int64_t)v;
}
LM_FN int64_t lm_wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
LM_FN int64_t lm_wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
LM_FN int64_t lm_wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
LM_FN int64_t lm_idiv(int64_t a, int64_t b, int64_t& status) {
  if (b == 0) { status = 3; return 0; }
  if (b == -1) return lm_wsub(0, a);
  return a / b;
}
LM_FN int64_t lm_imod(int64_t a, int64_t b, int64_t& status) {
  if (b == 0) { status = 3; return 0; }
  if (b == -1) return 0;
  return a % b;
}
LM_FN int64_t lm_ipow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return exponent % 2 == 0 ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exponent != 0) {
    if (exponent & 1) result = lm_wmul(result, base);
    base = lm_wmul(base, base);
    exponent >>= 1;
  }
  return result;
}
// torch.maximum / minimum propagate NaN.
template <class T> LM_FN T lm_fmax(T a, T b) { return (a != a || b != b) ? a + b : (a < b ? b : a); }
template <class T> LM_FN T lm_fmin(T a, T b) { return (a != a || b != b) ? a + b : (b < a ? b : a); }
// Python floor division and modulo, for symbolic index expressions.
LM_FN int64_t lm_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
LM_FN int64_t lm_floormod(int64_t a, int64_t b) { return a - lm_floordiv(a, b) * b; }
LM_FN int64_t lm_imax(int64_t a, int64_t b) { return a < b ? b : a; }
LM_FN int64_t lm_imin(int64_t a, int64_t b) { return b < a ? b : a; }
)LUMINAL";
}

}  // namespace luminal::codegen
