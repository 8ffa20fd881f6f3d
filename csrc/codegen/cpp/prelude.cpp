#include "codegen/cpp/prelude.h"

#include "codegen/scalar_helpers.h"

namespace luminal::codegen::cpp {

namespace {

// csrc/common/half.h, verbatim (CMake writes it into this string literal).
constexpr const char* kHalfSource =
#include "codegen/half_source.inc"
    ;

// No <cmath>: its declarations of expf & co. would conflict with the `declare simd` ones
// below, so the few other math functions come from GCC builtins.
constexpr const char* kHelpers = R"LUMINAL(
#define LM_FN inline
#define LM_SIMD_FN _Pragma("omp declare simd notinbranch")
extern "C" {
LM_SIMD_FN float logf(float) noexcept;
LM_SIMD_FN float sinf(float) noexcept;
LM_SIMD_FN float cosf(float) noexcept;
LM_SIMD_FN float tanhf(float) noexcept;
LM_SIMD_FN double exp(double) noexcept;
LM_SIMD_FN double log(double) noexcept;
LM_SIMD_FN double sin(double) noexcept;
LM_SIMD_FN double cos(double) noexcept;
LM_SIMD_FN double tanh(double) noexcept;
LM_SIMD_FN double erf(double) noexcept;
float powf(float, float) noexcept;
double pow(double, double) noexcept;
float fmodf(float, float) noexcept;
double fmod(double, double) noexcept;
}

namespace {
// half_to_float without its branches and subnormal loop, so that loops over f16 vectorise:
// a subnormal's (or zero's) magnitude bits times 2^-24 are exact in float; the rest rebias the
// exponent or keep it all ones (inf/NaN). Bit-identical to half_to_float for every input.
inline float lm_h2f(uint16_t h) {
  const uint32_t magnitude = h & 0x7fffu;
  const float subnormal = (float)(int32_t)magnitude * 5.9604644775390625e-08f;
  uint32_t subnormal_bits;
  __builtin_memcpy(&subnormal_bits, &subnormal, sizeof subnormal_bits);
  const uint32_t shifted = magnitude << 13;
  const uint32_t bits = magnitude >= 0x7c00u ? (shifted | 0x7f800000u)
                        : magnitude >= 0x0400u ? shifted + ((127u - 15u) << 23)
                                               : subnormal_bits;
  const uint32_t u = bits | ((uint32_t)(h & 0x8000u) << 16);
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}
// float_to_half without branches, so that loops storing f16 vectorise: round-to-nearest-even
// on the bits for normal results (adding 0xfff plus the lowest kept bit), and for results
// below the smallest normal half an f32 addition of a magic number, which the FPU rounds to
// the half's subnormal grid. Bit-identical to float_to_half for every input.
inline uint16_t lm_f2h(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t magnitude = u & 0x7fffffffu;
  const uint32_t denormal_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  float shifted_f;
  __builtin_memcpy(&shifted_f, &magnitude, sizeof shifted_f);
  float magic_f;
  __builtin_memcpy(&magic_f, &denormal_magic, sizeof magic_f);
  const float subnormal_f = shifted_f + magic_f;
  uint32_t subnormal;
  __builtin_memcpy(&subnormal, &subnormal_f, sizeof subnormal);
  subnormal -= denormal_magic;
  const uint32_t normal = (magnitude + ((15u - 127u) << 23) + 0xfffu + ((magnitude >> 13) & 1u)) >> 13;
  const uint32_t bits = magnitude > 0x7f800000u ? 0x7e00u
                        : magnitude >= 0x47800000u ? 0x7c00u
                        : magnitude < 0x38800000u ? subnormal
                                                  : normal;
  return (uint16_t)(bits | sign);
}
inline float lm_bf2f(uint16_t h) { return luminal::bf16_to_float(h); }
// float_to_bf16's bits (ties to even; a NaN quieted, its sign and top payload kept) in the upper
// half of a 32-bit lane, for a float or each lane of a float vector (U: uint32_t or the unsigned
// vector of F's size; the vector kernels round with this one expression too). NaN is tested as
// f != f: one unordered compare per vector, where testing the exponent and mantissa bits took
// three instructions (8% of a bf16 RMSNorm, whose every op rounds as eager's does).
template <class U, class F>
inline U lm_bf16_rounded_bits_of(F f) {
  U u;
  __builtin_memcpy(&u, &f, sizeof u);
  return f != f ? (u | 0x400000u) : u + 0x7fffu + ((u >> 16) & 1u);
}
inline uint32_t lm_bf16_rounded_bits(float f) { return lm_bf16_rounded_bits_of<uint32_t>(f); }
inline uint16_t lm_f2bf(float f) { return (uint16_t)(lm_bf16_rounded_bits(f) >> 16); }
// The bf16 bits of a float that already is a bf16 value (its low half zero): no rounding to do,
// and a NaN's bits are kept as they are, as a copy keeps them.
inline uint16_t lm_bf16_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}
// Rounds a float to the nearest f16 / bf16 value, kept as float.
inline float lm_rh(float f) { return lm_h2f(lm_f2h(f)); }
// In 32-bit lanes throughout: narrowing to 16 bits and widening back costs a vector loop more
// in packs and unpacks than the rounding itself. Same bits as float_to_bf16 then widening.
inline float lm_rbf(float f) {
  const uint32_t u = lm_bf16_rounded_bits(f) & 0xffff0000u;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

)LUMINAL";

// After the shared scalar helpers (codegen/scalar_helpers.h): the vectorisable libm wrappers.
constexpr const char* kMathHelpers = R"LUMINAL(// e^r for x = n ln2 + r, |r| <= ln2 / 2, with n = rint(y / ln2) (y finite, or NaN): Cody-Waite
// reduction, then Cephes' degree-6 polynomial for e^r. The exps below scale it by 2^n their own
// way. Explicit fmaf: the kernels are built with -ffp-contract=off, and both ISAs give the same
// bits. The polynomial in Estrin's form (pairs of terms, then powers of r^2): four dependent
// steps instead of Horner's six. A vectorised exp is one long dependency chain per vector, and
// the out-of-order core overlaps too few vectors to hide it: the shorter chain made a loop of
// exps 8% and one of gelus (an exp's chain in its erf) 20% faster on one Zen 5 core, still
// within 1 ULP of the correctly rounded exp on all 2^32 floats (2026-12-06, docs/lessons.md).
// lm_expm1_reduced is e^r - 1 (the sum before its last add), for lm_erff.
inline float lm_expm1_reduced(float y, float& n) {
  n = __builtin_rintf(y * 1.44269504088896341f);
  float r = __builtin_fmaf(n, -0.693359375f, y);  // ln 2 in two parts: n * the first is exact
  r = __builtin_fmaf(n, 2.12194440e-4f, r);
  const float r2 = r * r;
  const float p01 = __builtin_fmaf(1.6666665459e-1f, r, 5.0000001201e-1f);
  const float p23 = __builtin_fmaf(8.3334519073e-3f, r, 4.1665795894e-2f);
  const float p45 = __builtin_fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
  const float p = __builtin_fmaf(__builtin_fmaf(p45, r2, p23), r2, p01);
  return __builtin_fmaf(p, r2, r);
}
inline float lm_exp_reduced(float y, float& n) { return lm_expm1_reduced(y, n) + 1.0f; }
// exp(x) inline, for every float: within 1 ULP of expf (checked on all 2^32 inputs), +inf above
// ~88.72, denormals down to ~-103.97 and 0 below, NaN for NaN. 2^n is two powers of two from
// the exponent's bits (each a normal float, so that a denormal or infinite result rounds once).
// libmvec's expf, called per vector, cost its call, spills and masking; its vector path sent a
// whole vector to a 15x slower scalar fallback for a lane below ln(FLT_MIN), as every masked
// score of a causal softmax is.
inline float lm_expf(float x) {
  float n;
  const float er = lm_exp_reduced(x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x, n);  // NaN stays NaN
  const int32_t whole = (int32_t)n, half = whole >> 1;
  const int32_t low_bits = (half + 127) << 23, high_bits = (whole - half + 127) << 23;
  float low, high;
  __builtin_memcpy(&low, &low_bits, sizeof low);
  __builtin_memcpy(&high, &high_bits, sizeof high);
  return x < -104.0f ? 0.0f : er * low * high;
}
constexpr float lm_exp_lowest = -87.33654f;  // ln(FLT_MIN): 2^n stays a normal float above it
// e^x as e^r times one power of two, for x from lm_exp_lowest to 89, or NaN: lm_expf's value
// below ~88.38, +inf above (2^n is +inf for n = 128, where lm_expf's two powers still make the
// finite values up to ~88.72). The callers below keep their arguments in that range.
// 2^n for an integral n from -126 to 128 (+inf), from the exponent's bits.
inline float lm_two_to(float n) {
  const int32_t bits = ((int32_t)n + 127) << 23;
  float two_n;
  __builtin_memcpy(&two_n, &bits, sizeof two_n);
  return two_n;
}
inline float lm_exp_one_power(float x) {
  float n;
  const float er = lm_exp_reduced(x, n);
  return er * lm_two_to(n);
}
// exp(x) for attention's shifted scores (x <= 0, or NaN): within 1 ULP of expf, 0 below
// ln(FLT_MIN) where expf is a denormal (an attention row's sum is at least 1, so those terms
// vanish in it anyway), NaN for NaN; one power of two, one multiply fewer than lm_expf. Inline
// instead of libmvec's expf: 7% of a 1,024-key attention, this a third of it (2026-11-28).
inline float lm_softmax_expf(float x) {
  return x < lm_exp_lowest ? 0.0f : lm_exp_one_power(x < lm_exp_lowest ? lm_exp_lowest : x);
}
// 1 / (1 + e^-x), e^-x with its argument clamped to lm_exp_one_power's range: from below, e^-x
// under FLT_MIN adds nothing to 1; from above, e^-x is +inf and the result 0 for x below ~-88.38,
// where sigmoid is a denormal (under 4e-39) and 0 for x below ~-88.72 with lm_expf. One power of
// two and no blend to 0 instead of lm_expf's two and its blend: silu's kernel was 12% faster
// (2026-12-06 (afternoon)). -inf still gives 0 (silu's -inf * 0 is NaN, as eager's).
inline float lm_sigmoid(float x) {
  const float y = -x;
  return 1.0f / (1.0f + lm_exp_one_power(y < lm_exp_lowest ? lm_exp_lowest : y > 89.0f ? 89.0f : y));
}
// erf(x) inline, within 1 ULP of the correctly rounded erf on every float (checked on all 2^32
// of them, both ISAs, 2026-12-06), +-1 from 4 on, NaN for NaN. Below 1, x + x p(x^2) (p fitted to
// erf(x)/x - 1 by weighted least squares, relative error 1e-9); from 1, 1 - e^(q(x) - x^2), q
// fitted to log(erfcx(x)) on [1, 4] (error 1e-9 relative to erf), x clamped to 4, where erf
// rounds to 1. Both halves for every lane, then a blend: no branch, so the loop vectorises.
// Both polynomials in Estrin's form, as lm_exp_reduced's, for the shorter dependency chain.
// libmvec's erff, called per vector, made gelu's erf cost as much as the rest of its kernel.
inline float lm_erff(float x) {
  const float ax = __builtin_fabsf(x), t = ax * ax, t2 = t * t;
  const float p01 = __builtin_fmaf(-3.761262583963134e-01f, t, 1.283791657323385e-01f);
  const float p23 = __builtin_fmaf(-2.6853815987219237e-02f, t, 1.1283585269118034e-01f);
  const float p45 = __builtin_fmaf(-8.01024591295114e-04f, t, 5.188334323542069e-03f);
  const float p = __builtin_fmaf(__builtin_fmaf(7.854019990888662e-05f, t2, p45), t2 * t2, __builtin_fmaf(p23, t2, p01));
  const float below_one = __builtin_fmaf(ax, p, ax);
  const float xc = ax > 4.0f ? 4.0f : ax, u = xc - 2.5f, u2 = u * u;  // NaN stays NaN
  const float q01 = __builtin_fmaf(-3.5269395542327037e-01f, u, -1.5568178920679518f);
  const float q23 = __builtin_fmaf(-1.0711248820741228e-02f, u, 5.611686192596473e-02f);
  const float q45 = __builtin_fmaf(-1.51964631753623e-04f, u, 2.465396538162899e-03f);
  const float q = __builtin_fmaf(__builtin_fmaf(1.8638027149990997e-04f, u2, q45), u2 * u2, __builtin_fmaf(q23, u2, q01));
  // 1 - e^y for y = q(x) - x^2 in [-18, -1] (x in [1, 4]), e^y = 2^n (1 + m), m = e^r - 1: as
  // (1 - 2^n) - m 2^n, one multiply-add from m, with 1 - 2^n beside the chain (exact for n >= -24,
  // and below that erf rounds to 1 either way); two steps fewer than 1 - lm_exp_one_power(y):
  // a one-core loop of gelus 3-4% faster (Zen 5), within 1 ULP on all floats as before.
  float n;
  const float m = lm_expm1_reduced(__builtin_fmaf(-xc, xc, q), n), two_n = lm_two_to(n);
  const float from_one = __builtin_fmaf(-m, two_n, 1.0f - two_n);
  return __builtin_copysignf(ax < 1.0f ? below_one : from_one, x);
}
inline double lm_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// The GEMV pattern kernel (codegen/kernel.h GemvSpec): R weight rows per pass over `a`, so
// that R independent sums are in flight, in eight f32 lanes. Each element type E reads `a`
// (of E::TA) once per step into E::X and multiply-adds one row's E::kLanes weights (of E::TW).
typedef float lm_f32x8 __attribute__((vector_size(32)));
typedef uint32_t lm_u32x8 __attribute__((vector_size(32)));
typedef int lm_i32x8 __attribute__((vector_size(32)));
inline lm_f32x8 lm_splat8(float v) { return lm_f32x8{v, v, v, v, v, v, v, v}; }
inline lm_i32x8 lm_splat_i32x8(int v) { return lm_i32x8{v, v, v, v, v, v, v, v}; }
// Fused multiply-adds. Generated kernels are built without floating-point contraction (each IR
// op rounds as the reference's does); the pattern kernels' products stand in for BLAS, which
// fuses multiply-adds, so they do too.
inline lm_f32x8 lm_madd8(lm_f32x8 a, lm_f32x8 b, lm_f32x8 c) {
#if defined(__FMA__)
  return __builtin_ia32_vfmaddps256(a, b, c);
#else
  return a * b + c;
#endif
}
#if defined(__AVX512F__)
typedef float lm_f32x16 __attribute__((vector_size(64)));
inline lm_f32x16 lm_madd16(lm_f32x16 a, lm_f32x16 b, lm_f32x16 c) {
  return __builtin_ia32_vfmaddps512_mask(a, b, c, (unsigned short)-1, 4 /* current rounding */);
}
inline lm_f32x16 lm_splat16(float v) { return lm_f32x16{v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v}; }
// lm_expm1_reduced on K vectors of sixteen lanes, from y and its n = rint(y / ln 2), which the
// callers round their own ways: each step for all K vectors before the next, so that K
// dependency chains run interleaved (lm_erff_lanes); K = 1 for lm_exp_reduced_lanes.
template <int K>
inline void lm_expm1_reduced_lanes(const lm_f32x16* y, const lm_f32x16* n, lm_f32x16* m) {
  lm_f32x16 r[K], r2[K], p01[K], p23[K], p45[K], p[K];
  for (int k = 0; k < K; ++k) r[k] = lm_madd16(n[k], lm_splat16(-0.693359375f), y[k]);
  for (int k = 0; k < K; ++k) r[k] = lm_madd16(n[k], lm_splat16(2.12194440e-4f), r[k]);
  for (int k = 0; k < K; ++k) r2[k] = r[k] * r[k];
  for (int k = 0; k < K; ++k) p01[k] = lm_madd16(lm_splat16(1.6666665459e-1f), r[k], lm_splat16(5.0000001201e-1f));
  for (int k = 0; k < K; ++k) p23[k] = lm_madd16(lm_splat16(8.3334519073e-3f), r[k], lm_splat16(4.1665795894e-2f));
  for (int k = 0; k < K; ++k) p45[k] = lm_madd16(lm_splat16(1.9875691500e-4f), r[k], lm_splat16(1.3981999507e-3f));
  for (int k = 0; k < K; ++k) p[k] = lm_madd16(p45[k], r2[k], p23[k]);
  for (int k = 0; k < K; ++k) p[k] = lm_madd16(p[k], r2[k], p01[k]);
  for (int k = 0; k < K; ++k) m[k] = lm_madd16(p[k], r2[k], r[k]);
}
// lm_exp_reduced's e^r on sixteen lanes (lm_softmax_exp16, the lane loops' exps).
inline lm_f32x16 lm_exp_reduced_lanes(lm_f32x16 y, lm_f32x16 n) {
  lm_f32x16 m;
  lm_expm1_reduced_lanes<1>(&y, &n, &m);
  return m + 1.0f;
}
// Lanes 0-7 plus lanes 8-15: the sum an AVX2 kernel's two eight-lane halves would make. (A
// memcpy of the halves made GCC keep the accumulators on the stack through the whole loop.)
inline lm_f32x8 lm_fold16(lm_f32x16 v) {
  return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
         __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
}
#endif
typedef short lm_i16x8 __attribute__((vector_size(16)));
struct lm_f32 {
  typedef float TA;
  typedef float TW;
  typedef lm_f32x8 X;
  typedef lm_f32x8 Acc;
  static constexpr int kLanes = 8;
  static constexpr bool kSequentialRows = false;
  static X load_x(const float* p) { X v; __builtin_memcpy(&v, p, sizeof v); return v; }
  static void madd(Acc& acc, const X& x, const float* w) { acc += x * load_x(w); }
  static lm_f32x8 fold(const Acc& acc) { return acc; }
  static float load1(const float* p) { return *p; }
  static lm_f32x8 load8(const float* p) { return load_x(p); }
};
// bf16 is the top half of an f32, so 16 weights widen with a shift (even elements) and a mask
// (odd elements): no shuffles. The dot product does not care which lane a pair lands in; even
// and odd sums are separate chains so that adds do not wait on each other. A product of two
// bf16 values is exact in f32, so a fused multiply-add rounds as the multiply then add does,
// in one instruction instead of two.
struct lm_bf16 {
  typedef uint16_t TA;
  typedef uint16_t TW;
  struct X { lm_f32x8 even, odd; };
  typedef X Acc;
  static constexpr int kLanes = 16;
  static constexpr bool kSequentialRows = true;
  static X load_x(const uint16_t* p) {
    lm_u32x8 v;
    __builtin_memcpy(&v, p, sizeof v);
    return X{(lm_f32x8)(v << 16), (lm_f32x8)(v & 0xffff0000u)};
  }
  static void madd(Acc& acc, const X& x, const uint16_t* w) {
    const X v = load_x(w);
    acc.even = lm_madd8(x.even, v.even, acc.even);
    acc.odd = lm_madd8(x.odd, v.odd, acc.odd);
  }
  static lm_f32x8 fold(const Acc& acc) { return acc.even + acc.odd; }
  static float load1(const uint16_t* p) { return lm_bf2f(*p); }
  // Eight weights in order, each in its own lane.
  static lm_f32x8 load8(const uint16_t* p) {
    typedef unsigned short lm_u16x8 __attribute__((vector_size(16)));
    lm_u16x8 h;
    __builtin_memcpy(&h, p, sizeof h);
    return (lm_f32x8)(__builtin_convertvector(h, lm_u32x8) << 16);
  }
  // Sixteen weights as lm_gemv_columns takes them: the even ones, then the odd ones.
  static constexpr bool kInterleaved = true;
  static void widen16(const uint16_t* p, lm_f32x8& first, lm_f32x8& second) {
    const X v = load_x(p);
    first = v.even;
    second = v.odd;
  }
};
struct lm_f16 {
  typedef uint16_t TA;
  typedef uint16_t TW;
  typedef lm_f32x8 X;
  typedef lm_f32x8 Acc;
  static constexpr int kLanes = 8;
  static constexpr bool kSequentialRows = true;  // as bf16 rows (lm_gemv_rows_sequential)
  static X load_x(const uint16_t* p) {
#if defined(__F16C__) && defined(__AVX__)
    lm_i16x8 h;
    __builtin_memcpy(&h, p, sizeof h);
    return __builtin_ia32_vcvtph2ps256(h);
#else
    X v;
    for (int i = 0; i < 8; ++i) v[i] = lm_h2f(p[i]);
    return v;
#endif
  }
  // An f16 product is exact in f32: the fused multiply-add rounds as a multiply then add would.
  static void madd(Acc& acc, const X& x, const uint16_t* w) { acc = lm_madd8(x, load_x(w), acc); }
  static lm_f32x8 fold(const Acc& acc) { return acc; }
  static float load1(const uint16_t* p) { return lm_h2f(*p); }
  static lm_f32x8 load8(const uint16_t* p) { return load_x(p); }
  static constexpr bool kInterleaved = false;
  static void widen16(const uint16_t* p, lm_f32x8& first, lm_f32x8& second) {
    first = load_x(p);
    second = load_x(p + 8);
  }
};
// Eight int8 weights sign-extended to 32-bit lanes.
inline lm_i32x8 lm_widen_i8_i32(const signed char* w) {
#if defined(__AVX2__)
  // One vpmovsxbd from memory; GCC scalarises a char-to-int convertvector.
  typedef char lm_i8x16 __attribute__((vector_size(16)));
  typedef long long lm_i64x2 __attribute__((vector_size(16)));
  long long bytes;
  __builtin_memcpy(&bytes, w, sizeof bytes);
  const lm_i64x2 low = {bytes, 0};
  return (lm_i32x8)__builtin_ia32_pmovsxbd256((lm_i8x16)low);
#else
  typedef signed char lm_i8x8 __attribute__((vector_size(8)));
  lm_i8x8 v;
  __builtin_memcpy(&v, w, sizeof v);
  return __builtin_convertvector(v, lm_i32x8);
#endif
}
// Weight-only int8 (passes/quantized_weights.h): eight weights widen to f32 in registers
// (sign-extend, convert: one vpmovsxbd and a vcvtdq2ps), exact; the scales multiply the GEMV's
// output afterwards.
inline lm_f32x8 lm_widen_i8(const signed char* w) { return __builtin_convertvector(lm_widen_i8_i32(w), lm_f32x8); }
#if defined(__AVX512F__)
// Sixteen weights: one vpmovsxbd from memory to 512 bits and a vcvtdq2ps.
inline lm_f32x16 lm_widen_i8x16(const signed char* w) {
  typedef char lm_i8x16 __attribute__((vector_size(16)));
  typedef int lm_i32x16 __attribute__((vector_size(64)));
  lm_i8x16 v;
  __builtin_memcpy(&v, w, sizeof v);
  return __builtin_convertvector((lm_i32x16)__builtin_ia32_pmovsxbd512_mask(v, lm_i32x16{}, (unsigned short)-1),
                                 lm_f32x16);
}
#endif
#if defined(__AVX512BF16__)
// AVX512-BF16's two instructions, as inline assembly: GCC 12's builtins take vectors of short
// where GCC 13's take __bf16, and <immintrin.h> adds half a second to every kernel build. A
// vector of 32 bf16 values travels as the bits of an lm_f32x16.
// lo's sixteen values rounded to bf16 (to nearest, ties to even) in the low half, hi's above.
inline lm_f32x16 lm_round_bf16_pairs(lm_f32x16 lo, lm_f32x16 hi) {
  lm_f32x16 out;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(out) : "v"(hi), "v"(lo));
  return out;
}
// acc + a[2i] b[2i] + a[2i+1] b[2i+1] in each f32 lane i, for bf16 pairs a and b: the products
// are exact; denormal inputs and results count as zero (as in oneDNN's bf16 GEMMs, eager's on
// such a CPU).
// GCC 12's builtin where it is the compiler: through the inline assembly's "+v" operand GCC kept
// a tile's accumulators in zmm0-15 and moved two of them in and out of place every step (a
// Llama's 32-row bf16 prompts ran at 0.8x; docs/lessons.md, 2026-11-29 (late morning)).
inline lm_f32x16 lm_dot_bf16_pairs(lm_f32x16 acc, lm_f32x16 a, lm_f32x16 b) {
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
  typedef short lm_i16x32 __attribute__((vector_size(64)));
  return __builtin_ia32_dpbf16ps_v16sf(acc, (lm_i16x32)a, (lm_i16x32)b);
#else
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#endif
}
#endif
struct lm_f32_i8 {
  typedef float TA;
  typedef signed char TW;
  static constexpr int kLanes = 16;
  static constexpr bool kSequentialRows = true;
#if defined(__AVX512F__)
  // Sixteen weights per step in one register, half the instructions of AVX2's two (1.36x its
  // rate on a 35 MB weight, 1.1x on a 134 MB one). Lane j sums what AVX2's lane j of `lo`
  // (j < 8) or of `hi` sums, and fold adds the halves as AVX2's does, so both ISAs give the same bits.
  typedef lm_f32x16 X;
  typedef X Acc;
  static X load_x(const float* p) {
    X v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void madd(Acc& acc, const X& x, const signed char* w) { acc = lm_madd16(x, lm_widen_i8x16(w), acc); }
  static lm_f32x8 fold(const Acc& acc) { return lm_fold16(acc); }
#else
  // Sixteen weights per step in two chains, so that the FMAs of a row do not wait on each other.
  struct X { lm_f32x8 lo, hi; };
  typedef X Acc;
  static X load_x(const float* p) {
    X v;
    __builtin_memcpy(&v.lo, p, sizeof v.lo);
    __builtin_memcpy(&v.hi, p + 8, sizeof v.hi);
    return v;
  }
  static void madd(Acc& acc, const X& x, const signed char* w) {
    acc.lo = lm_madd8(x.lo, lm_widen_i8(w), acc.lo);
    acc.hi = lm_madd8(x.hi, lm_widen_i8(w + 8), acc.hi);
  }
  static lm_f32x8 fold(const Acc& acc) { return acc.lo + acc.hi; }
#endif
  static float load1(const float* p) { return *p; }
  static float load1(const signed char* p) { return *p; }
};
// bf16 activations: eight at a time, each the top half of an f32.
struct lm_bf16_i8 {
  typedef uint16_t TA;
  typedef signed char TW;
  typedef lm_f32x8 X;
  typedef lm_f32x8 Acc;
  static constexpr int kLanes = 8;
  static constexpr bool kSequentialRows = false;
  static X load_x(const uint16_t* p) { return lm_bf16::load8(p); }
  // bf16 times int8 is exact in f32: the fused multiply-add rounds as a multiply then add would.
  static void madd(Acc& acc, const X& x, const signed char* w) { acc = lm_madd8(x, lm_widen_i8(w), acc); }
  static lm_f32x8 fold(const Acc& acc) { return acc; }
  static float load1(const uint16_t* p) { return lm_bf2f(*p); }
  static float load1(const signed char* p) { return *p; }
};
// bf16 activations times int8 weight rows read one after another (a decode GEMV without batch
// dims). AVX-512 widens `a` in registers, sixteen at a time, for every row: `a` stays bf16 in
// L1, where an f32 copy of an 8192-wide one (32 KiB) and the two weight streams outgrew the
// Zen 5's 48 KiB L1 and its 8192 -> 2048 GEMV streamed 10-15% slower than 2048 -> 8192
// (docs/lessons.md, 2026-12-07 night). AVX2 has half the lanes per widening: the emitter widens
// `a` into an f32 copy once per call (kWidensA) and the rows read it as f32 activations
// (lm_f32_i8). Both are lm_f32_i8 but for how `a` is read: the same products in the same order,
// the same bits.
#if defined(__AVX512F__)
struct lm_bf16_i8_rows : lm_f32_i8 {
  typedef uint16_t TA;
  static constexpr bool kWidensA = false;
  static const TA* rows_a(const uint16_t* a, const float*) { return a; }
  static X load_x(const uint16_t* p) {
    typedef uint16_t lm_u16x16 __attribute__((vector_size(32)));
    typedef uint32_t lm_u32x16 __attribute__((vector_size(64)));
    lm_u16x16 h;
    __builtin_memcpy(&h, p, sizeof h);
    const lm_u32x16 bits = __builtin_convertvector(h, lm_u32x16) << 16;
    X v;
    __builtin_memcpy(&v, &bits, sizeof v);
    return v;
  }
  using lm_f32_i8::load1;
  static float load1(const uint16_t* p) { return lm_bf2f(*p); }
};
#else
struct lm_bf16_i8_rows : lm_f32_i8 {
  static constexpr bool kWidensA = true;
  static const float* rows_a(const uint16_t*, const float* wide) { return wide; }
};
#endif
// bf16 to f32, exactly, eight at a time.
inline void lm_widen_bf16(const uint16_t* a, int64_t n, float* out) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const lm_f32x8 v = lm_bf16::load8(a + j);
    __builtin_memcpy(out + j, &v, sizeof v);
  }
  for (; j < n; ++j) out[j] = lm_bf2f(a[j]);
}
inline float lm_sum8(lm_f32x8 v) { return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7])); }

// The attention pattern kernel (codegen/kernel.h AttentionSpec).
// c[R x 16S] (+)= a[R x depth] (row stride lda) x S strips of b, strip s at b + s * strip_stride,
// each [depth x 16] with row stride 16: R x S accumulators of 16 floats in registers, one
// broadcast of `a` per row and step and one load per strip. AVX2 holds a strip's 16 columns in
// two registers, and six rows of one strip fill 12 of its 16 (GCC spills smaller tiles' to the
// stack: four rows ran at half the rate of six). AVX-512 holds them in one, so a tile takes two
// strips (lm_tile_strip_count) and its six rows fill 12 of 32: twice the work per step, 1.6-1.8x
// the AVX2 tile's rate on an Emerald Rapids core (docs/lessons.md, 2026-11-26). Both sum each
// output in the same order, so the two ISAs give the same bits.
#if defined(__AVX512F__)
constexpr int64_t lm_tile_strip_count = 2;
template <int R, int S>
inline void lm_tile_strips(const float* a, int64_t lda, const float* b, int64_t strip_stride, int64_t depth, float* c,
                           int64_t ldc, bool accumulate) {
  lm_f32x16 acc[R][S] = {};
  if (accumulate)
    for (int r = 0; r < R; ++r)
      for (int s = 0; s < S; ++s) __builtin_memcpy(&acc[r][s], c + r * ldc + s * 16, sizeof acc[r][s]);
  for (int64_t e = 0; e < depth; ++e) {
    lm_f32x16 strip[S];
    for (int s = 0; s < S; ++s) __builtin_memcpy(&strip[s], b + s * strip_stride + e * 16, sizeof strip[s]);
    for (int r = 0; r < R; ++r) {
      const float y = a[r * lda + e];
      const lm_f32x16 x = {y, y, y, y, y, y, y, y, y, y, y, y, y, y, y, y};
      for (int s = 0; s < S; ++s) acc[r][s] = lm_madd16(x, strip[s], acc[r][s]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) __builtin_memcpy(c + r * ldc + s * 16, &acc[r][s], sizeof acc[r][s]);
}
#else
constexpr int64_t lm_tile_strip_count = 1;
template <int R, int S>
inline void lm_tile_strips(const float* a, int64_t lda, const float* b, int64_t strip_stride, int64_t depth, float* c,
                           int64_t ldc, bool accumulate) {
  lm_f32x8 acc[R][2 * S] = {};
  if (accumulate)
    for (int r = 0; r < R; ++r)
      for (int h = 0; h < 2 * S; ++h) __builtin_memcpy(&acc[r][h], c + r * ldc + h * 8, sizeof acc[r][h]);
  for (int64_t e = 0; e < depth; ++e) {
    lm_f32x8 strip[2 * S];
    for (int h = 0; h < 2 * S; ++h)
      __builtin_memcpy(&strip[h], b + h / 2 * strip_stride + e * 16 + h % 2 * 8, sizeof strip[h]);
    for (int r = 0; r < R; ++r) {
      const float y = a[r * lda + e];
      const lm_f32x8 x = {y, y, y, y, y, y, y, y};
      for (int h = 0; h < 2 * S; ++h) acc[r][h] = lm_madd8(x, strip[h], acc[r][h]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2 * S; ++h) __builtin_memcpy(c + r * ldc + h * 8, &acc[r][h], sizeof acc[r][h]);
}
#endif
// c[R x 16 count] (+)= a[R x depth] x `count` strips, as many tiles of lm_tile_strip_count strips
// as fit (on AVX-512 an odd count's first three as one), then one strip at a time.
template <int R>
inline void lm_tile_strip_run(const float* a, int64_t lda, const float* b, int64_t strip_stride, int64_t count,
                              int64_t depth, float* c, int64_t ldc, bool accumulate) {
#if !defined(__AVX512F__)
  if constexpr (R > 6) {  // six rows of a strip fill 12 of AVX2's 16 registers: more run as two halves
    lm_tile_strip_run<R / 2>(a, lda, b, strip_stride, count, depth, c, ldc, accumulate);
    lm_tile_strip_run<R - R / 2>(a + R / 2 * lda, lda, b, strip_stride, count, depth, c + R / 2 * ldc, ldc,
                                 accumulate);
    return;
  }
#endif
  int64_t s = 0;
#if defined(__AVX512F__)
  // An odd count of three or more starts with a tile of three strips: a last tile of one strip is
  // R chains of dependent FMAs, too few to hide their latency.
  if constexpr (R <= 8)
    if (count >= 3 && count % 2 == 1) {
      lm_tile_strips<R, 3>(a, lda, b, strip_stride, depth, c, ldc, accumulate);
      s = 3;
    }
#endif
  for (; s + lm_tile_strip_count <= count; s += lm_tile_strip_count)
    lm_tile_strips<R, lm_tile_strip_count>(a, lda, b + s * strip_stride, strip_stride, depth, c + s * 16, ldc,
                                           accumulate);
  for (; s < count; ++s) lm_tile_strips<R, 1>(a, lda, b + s * strip_stride, strip_stride, depth, c + s * 16, ldc, accumulate);
}
// c[R x 8] (+)= a[R x depth] x the first eight columns of one strip: a GEMV's last strip when it
// holds at most eight rows of `a` (an 8-token prompt), whose other eight columns are zeros that
// the 16-column tile would multiply too: a prompt of 4, 8 or 16 rows took the same time. Eight
// columns are one vector on both ISAs, so R rows are R chains of FMAs (twelve fill AVX2's
// registers); each column is summed in the 16-column tile's order, so the bits are the same.
template <int R>
inline void lm_tile_half_strip(const float* a, int64_t lda, const float* b, int64_t depth, float* c, int64_t ldc,
                               bool accumulate) {
  lm_f32x8 acc[R] = {};
  if (accumulate)
    for (int r = 0; r < R; ++r) __builtin_memcpy(&acc[r], c + r * ldc, sizeof acc[r]);
  for (int64_t e = 0; e < depth; ++e) {
    lm_f32x8 strip;
    __builtin_memcpy(&strip, b + e * 16, sizeof strip);
    for (int r = 0; r < R; ++r) {
      const float y = a[r * lda + e];
      const lm_f32x8 x = {y, y, y, y, y, y, y, y};
      acc[r] = lm_madd8(x, strip, acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) __builtin_memcpy(c + r * ldc, &acc[r], sizeof acc[r]);
}
// lm_tile_strip_run for a GEMV's strips of `a`, `rows` rows in all, into sums laid out as
// lm_gemv_strips says (a row of c per weight row, 16 per strip): a last strip of at most eight
// rows runs as half a strip.
template <int R>
inline void lm_gemv_strip_run(const float* a, int64_t lda, const float* b, int64_t strip_stride, int64_t rows,
                              int64_t depth, float* c, bool accumulate) {
  const int64_t count = (rows + 15) / 16, ldc = count * 16;
  if constexpr (R > 12) {  // more than twelve chains of a half strip would spill
    lm_gemv_strip_run<R / 2>(a, lda, b, strip_stride, rows, depth, c, accumulate);
    lm_gemv_strip_run<R - R / 2>(a + R / 2 * lda, lda, b, strip_stride, rows, depth, c + R / 2 * ldc, accumulate);
    return;
  }
  const bool half_last = rows % 16 != 0 && rows % 16 <= 8;
  lm_tile_strip_run<R>(a, lda, b, strip_stride, count - half_last, depth, c, ldc, accumulate);
  if (half_last)
    lm_tile_half_strip<R>(a, lda, b + (count - 1) * strip_stride, depth, c + (count - 1) * 16, ldc, accumulate);
}
// Two vectors' lanes picked by constant indices (0-7 from `a`, 8-15 from `b`); clang spells
// GCC's builtin differently.
#if defined(__clang__)
#define LM_SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define LM_SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, (lm_shuffle_mask8){__VA_ARGS__})
typedef int lm_shuffle_mask8 __attribute__((vector_size(32)));
#endif
// r[j][e] -> r[e][j] for an 8 x 8 block in registers: pairs of rows interleave, then pairs of
// pairs, then the 128-bit halves (the usual unpack / shuffle / permute transpose).
inline void lm_transpose8(lm_f32x8 r[8]) {
  lm_f32x8 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = LM_SHUFFLE8(r[2 * i], r[2 * i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * i + 1] = LM_SHUFFLE8(r[2 * i], r[2 * i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 2; ++h) {
      u[4 * i + h] = LM_SHUFFLE8(t[4 * i + h], t[4 * i + 2 + h], 0, 1, 8, 9, 4, 5, 12, 13);
      u[4 * i + 2 + h] = LM_SHUFFLE8(t[4 * i + h], t[4 * i + 2 + h], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  // u[q] (rows 0-3) and u[4 + q] (rows 4-7) hold columns e and e + 4, for e = 0, 2, 1, 3 at q = 0..3.
  constexpr int kColumnsIn[4] = {0, 2, 1, 3};
  for (int e = 0; e < 4; ++e) {
    r[e] = LM_SHUFFLE8(u[kColumnsIn[e]], u[4 + kColumnsIn[e]], 0, 1, 2, 3, 8, 9, 10, 11);
    r[e + 4] = LM_SHUFFLE8(u[kColumnsIn[e]], u[4 + kColumnsIn[e]], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}
// c[rows x cols] = a[rows x depth] x b[depth x cols], rows a multiple of 6 and cols of 16: the
// callers pad their panels to whole tiles. b is stored as 16-column strips, each [depth x 16]
// contiguous, strip s at b + s * strip_stride. The depth goes in chunks of 256, whose piece of a
// strip is 16 KiB in one run and stays in L1 for every row tile: a row-major b whose row stride
// is a multiple of 512 bytes (a head dim of 128) put those 256 rows in 8 of L1's 64 sets, and
// evicted itself.
// Never inlined: inside a large caller (lm_attention_head, once it was inlined into its kernel),
// GCC kept the tiles' accumulators on the stack, storing all twelve every step, and attention
// ran at half speed (2026-11-28). On its own the tiles keep them in registers.
__attribute__((noinline)) inline void lm_panel_product(const float* a, int64_t lda, const float* b,
                                                       int64_t strip_stride, int64_t depth, float* c, int64_t ldc,
                                                       int64_t rows, int64_t cols) {
  constexpr int64_t kChunk = 256;
  for (int64_t j = 0; j < cols; j += 16 * lm_tile_strip_count) {
    const int64_t strips = (cols - j) / 16 < lm_tile_strip_count ? (cols - j) / 16 : lm_tile_strip_count;
    const float* strip = b + j / 16 * strip_stride;
    for (int64_t d = 0; d < depth || d == 0; d += kChunk) {
      const int64_t chunk = depth - d < kChunk ? depth - d : kChunk;
      for (int64_t r = 0; r < rows; r += 6)
        lm_tile_strip_run<6>(a + r * lda + d, lda, strip + d * 16, strip_stride, strips, chunk, c + r * ldc + j, ldc,
                             d > 0);
    }
  }
}
// Whether b[0..16) (contiguous) are all -inf, compared bitwise: two vector compares where the
// scan below compared one float at a time. A NaN is not -inf, so it counts as attended.
inline bool lm_masked16(const float* b) {
  lm_u32x8 low, high;
  __builtin_memcpy(&low, b, sizeof low);
  __builtin_memcpy(&high, b + 8, sizeof high);
  const uint32_t kMaskedBits = 0xFF800000u;  // -inf
  const lm_u32x8 differ = (low ^ kMaskedBits) | (high ^ kMaskedBits);
#if defined(__AVX__)
  typedef long long lm_i64x4 __attribute__((vector_size(32)));
  return __builtin_ia32_ptestz256((lm_i64x4)differ, (lm_i64x4)differ);
#else
  uint32_t any = 0;
  for (int i = 0; i < 8; ++i) any |= differ[i];
  return any == 0;
#endif
}
// Key columns [lo, hi) that some of `rows` rows may attend: outside it every row's bias is -inf,
// so those probabilities are exactly 0 and their keys and values are never read. Rows go last to
// first and each scans only the columns outside the window found so far: a causal mask's last row
// attends the widest, so the others check nothing or only the masked tail. Scanning every row
// from both ends took a third of a 1,024-token causal attention (2026-11-28).
inline void lm_attended_columns(const float* bias, int64_t b_rs, int64_t b_cs, int64_t rows, int64_t S, int64_t& lo,
                                int64_t& hi) {
  lo = 0;
  hi = S;
  if (!bias) return;
  lo = S;
  hi = 0;
  const float kMasked = -__builtin_inff();
  for (int64_t r = rows - 1; r >= 0; --r) {
    const float* b = bias + r * b_rs;
    int64_t first = 0;  // the row's first attended column, if it lies before lo
    if (b_cs == 1)
      while (first + 16 <= lo && lm_masked16(b + first)) first += 16;
    while (first < lo && b[first * b_cs] == kMasked) ++first;
    lo = first;
    int64_t last = S;  // one past the row's last attended column, if that lies past hi
    if (b_cs == 1)
      while (last - 16 >= hi && lm_masked16(b + last - 16)) last -= 16;
    while (last > hi && b[(last - 1) * b_cs] == kMasked) --last;
    hi = last;
  }
}
// The attended key window of each block of `rows` query rows of one bias, and their union [lo, hi):
// found once per kernel call and thread, since heads share their bias (a mask broadcast over
// them). Scanning it for every head read the whole [1,024 x 2,048] mask of a long prompt's
// prefill into a 2,048-slot cache 32 times per layer. Only valid within one kernel call, where
// the bias a pointer names cannot change.
struct lm_attention_windows {
  const float* bias = nullptr;
  int64_t lo = 0, hi = 0;
  int64_t* blocks = nullptr;  // [lo, hi) of block i at 2i, 2i + 1
  lm_attention_windows() = default;
  lm_attention_windows(const lm_attention_windows&) = delete;
  lm_attention_windows& operator=(const lm_attention_windows&) = delete;
  ~lm_attention_windows() { __builtin_free(blocks); }
  // False when its memory cannot be allocated. A causal mask (no bias: AttentionSpec::causal)
  // gives each block the keys its last row attends, those up to its index plus `shift`.
  bool find(const float* b, int64_t b_rs, int64_t b_cs, int64_t L, int64_t S, int64_t rows, bool causal,
            int64_t shift) {
    if (blocks != nullptr && b == bias) return true;
    if (blocks == nullptr) {
      blocks = (int64_t*)__builtin_malloc(sizeof(int64_t) * 2 * ((L + rows - 1) / rows));
      if (blocks == nullptr) return false;
    }
    bias = b;
    lo = S;
    hi = 0;
    for (int64_t r0 = 0, i = 0; r0 < L; r0 += rows, ++i) {
      const int64_t count = L - r0 < rows ? L - r0 : rows;
      if (causal) {
        blocks[2 * i] = 0;
        blocks[2 * i + 1] = lm_imin(lm_imax(r0 + count + shift, 0), S);
      } else {
        lm_attended_columns(b ? b + r0 * b_rs : nullptr, b_rs, b_cs, count, S, blocks[2 * i], blocks[2 * i + 1]);
      }
      if (blocks[2 * i] >= blocks[2 * i + 1]) continue;
      lo = blocks[2 * i] < lo ? blocks[2 * i] : lo;
      hi = blocks[2 * i + 1] > hi ? blocks[2 * i + 1] : hi;
    }
    return true;
  }
  // Block i's attended keys, from the multiple of `align` keys past lo at or before its first:
  // [lo + w0, lo + w0 + bn). The keys that adds are -inf in every row's bias, so their
  // probabilities are exactly 0, as in the reference, which computes every key. False, with the
  // block's `count` rows of `out` (Ev values each) zeroed, where its rows attend nothing.
  bool block_keys(int64_t i, int64_t align, float* out, int64_t count, int64_t Ev, int64_t& w0, int64_t& bn) const {
    if (blocks[2 * i] >= blocks[2 * i + 1]) {
      for (int64_t r = 0; r < count * Ev; ++r) out[r] = 0.0f;
      return false;
    }
    w0 = (blocks[2 * i] - lo) / align * align;
    bn = blocks[2 * i + 1] - lo - w0;
    return true;
  }
};
// scores[r][0..n) (row stride lds) = (q·k) * scale + bias -> exp(score - the row's max), and
// sums[r] = their sum: the caller divides the row's output by it, Ev divisions where dividing the
// probabilities took n (with the scale and bias in the max's pass, two passes over the scores
// instead of four: they were half of the time outside the tiles, 2026-11-28). A row with every
// score -inf becomes zeros with sum 1, as torch's _safe_softmax gives zeros. Row r attends only
// keys below diagonal_end + r (a causal mask, AttentionSpec::causal; n or more for none): the
// others' probabilities are 0 whatever their scores.
inline void lm_attention_softmax(float* scores, int64_t lds, int64_t rows, int64_t all_n, int64_t diagonal_end,
                                 const float* bias, int64_t b_rs, int64_t b_cs, float scale, float* sums) {
  for (int64_t r = 0; r < rows; ++r) {
    float* s = scores + r * lds;
    const float* b = bias ? bias + r * b_rs : nullptr;
    const int64_t n = lm_imin(lm_imax(diagonal_end + r, 0), all_n);
    // This max skips NaN, which the reference's MaxReduce propagates; a NaN score still makes
    // its exp, the sum and so the whole row NaN, as there. Only a row whose other scores are
    // all -inf needs the NaN looked for.
    float m = -__builtin_inff();
    if (b) {
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < n; ++j) {
        const float x = s[j] * scale + b[j * b_cs];
        s[j] = x;
        m = x > m ? x : m;
      }
    } else {
#pragma omp simd reduction(max : m)
      for (int64_t j = 0; j < n; ++j) {
        const float x = s[j] * scale;
        s[j] = x;
        m = x > m ? x : m;
      }
    }
    if (m == -__builtin_inff())
      for (int64_t j = 0; j < n; ++j)
        if (s[j] != s[j]) m = s[j];
    if (m == -__builtin_inff()) {
      for (int64_t j = 0; j < all_n; ++j) s[j] = 0.0f;
      sums[r] = 1.0f;
      continue;
    }
    // The masked keys' scores are -inf, their exps 0: summed over the whole window, as with a
    // -inf bias, the vector sum adds in the same order and gives the same bits.
    for (int64_t j = n; j < all_n; ++j) s[j] = -__builtin_inff();
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < all_n; ++j) {
      const float e = lm_softmax_expf(s[j] - m);
      s[j] = e;
      sum += e;
    }
    sums[r] = sum;
  }
}
// Rows [0, n) of k as kᵀ in 16-column strips, kp[j / 16][e][j % 16] (E x 16 floats a strip),
// zero past row n to the strip's end. Eight rows by eight columns at a time are transposed in
// registers: one element at a time, the packing took a fifth of the time outside the tiles of a
// 1,024-key attention (2026-11-28).
template <class K>
inline void lm_pack_key_strips(const typename K::TA* k, int64_t k_rs, int64_t k_cs, int64_t n, int64_t E, float* kp) {
  auto at = [&](int64_t j, int64_t e) -> float& { return kp[j / 16 * E * 16 + e * 16 + j % 16]; };
  int64_t j0 = 0;
  if (k_cs == 1)
    for (; j0 + 8 <= n; j0 += 8) {
      int64_t e = 0;
      for (; e + 8 <= E; e += 8) {
        lm_f32x8 block[8];
        for (int i = 0; i < 8; ++i) block[i] = K::load8(k + (j0 + i) * k_rs + e);
        lm_transpose8(block);
        for (int c = 0; c < 8; ++c) __builtin_memcpy(&at(j0, e + c), &block[c], sizeof block[c]);
      }
      for (; e < E; ++e)
        for (int64_t j = j0; j < j0 + 8; ++j) at(j, e) = K::load1(k + j * k_rs + e);
    }
  for (; j0 < n; j0 += 8) {  // 8 rows at a time, so that their lines stay in L1
    const int64_t j1 = j0 + 8 < n ? j0 + 8 : n;
    for (int64_t e = 0; e < E; ++e)
      for (int64_t j = j0; j < j1; ++j) at(j, e) = K::load1(k + j * k_rs + e * k_cs);
  }
  for (int64_t j = n; j % 16 != 0; ++j)
    for (int64_t e = 0; e < E; ++e) at(j, e) = 0.0f;
}
// Rows [0, n) of v in 16-column strips, vp[c / 16][j][c % 16] (n x 16 floats a strip), zero in
// the columns past Ev.
template <class V>
inline void lm_pack_value_strips(const typename V::TA* v, int64_t v_rs, int64_t v_cs, int64_t n, int64_t Ev,
                                 float* vp) {
  const int64_t ev16 = (Ev + 15) / 16 * 16;
  for (int64_t j = 0; j < n; ++j) {
    const typename V::TA* src = v + j * v_rs;
    int64_t c = 0;
    if (v_cs == 1)
      for (; c + 8 <= Ev; c += 8) {
        const lm_f32x8 x = V::load8(src + c);
        __builtin_memcpy(vp + c / 16 * n * 16 + j * 16 + c % 16, &x, sizeof x);
      }
    for (; c < ev16; ++c) vp[c / 16 * n * 16 + j * 16 + c % 16] = c < Ev ? V::load1(src + c * v_cs) : 0.0f;
  }
}
// A causal mask's shift, `constant` plus a tensor's `value`, clamped to [-L, S]: at -L or below
// no row attends any key, at S or above every row attends every key.
inline int64_t lm_causal_shift(int64_t constant, int64_t value, int64_t L, int64_t S) {
  const __int128 shift = (__int128)constant + value;
  return shift < -L ? -L : shift > S ? S : (int64_t)shift;
}
// One (batch, head): out [L, Ev] contiguous. A few query rows (decode) take dot products
// straight from k and v; more rows share k and v packed once into zero-padded panels of
// 16-column strips (kᵀ [E, n16], v [n, ev16]) and go in blocks of `block` rows whose scores
// stay in cache.
// Q, K and V (lm_f32, lm_bf16 or lm_f16) say how q, k and v are stored: f16/bf16 attention
// computes in f32, and each element widens exactly as it is read, so a half-precision KV cache is
// read in place (only its attended rows) instead of cast whole to an f32 copy every call.
// `windows` carries the bias's key windows from one head to the next within a kernel call.
// `causal` (without a bias): row l attends keys s <= l + shift (AttentionSpec::causal; the
// caller clamps the shift to [-L, S], lm_causal_shift, so that no index sum overflows).
// Returns false when its scratch memory cannot be allocated.
template <class A, class B>
struct lm_is_same {
  static constexpr bool value = false;
};
template <class A>
struct lm_is_same<A, A> {
  static constexpr bool value = true;
};
#if defined(__AVX512BF16__)
inline bool lm_attention_head_bf16_tiles(const uint16_t* q, int64_t q_rs, int64_t q_cs, const uint16_t* k,
                                         int64_t k_rs, int64_t k_cs, const uint16_t* v, int64_t v_rs, int64_t v_cs,
                                         const float* bias, int64_t b_rs, int64_t b_cs, bool causal, int64_t shift,
                                         float* out, int64_t L, int64_t S, int64_t E, int64_t Ev, float scale,
                                         int64_t block, lm_attention_windows& windows);
#endif
template <class Q, class K, class V>
inline bool lm_attention_head(const typename Q::TA* q, int64_t q_rs, int64_t q_cs, const typename K::TA* k,
                              int64_t k_rs, int64_t k_cs, const typename V::TA* v, int64_t v_rs, int64_t v_cs,
                              const float* bias, int64_t b_rs, int64_t b_cs, bool causal, int64_t shift, float* out,
                              int64_t L, int64_t S, int64_t E, int64_t Ev, float scale, int64_t block,
                              lm_attention_windows& windows, bool bf16_probabilities) {
#if defined(__AVX512BF16__)
  // A bf16 prompt's attention whose output is bf16 on bf16 tiles (lm_attention_head_bf16_tiles,
  // AttentionSpec::bf16_probabilities); a few query rows (decode) below.
  if constexpr (lm_is_same<Q, lm_bf16>::value && lm_is_same<K, lm_bf16>::value && lm_is_same<V, lm_bf16>::value)
    if (bf16_probabilities && L >= 4)
      return lm_attention_head_bf16_tiles(q, q_rs, q_cs, k, k_rs, k_cs, v, v_rs, v_cs, bias, b_rs, b_cs, causal, shift,
                                          out, L, S, E, Ev, scale, block, windows);
#endif
  // Rows padded to whole 6-row tiles; the padding rows of q and of the scores are zeros.
  const int64_t rows = ((block < L ? block : L) + 5) / 6 * 6;
  if (!windows.find(bias, b_rs, b_cs, L, S, rows, causal, shift)) return false;
  const int64_t lo = windows.lo, hi = windows.hi;
  if (lo >= hi) {
    for (int64_t i = 0; i < L * Ev; ++i) out[i] = 0.0f;
    return true;
  }
  const int64_t n = hi - lo;
  if (L < 4) {
    float* scores = (float*)__builtin_malloc(sizeof(float) * n);
    if (scores == nullptr) return false;
    for (int64_t r = 0; r < L; ++r) {
      const typename Q::TA* qr = q + r * q_rs;
      for (int64_t j = 0; j < n; ++j) {
        const typename K::TA* kj = k + (lo + j) * k_rs;
        float dot = 0.0f;
        if (q_cs == 1 && k_cs == 1) {
#pragma omp simd reduction(+ : dot)
          for (int64_t e = 0; e < E; ++e) dot += Q::load1(qr + e) * K::load1(kj + e);
        } else {
          for (int64_t e = 0; e < E; ++e) dot += Q::load1(qr + e * q_cs) * K::load1(kj + e * k_cs);
        }
        scores[j] = dot;
      }
      float sum;
      lm_attention_softmax(scores, n, 1, n, causal ? r + shift + 1 - lo : n,
                           bias ? bias + r * b_rs + lo * b_cs : nullptr, 0, b_cs, scale, &sum);
      float* o = out + r * Ev;
      for (int64_t c = 0; c < Ev; ++c) o[c] = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        const float p = scores[j];
        const typename V::TA* vj = v + (lo + j) * v_rs;
        if (v_cs == 1) {
#pragma omp simd
          for (int64_t c = 0; c < Ev; ++c) o[c] += p * V::load1(vj + c);
        } else {
          for (int64_t c = 0; c < Ev; ++c) o[c] += p * V::load1(vj + c * v_cs);
        }
      }
      for (int64_t c = 0; c < Ev; ++c) o[c] /= sum;
    }
    __builtin_free(scores);
    return true;
  }
  // kᵀ [E, n16] and v [n, ev16] as 16-column strips (see lm_panel_product), zero-padded. A
  // block's window of key columns starts at a multiple of 16, so that it starts a strip.
  const int64_t n16 = (n + 15) / 16 * 16, ev16 = (Ev + 15) / 16 * 16;
  float* scratch =
      (float*)__builtin_malloc(sizeof(float) * (E * n16 + n * ev16 + rows * E + rows * n16 + rows * ev16 + rows));
  if (scratch == nullptr) return false;
  float* kp = scratch;
  float* vp = kp + E * n16;
  float* qp = vp + n * ev16;
  float* sc = qp + rows * E;
  float* op = sc + rows * n16;
  float* sums = op + rows * ev16;  // each row's sum of exps
  lm_pack_key_strips<K>(k + lo * k_rs, k_rs, k_cs, n, E, kp);
  lm_pack_value_strips<V>(v + lo * v_rs, v_rs, v_cs, n, Ev, vp);
  for (int64_t r0 = 0, i = 0; r0 < L; r0 += rows, ++i) {
    const int64_t count = L - r0 < rows ? L - r0 : rows;
    const float* b = bias ? bias + r0 * b_rs : nullptr;
    int64_t w0, bn;  // from a strip's first key
    if (!windows.block_keys(i, 16, out + r0 * Ev, count, Ev, w0, bn)) continue;
    const int64_t bn16 = (bn + 15) / 16 * 16;
    const int64_t count6 = (count + 5) / 6 * 6;
    for (int64_t r = 0; r < count6; ++r) {
      float* qr = qp + r * E;
      const typename Q::TA* src = q + (r0 + r) * q_rs;
      int64_t e = 0;
      if (r < count && q_cs == 1)
        for (; e + 8 <= E; e += 8) {
          const lm_f32x8 x = Q::load8(src + e);
          __builtin_memcpy(qr + e, &x, sizeof x);
        }
      for (; e < E; ++e) qr[e] = r < count ? Q::load1(src + e * q_cs) : 0.0f;
    }
    lm_panel_product(qp, E, kp + w0 * E, E * 16, E, sc, n16, count6, bn16);
    lm_attention_softmax(sc, n16, count, bn, causal ? r0 + shift + 1 - (lo + w0) : bn,
                         b ? b + (lo + w0) * b_cs : nullptr, b_rs, b_cs, scale, sums);
    for (int64_t i = count * n16; i < count6 * n16; ++i) sc[i] = 0.0f;
    lm_panel_product(sc, n16, vp + w0 * 16, n * 16, bn, op, ev16, count6, ev16);
    for (int64_t r = 0; r < count; ++r) {
      float* o = out + (r0 + r) * Ev;
      const float* p = op + r * ev16;
      const float sum = sums[r];
#pragma omp simd
      for (int64_t c = 0; c < Ev; ++c) o[c] = p[c] / sum;
    }
  }
  __builtin_free(scratch);
  return true;
}
// How far ahead a GEMV streaming its weight rows one after another prefetches. The hardware
// prefetchers alone kept too few lines in flight for a stream this dense in bytes per
// instruction: 4 KiB ahead took an int8 GEMV of a 134 MB weight from 12-15 to 24-33 GB/s and a
// bf16 one of 268 MB from 13-15 to 21-27 on two Emerald Rapids cores (f32 rows, four times the
// work per byte, stream at 29-34 without it); 2 KiB gained less, 8 KiB the same
// (docs/lessons.md, 2026-11-27).
constexpr int64_t lm_stream_prefetch_bytes = 4096;
// Element types with kSequentialRows read the R rows one after another, each through two
// accumulators, `a` re-read from L1 for each row. Interleaving four 1 KiB int8 rows sixteen bytes
// at a time streamed 13-14 GB/s on two AVX2 cores, one sequential stream 21-24; bf16 rows of 2 KiB
// gained as much (llama-membound-bf16 decode 13.6 -> 9.5-10.3 ms), f16 rows too (llama-membound-f16
// 14.3-15.9 -> 12.5-13.6 ms, 2026-11-28), f32 rows (4 KiB, a cache
// line per row per step) nothing (docs/lessons.md, 2026-11-26). bf16 activations times int8
// weights come here as lm_bf16_i8_rows (widened in registers with AVX-512, once per call by the
// emitter with AVX2); with batch dims they stay interleaved (lm_bf16_i8), since widening `a`
// eight at a time for every row costs more than the stream gains.
template <class E, int R>
inline void lm_gemv_rows_sequential(const typename E::TA* a, const typename E::TW* w, int64_t row_stride,
                                    int64_t depth, float* sums) {
  for (int r = 0; r < R; ++r) {
    const typename E::TW* row = w + r * row_stride;
    typename E::Acc even = {}, odd = {};
    int64_t k = 0;
    for (; k + 2 * E::kLanes <= depth; k += 2 * E::kLanes) {
      __builtin_prefetch((const char*)(row + k) + lm_stream_prefetch_bytes);
      E::madd(even, E::load_x(a + k), row + k);
      E::madd(odd, E::load_x(a + k + E::kLanes), row + k + E::kLanes);
    }
    if (k + E::kLanes <= depth) {
      E::madd(even, E::load_x(a + k), row + k);
      k += E::kLanes;
    }
    float t = lm_sum8(E::fold(even) + E::fold(odd));
    for (; k < depth; ++k) t += E::load1(a + k) * E::load1(row + k);
    sums[r] = t;
  }
}
// Two blocks of R rows at once, w0's and w1's, each row of one summed alongside the same row of
// the other in one loop: two streams from far apart in the weight (the halves of a thread's
// rows), each prefetched ahead. One stream per core streamed an int8 weight at 16-18 GB/s on two
// Emerald Rapids cores, two at 20-23 (docs/lessons.md, 2026-11-27). Each row's sums are the
// sequential kernel's, in the same order. The emitter calls it for E::kSequentialRows kinds only
// (it compiles for every kind).
template <class E, int R>
inline void lm_gemv_rows_pair(const typename E::TA* a, const typename E::TW* w0, const typename E::TW* w1,
                              int64_t row_stride, int64_t depth, float* sums0, float* sums1) {
  for (int r = 0; r < R; ++r) {
    const typename E::TW* row0 = w0 + r * row_stride;
    const typename E::TW* row1 = w1 + r * row_stride;
    typename E::Acc even0 = {}, odd0 = {}, even1 = {}, odd1 = {};
    int64_t k = 0;
    for (; k + 2 * E::kLanes <= depth; k += 2 * E::kLanes) {
      __builtin_prefetch((const char*)(row0 + k) + lm_stream_prefetch_bytes);
      __builtin_prefetch((const char*)(row1 + k) + lm_stream_prefetch_bytes);
      const typename E::X x0 = E::load_x(a + k), x1 = E::load_x(a + k + E::kLanes);
      E::madd(even0, x0, row0 + k);
      E::madd(odd0, x1, row0 + k + E::kLanes);
      E::madd(even1, x0, row1 + k);
      E::madd(odd1, x1, row1 + k + E::kLanes);
    }
    if (k + E::kLanes <= depth) {
      const typename E::X x = E::load_x(a + k);
      E::madd(even0, x, row0 + k);
      E::madd(even1, x, row1 + k);
      k += E::kLanes;
    }
    float t0 = lm_sum8(E::fold(even0) + E::fold(odd0)), t1 = lm_sum8(E::fold(even1) + E::fold(odd1));
    for (; k < depth; ++k) {
      t0 += E::load1(a + k) * E::load1(row0 + k);
      t1 += E::load1(a + k) * E::load1(row1 + k);
    }
    sums0[r] = t0;
    sums1[r] = t1;
  }
}
template <class E, int R>
inline void lm_gemv_rows(const typename E::TA* a, const typename E::TW* w, int64_t row_stride, int64_t depth,
                         float* sums) {
  if constexpr (E::kSequentialRows) {
    lm_gemv_rows_sequential<E, R>(a, w, row_stride, depth, sums);
    return;
  }
  typename E::Acc acc[R] = {};
  int64_t k = 0;
  for (; k + E::kLanes <= depth; k += E::kLanes) {
    const typename E::X x = E::load_x(a + k);
    for (int r = 0; r < R; ++r) {
      // The next block's rows: short row streams (2 KiB for a bf16 row of 1024) end before the
      // hardware prefetcher ramps up. Prefetches past the weight's end do not fault.
      __builtin_prefetch(w + (R + r) * row_stride + k);
      E::madd(acc[r], x, w + r * row_stride + k);
    }
  }
  for (int r = 0; r < R; ++r) {
    float t = lm_sum8(E::fold(acc[r]));
    for (int64_t j = k; j < depth; ++j) t += E::load1(a + j) * E::load1(w + r * row_stride + j);
    sums[r] = t;
  }
}
// Eight f32 or bf16 values as f32, or one (a grouped GEMV's activations and scales).
inline lm_f32x8 lm_load_f32x8(const float* p) {
  lm_f32x8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline lm_f32x8 lm_load_f32x8(const uint16_t* p) { return lm_bf16_i8::load_x(p); }
inline float lm_load_f32(const float* p) { return *p; }
inline float lm_load_f32(const uint16_t* p) { return lm_bf2f(*p); }
// An f32 GEMV with a few rows of `a` (a prompt's): sgemm would pack the whole weight first, a
// pass over it that dominates at a few rows. Instead `a`, small, is packed once per call,
// transposed into strips of 16 rows ([depth x 16] each, zero past its last row), and each block
// of R weight rows multiplies every strip with R x 16 sums in registers, one weight element
// broadcast per row and step (lm_tile_strips with the weight on the left), the weight read in place.
// The depth goes in chunks of 256 so that the block's piece of the weight stays in L1 across the
// strips. sums[r * count * 16 + m] = sum_k w[r * row_stride + k] * a[m][k] for the `rows` rows of
// `a`, count = (rows + 15) / 16 strips (lanes past the last row are unset).
// Blocks of 8 rows x 8 depth steps are transposed in registers and stored as half lines of the
// strip: a column at a time (16 stores 64 bytes apart per step) took 1.4 ns an element once a
// strip outgrew L1, 5-10% of a 32-token prefill (docs/lessons.md, 2026-11-26). A bf16 `a` is
// widened as it is read (lm_pack_bf16_strips where the CPU lacks AVX512-BF16).
template <class TA>
inline void lm_pack_strips(const TA* a, int64_t a_stride, int64_t rows, int64_t depth, float* strips) {
  for (int64_t s = 0; s < (rows + 15) / 16; ++s) {
    float* strip = strips + s * depth * 16;
    int64_t k = 0;
    for (; k + 8 <= depth; k += 8)
      for (int64_t half = 0; half < 2; ++half) {
        lm_f32x8 block[8];
        for (int j = 0; j < 8; ++j) {
          const int64_t m = s * 16 + half * 8 + j;
          block[j] = lm_f32x8{};
          if (m < rows) block[j] = lm_load_f32x8(a + m * a_stride + k);
        }
        lm_transpose8(block);
        for (int e = 0; e < 8; ++e) __builtin_memcpy(strip + (k + e) * 16 + half * 8, &block[e], sizeof block[e]);
      }
    for (; k < depth; ++k)
      for (int64_t j = 0; j < 16; ++j)
        strip[k * 16 + j] = s * 16 + j < rows ? lm_load_f32(a + (s * 16 + j) * a_stride + k) : 0.0f;
  }
}
// A block of R weight rows walks all of the strips: once they outgrow L2 (a long prompt: 1,024
// rows of depth 2,048 are 8 MiB), each block would read them from L3 again. So `blocks` blocks of
// R rows (a panel; the sums of block b from sums + b * R * count * 16) take the depth in chunks
// whose slice of the strips fits in L2 (256 KiB), each slice multiplied by every block of the
// panel before the next; one block takes chunks of 256. The depth's order is the same either way:
// so are the sums. On two Zen 5 cores, f32 Linears of Llama's shapes in panels: 512 x 8,192 x
// 2,048 took 53 ms against 99, 1,024 x 2,048 x 8,192 80 against 96, 64 x 8,192 x 2,048 4.9
// against 5.9; the others at 64-384 rows 0.74-1.05x their time.
inline int64_t lm_strip_panel_chunk(int64_t count) {
  const int64_t chunk = 4096 / count;  // count strips of 16 floats, 256 KiB
  return chunk < 32 ? 32 : chunk > 256 ? 256 : chunk;
}
// The blocks a panel takes, at most `most`: one where all the strips fit in half of L2 (512 KiB:
// a block's weight rows streamed once each; 128 x 1,024 Linears took 0.93-1.05x their time in
// panels, 32-row prompts level).
inline int64_t lm_strip_panel_blocks(int64_t count, int64_t depth, int64_t most) {
  return count * 16 * depth <= 131072 ? 1 : most;
}
template <int R>
inline void lm_gemv_strips(const float* strips, int64_t rows, const float* w, int64_t row_stride, int64_t depth,
                           float* sums, int64_t blocks = 1) {
  const int64_t count = (rows + 15) / 16, chunk = blocks == 1 ? 256 : lm_strip_panel_chunk(count);
  for (int64_t d = 0; d < depth || d == 0; d += chunk) {  // depth 0: the sums are zeros
    const int64_t n = depth - d < chunk ? depth - d : chunk;
    for (int64_t b = 0; b < blocks; ++b)
      lm_gemv_strip_run<R>(w + b * R * row_stride + d, row_stride, strips + d * 16, depth * 16, rows, n,
                           sums + b * R * count * 16, d > 0);
  }
}
// The strips read a block of R weight rows a chunk of each row at a time: R short streams a
// row apart, which the hardware prefetchers follow poorly. Row r's chunk from depth d prefetches
// the same chunk of row r of the next block (R rows on), a whole block ahead, so that the loads
// of a block's chunks find them in L2. Prefetching each row's next chunk instead left an
// 8 x 2048 x 8192 int4 or int8 product latency-bound: eight such weights (134 MB, past L3) took
// 1.25-1.35x as long on two Zen 4 cores, interleaved, with bf16 or f32 activations
// (docs/lessons.md, 2026-11-29). Row r of the next block's `count` weights from d, `bytes` each,
// row r's at w + r * row_stride weights.
inline void lm_prefetch_next_block_chunk(const void* w, int64_t row_stride, int64_t bytes, int r, int R, int64_t d,
                                         int64_t count) {
  const char* at = (const char*)w + ((r + R) * row_stride + d) * bytes;
  for (int64_t line = 0; line < count * bytes; line += 64) __builtin_prefetch(at + line, 0, 2);
}
// The same with int8 weight rows (Int8WeightOnlyConfig at a prompt's few rows): each chunk of the
// block's rows is widened to f32 once, into a block that stays in L1 for every strip, so the
// weight's bytes are read once and never copied to memory (a Cast then sgemm wrote and read four
// bytes per weight: 16 x 1024 x 32000 took 17 ms, this 7-9). An int8 value is exact in f32: the
// sums are the f32 kernel's on the widened weight. The next block's chunk is prefetched into L2
// while this one is multiplied (lm_prefetch_next_block_chunk), and AVX-512 widens sixteen at a
// time: before both, perf put 40% of the time in the widening, stalled on the weight's loads.
template <int R>
inline void lm_gemv_strips(const float* strips, int64_t rows, const signed char* w, int64_t row_stride,
                           int64_t depth, float* sums) {
  constexpr int64_t kChunk = 256;
  alignas(64) float wide[R * kChunk];
  for (int64_t d = 0; d < depth || d == 0; d += kChunk) {
    const int64_t chunk = depth - d < kChunk ? depth - d : kChunk;
    for (int r = 0; r < R; ++r) {
      const signed char* row = w + r * row_stride + d;
      lm_prefetch_next_block_chunk(w, row_stride, 1, r, R, d, kChunk);
      int64_t k = 0;
#if defined(__AVX512F__)
      for (; k + 16 <= chunk; k += 16) {
        const lm_f32x16 v = lm_widen_i8x16(row + k);
        __builtin_memcpy(wide + r * kChunk + k, &v, sizeof v);
      }
#endif
      for (; k + 8 <= chunk; k += 8) {
        const lm_f32x8 v = lm_widen_i8(row + k);
        __builtin_memcpy(wide + r * kChunk + k, &v, sizeof v);
      }
      for (; k < chunk; ++k) wide[r * kChunk + k] = row[k];
    }
    lm_gemv_strip_run<R>(wide, kChunk, strips + d * 16, depth * 16, rows, chunk, sums, d > 0);
  }
}
// Eight weights of a group with a bf16 scale: (q - zero) * scale in f32 (exact: a 9-bit integer
// times a bf16 scale), rounded to bf16 in integer lanes as the IR's bf16 Mul (and eager) rounds
// it, since that rounding moves a bf16 sum by far more than f32's. Exact for any scale.
inline lm_f32x8 lm_dequantize_bf16x8(const signed char* q, lm_f32x8 zero, lm_f32x8 scale) {
  const lm_u32x8 bits = (lm_u32x8)((lm_widen_i8(q) - zero) * scale);
  // The product of a finite scale, or a NaN one's widened bits (low half zero): no NaN case.
  return (lm_f32x8)((bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u);
}
// The same with weight rows quantized per group along K (IntxWeightOnlyConfig at a prompt's few
// rows): each chunk is dequantized once, (q - zero) * scale in f32 with the group's scale and
// zero point, the values torch's dequantization computes (bf16 scales: rounded to bf16, as
// lm_gemv_row_groups_bf16 rounds them), then multiplied as f32 rows are.
// Row r's group j has its scale at s[r * scale_row + j * scale_group] and its zero point at
// z[r * zero_row + j * zero_group] (z null: no zero points).
template <int R, class TS>
inline void lm_gemv_strips_grouped(const float* strips, int64_t rows, const signed char* w, int64_t row_stride,
                                   int64_t depth, int64_t group, const TS* s, int64_t scale_row,
                                   int64_t scale_group, const signed char* z, int64_t zero_row, int64_t zero_group,
                                   float* sums) {
  constexpr int64_t kChunk = 256;
  alignas(64) float wide[R * kChunk];
  for (int64_t d = 0; d < depth || d == 0; d += kChunk) {
    const int64_t chunk = depth - d < kChunk ? depth - d : kChunk;
    const int64_t first_group = d / group;
    for (int r = 0; r < R; ++r) {
      const signed char* row = w + r * row_stride + d;
      lm_prefetch_next_block_chunk(w, row_stride, 1, r, R, d, kChunk);  // and its first group's scale and zero point
      __builtin_prefetch(s + (r + R) * scale_row + first_group * scale_group, 0, 2);
      if (z != nullptr) __builtin_prefetch(z + (r + R) * zero_row + first_group * zero_group, 0, 2);
      float* out = wide + r * kChunk;
      // One run of the chunk per group it overlaps: its scale and zero point are constants. The
      // groups are counted from the chunk's first, not divided out per run: a division per group
      // of 32 made a 16-row int4 GEMV 1.33-1.41x the int8 one's time, counting 1.23-1.31x.
      for (int64_t k = 0, j = first_group; k < chunk; ++j) {
        const int64_t end = (j + 1) * group - d < chunk ? (j + 1) * group - d : chunk;
        const float scale = lm_load_f32(s + r * scale_row + j * scale_group);
        const float zero = z == nullptr ? 0.0f : (float)z[r * zero_row + j * zero_group];
        const lm_f32x8 scales = {scale, scale, scale, scale, scale, scale, scale, scale};
        const lm_f32x8 zeros = {zero, zero, zero, zero, zero, zero, zero, zero};
        if constexpr (sizeof(TS) == 2) {
          for (; k + 8 <= end; k += 8) {
            const lm_f32x8 v = lm_dequantize_bf16x8(row + k, zeros, scales);
            __builtin_memcpy(out + k, &v, sizeof v);
          }
          for (; k < end; ++k) out[k] = lm_rbf(((float)row[k] - zero) * scale);
          continue;
        }
#if defined(__AVX512F__)
        for (; k + 16 <= end; k += 16) {
          const lm_f32x16 v = (lm_widen_i8x16(row + k) - zero) * scale;
          __builtin_memcpy(out + k, &v, sizeof v);
        }
#endif
        for (; k + 8 <= end; k += 8) {
          const lm_f32x8 v = (lm_widen_i8(row + k) - zeros) * scales;
          __builtin_memcpy(out + k, &v, sizeof v);
        }
        for (; k < end; ++k) out[k] = ((float)row[k] - zero) * scale;
      }
    }
    lm_gemv_strip_run<R>(wide, kChunk, strips + d * 16, depth * 16, rows, chunk, sums, d > 0);
  }
}
// One row's table of `count` groups from group `first`, one group at a time (its groups' scales
// or zero points not adjacent, or a last partial table): each group's scale, zero point (0
// without) and -(zero * scale).
inline void lm_group_table_one_by_one(const uint16_t* scales, int64_t scale_group, const signed char* zeros,
                                      int64_t zero_group, int64_t first, int count, float* scale, float* zero,
                                      float* minus_zero_scale) {
  for (int j = 0; j < count; ++j) {
    scale[j] = lm_bf2f(scales[(first + j) * scale_group]);
    zero[j] = zeros == nullptr ? 0.0f : (float)zeros[(first + j) * zero_group];
    minus_zero_scale[j] = -(zero[j] * scale[j]);
  }
}
// Whether every one of `count` scales is below 2^102 in magnitude (false for NaN): the bound under
// which q * scale - zero * scale rounds once to the exact (q - zero) * scale (both products are
// exact below 2^110), and under which lm_dequantize_bf16x8_split's products do not overflow.
// Without branches: a short-circuit per scale held a fifth of the int4 strips' dequantizing fill
// in a perf profile of the 1B Llama's prefill (2026-11-29).
inline bool lm_scales_below_2p102(const float* scale, int count) {
  bool below = true;
  for (int j = 0; j < count; ++j) below &= __builtin_fabsf(scale[j]) < 0x1p102f;
  return below;
}
// lm_scales_below_2p102 of eight scales in vector lanes.
inline bool lm_scales8_below_2p102(lm_f32x8 scale) {
  lm_u32x8 large = (lm_u32x8)(((lm_u32x8)scale & 0x7fffffffu) >= 0x72800000u);  // 2^102 or more, inf, NaN
  large |= __builtin_shufflevector(large, large, 4, 5, 6, 7, 0, 1, 2, 3);
  large |= __builtin_shufflevector(large, large, 2, 3, 0, 1, 6, 7, 4, 5);
  large |= __builtin_shufflevector(large, large, 1, 0, 3, 2, 5, 4, 7, 6);
  return large[0] == 0;
}
// One row's table of eight groups from group `first` at once, their scales and zero points
// adjacent (torchao's [N, groups] layout). Returns lm_scales8_below_2p102 of the eight scales.
inline bool lm_group_table8(const uint16_t* scales, const signed char* zeros, int64_t first, float* scale, float* zero,
                            float* minus_zero_scale) {
  const lm_f32x8 sv = lm_bf16::load8(scales + first);
  const lm_f32x8 zv = zeros == nullptr ? lm_f32x8{} : lm_widen_i8(zeros + first);
  const lm_f32x8 mzs = -(zv * sv);
  __builtin_memcpy(scale, &sv, sizeof sv);
  __builtin_memcpy(zero, &zv, sizeof zv);
  __builtin_memcpy(minus_zero_scale, &mzs, sizeof mzs);
  return lm_scales8_below_2p102(sv);
}
// A GEMV with bf16 activations and an int8 or group-quantized weight (where the CPU has
// AVX512-BF16, also a bf16 one: GemvSpec::bf16_pairs) at a prompt's few rows
// (Kernel::gemv_strips): `a` packed by lm_pack_bf16_strips, multiplied by lm_gemv_bf16_strips or
// lm_gemv_bf16_strips_grouped. Where the CPU has AVX512-BF16 they multiply bf16 pairs with
// vdpbf16ps: each block of weight rows is dequantized a chunk at a time into bf16 (the values
// eager's dequantized weight holds: an int8 exactly, a group's (q - zero) * scale rounded as
// lm_dequantize_bf16x8 rounds it, denormal products aside, which become 0), and a step of a strip
// is one register of `a`'s bf16 pairs. Twice the products per instruction of the f32 strips, and
// the rounding is one vcvtne2ps2bf16 per 32 weights: an 8 x 2048 x 8192 int4 GEMV on two Zen 4
// cores took 4.1-4.7 ms through the f32 strips (docs/lessons.md, 2026-11-29). Elsewhere `a` is
// widened into f32 strips and the f32 kernels run, as before.
#if defined(__AVX512BF16__)
// `a`'s rows as bf16 pairs, strip s at (uint16_t*)strips + s * 16 * lm_bf16_strip_depth(depth):
// a strip of more than 8 rows holds 16 rows of one pair per step, register j's 32-bit lane t
// (a[t][2j], a[t][2j + 1]); a last strip of at most 8 rows holds 8 rows of two pairs per step,
// lanes 2t and 2t + 1 holding a[t][4j .. 4j + 3], so that 8 rows fill a register as 16 do. The
// depth is padded with zeros to a multiple of 4 (lm_bf16_step_depth), as is each weight chunk.
// Where the CPU has AMX-BF16 every strip holds 16 rows of pairs, its depth padded with zeros to a
// multiple of 32: a strip is then AMX's B operand as it is, a tile of 16 pairs of depth (1 KiB)
// at a time (lm_gemv_bf16_amx). The buffer holds count * 16 * (depth + 31) floats or more.
#if defined(__AMX_BF16__)
constexpr bool lm_bf16_quad_strips = false;
inline int64_t lm_bf16_strip_depth(int64_t depth) { return (depth + 31) / 32 * 32; }
#else
constexpr bool lm_bf16_quad_strips = true;
inline int64_t lm_bf16_strip_depth(int64_t depth) { return (depth + 3) / 4 * 4; }
#endif
inline int64_t lm_bf16_step_depth(int64_t depth) { return (depth + 3) / 4 * 4; }
typedef uint32_t lm_u32x16 __attribute__((vector_size(64)));
typedef unsigned long long lm_u64x8 __attribute__((vector_size(64)));
// r[i][e] -> r[e][i] for 16 x 16 32-bit values in registers: each stage exchanges bit b of the
// row index with bit b of the column index (b = 8, 4, 2, 1), two two-source shuffles per pair of
// rows.
inline void lm_transpose16_u32(lm_u32x16 r[16]) {
  for (int i = 0; i < 16; ++i)
    if ((i & 8) == 0) {
      const lm_u32x16 x = r[i], y = r[i + 8];
      r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
      r[i + 8] = __builtin_shufflevector(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    }
  for (int i = 0; i < 16; ++i)
    if ((i & 4) == 0) {
      const lm_u32x16 x = r[i], y = r[i + 4];
      r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
      r[i + 4] = __builtin_shufflevector(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    }
  for (int i = 0; i < 16; ++i)
    if ((i & 2) == 0) {
      const lm_u32x16 x = r[i], y = r[i + 2];
      r[i] = __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      r[i + 2] = __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  for (int i = 0; i < 16; i += 2) {
    const lm_u32x16 x = r[i], y = r[i + 1];
    r[i] = __builtin_shufflevector(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    r[i + 1] = __builtin_shufflevector(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  }
}
// The same for 8 x 8 64-bit values.
inline void lm_transpose8_u64(lm_u64x8 r[8]) {
  for (int i = 0; i < 4; ++i) {
    const lm_u64x8 x = r[i], y = r[i + 4];
    r[i] = __builtin_shufflevector(x, y, 0, 1, 2, 3, 8, 9, 10, 11);
    r[i + 4] = __builtin_shufflevector(x, y, 4, 5, 6, 7, 12, 13, 14, 15);
  }
  for (int i = 0; i < 8; ++i)
    if ((i & 2) == 0) {
      const lm_u64x8 x = r[i], y = r[i + 2];
      r[i] = __builtin_shufflevector(x, y, 0, 1, 8, 9, 4, 5, 12, 13);
      r[i + 2] = __builtin_shufflevector(x, y, 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int i = 0; i < 8; i += 2) {
    const lm_u64x8 x = r[i], y = r[i + 1];
    r[i] = __builtin_shufflevector(x, y, 0, 8, 2, 10, 4, 12, 6, 14);
    r[i + 1] = __builtin_shufflevector(x, y, 1, 9, 3, 11, 5, 13, 7, 15);
  }
}
// Each run of 32 values of the strip's rows is one transpose in registers (16 rows of pairs or 8
// of quads); one value or pair at a time, packing took longer than a 32 x 1024 x 1024 product's
// share of a thread (32 us per pack on a Zen 4 core, once per work chunk; 3.4 now). The rest of
// the depth goes as before.
inline void lm_pack_bf16_strips(const uint16_t* a, int64_t a_stride, int64_t rows, int64_t depth, float* packed) {
  uint16_t* strips = (uint16_t*)packed;
  const int64_t padded = lm_bf16_strip_depth(depth);
  for (int64_t s = 0; s < (rows + 15) / 16; ++s) {
    const int64_t first = s * 16, count = rows - first < 16 ? rows - first : 16;
    const int64_t width = count > 8 || !lm_bf16_quad_strips ? 2 : 4, lanes = 32 / width;  // a row's values per step; rows per register
    uint16_t* strip = strips + s * 16 * padded;
    int64_t run = 0;
    for (; run + 32 <= depth; run += 32) {
      lm_u32x16 r[16];
      for (int64_t t = 0; t < lanes; ++t)
        if (t < count)
          __builtin_memcpy(&r[t], a + (first + t) * a_stride + run, sizeof r[t]);
        else
          r[t] = lm_u32x16{};
      if (width == 2)
        lm_transpose16_u32(r);
      else
        lm_transpose8_u64((lm_u64x8*)r);
      __builtin_memcpy(strip + run * lanes, r, 32 * lanes * sizeof *strip);
    }
    for (int64_t t = 0; t < lanes; ++t)
      for (int64_t k = run; k < padded; k += width) {
        uint16_t* out = strip + k * lanes + t * width;
        const uint16_t* row = a + (first + t) * a_stride + k;
        if (t < count && k + width <= depth)
          __builtin_memcpy(out, row, width * sizeof *out);
        else
          for (int64_t e = 0; e < width; ++e) out[e] = t < count && k + e < depth ? row[e] : 0;
      }
  }
}
// P bf16 pairs (P = 1 or 2) broadcast to all sixteen 32-bit lanes.
template <int P>
inline lm_f32x16 lm_broadcast_bf16_pairs(const uint16_t* p) {
  if constexpr (P == 1) {
    uint32_t v;
    __builtin_memcpy(&v, p, sizeof v);
    return (lm_f32x16)(lm_u32x16{} + v);
  } else {
    unsigned long long v;
    __builtin_memcpy(&v, p, sizeof v);
    return (lm_f32x16)(lm_u64x8{} + v);
  }
}
// c[R x 16S] += w[R x 4 steps P / 2] (bf16, row stride ldw) x S strips of P pairs per step: R x S
// accumulators of sixteen lanes, one broadcast of a row's P pairs per row and step. With P = 2,
// row t's sum is lanes 2t and 2t + 1 and c gets eight columns. Unless `next` is null, the same
// span of the R rows from `next` is prefetched into L2 a cache line of each row at a time, as the
// steps reach it (see lm_gemv_bf16_strips_chunks).
template <int R, int S, int P>
inline void lm_tile_bf16_strips(const uint16_t* w, int64_t ldw, const uint16_t* b, int64_t strip_stride, int64_t steps,
                                float* c, int64_t ldc, bool accumulate, const uint16_t* next) {
  lm_f32x16 acc[R][S] = {};
  for (int64_t j = 0; j < steps; ++j) {
    if (next != nullptr && j % (16 / P) == 0)
      for (int r = 0; r < R; ++r) __builtin_prefetch(next + r * ldw + j * 2 * P, 0, 2);
    lm_f32x16 x[S];
    for (int s = 0; s < S; ++s) __builtin_memcpy(&x[s], b + s * strip_stride + j * 32, sizeof x[s]);
    for (int r = 0; r < R; ++r) {
      const lm_f32x16 y = lm_broadcast_bf16_pairs<P>(w + r * ldw + j * 2 * P);
      for (int s = 0; s < S; ++s) acc[r][s] = lm_dot_bf16_pairs(acc[r][s], x[s], y);
    }
  }
  // A vector per accumulator: element by element, this took a tenth of a 32 x 1024 x 2816
  // product on a Zen 4 core (the depth goes in chunks, each ending here).
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) {
      float* out = c + r * ldc + s * 16;
      if constexpr (P == 1) {
        lm_f32x16 sum = acc[r][s];
        if (accumulate) {
          lm_f32x16 before;
          __builtin_memcpy(&before, out, sizeof before);
          sum = before + sum;
        }
        __builtin_memcpy(out, &sum, sizeof sum);
      } else {
        const lm_f32x16 v = acc[r][s];
        lm_f32x8 sum = __builtin_shufflevector(v, v, 0, 2, 4, 6, 8, 10, 12, 14) +
                       __builtin_shufflevector(v, v, 1, 3, 5, 7, 9, 11, 13, 15);
        if (accumulate) sum = lm_f32::load8(out) + sum;
        __builtin_memcpy(out, &sum, sizeof sum);
      }
    }
}
// sums as lm_gemv_strips lays them out, for R weight rows whose bf16 chunk of n values from depth
// d (n at most lm_bf16_chunk) weights(d, n, wide, ldw, next) gives: a pointer to row 0's, row r's
// at r * ldw, zeros after the n up to a multiple of 4 (its own rows in place, or `wide`, R rows of
// lm_bf16_chunk, where it wrote them; ldw comes in as lm_bf16_chunk). Where it sets `next` (null
// when it comes in), the chunk's first tile prefetches the same chunk of the R rows from there as
// it goes: the next block's, which a bulk prefetch of every line at the chunk's start left
// latency-bound when the weight streams from memory (32 x 768 x 30522, an LM head: 8% slower on
// a Zen 4 core).
constexpr int64_t lm_bf16_chunk = 256;
#if defined(__AMX_BF16__)
// A prompt's bf16 Linear on AMX tiles (GemvSpec::amx_tiles): 32 weight rows of the [N, K] weight
// at a time are two A tiles read in place (16 rows of 32 values, a row stride apart), each strip
// of `a` (16 rows, lm_pack_bf16_strips) is a B tile as packed, and the four 16 x 16 f32 sums
// tiles are C^T: weight row by prompt row, the layout lm_gemv_strips gives `sums`, stored as they
// are. The products are exact and summed in f32, denormal inputs and results taken as zero, as
// vdpbf16ps (and oneDNN's AMX GEMM, eager's here) do. A last depth of less than 32 comes from a
// zero-padded copy of the rows' tails (the strips are zero there). The tile instructions as
// inline assembly, as the bf16 pairs' (<immintrin.h> would slow every kernel build).
struct alignas(64) lm_amx_config {
  unsigned char palette, start_row, reserved[14];
  unsigned short bytes_per_row[16];
  unsigned char rows[16];
};
// Eight tiles of 16 rows of 64 bytes: tmm0-1 the weight's, tmm2-3 the strips', tmm4-7 the sums
// (tmm4 + 2i + j: weight tile i by strip j). The configuration is the thread's, and oneDNN may
// load its own on the same thread between two calls: each call loads this one and releases the
// tiles when it is done.
inline void lm_amx_begin() {
  lm_amx_config config = {};
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.bytes_per_row[t] = 64;
    config.rows[t] = 16;
  }
  asm volatile("ldtilecfg %0" : : "m"(config));
}
inline void lm_amx_end() { asm volatile("tilerelease" ::: "memory"); }
#define LM_TILE_LOAD(tile, base, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #tile : : "r"((const void*)(base)), "r"((int64_t)(stride)) : "memory")
#define LM_TILE_STORE(tile, base, stride) \
  asm volatile("tilestored %%tmm" #tile ", (%0,%1,1)" : : "r"((void*)(base)), "r"((int64_t)(stride)) : "memory")
#define LM_TILE_ZERO(tile) asm volatile("tilezero %%tmm" #tile ::)
// C += A B for A 16 rows x 32 bf16 (16 pairs), B 16 pairs x 16 columns: tdpbf16ps dst, a, b.
#define LM_TILE_DOT(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
// The sums tiles tmm4 + 2i + j (weight or row tile i, column tile j; j = 1 only if Two) zeroed,
// and stored to c: tile (i, j) at c + i * row_next + j * col_next floats, its rows `stride` bytes
// apart.
template <bool Two>
inline void lm_amx_zero_sums() {
  LM_TILE_ZERO(4);
  LM_TILE_ZERO(6);
  if constexpr (Two) {
    LM_TILE_ZERO(5);
    LM_TILE_ZERO(7);
  }
}
template <bool Two>
inline void lm_amx_store_sums(float* c, int64_t row_next, int64_t col_next, int64_t stride) {
  LM_TILE_STORE(4, c, stride);
  LM_TILE_STORE(6, c + row_next, stride);
  if constexpr (Two) {
    LM_TILE_STORE(5, c + col_next, stride);
    LM_TILE_STORE(7, c + row_next + col_next, stride);
  }
}
// The sums of 32 weight rows (w, stride ldw values; `tail` holds their last depth % 32 values,
// padded, 32 a row) with strip s and, if Two, strip s + 1.
template <bool Two>
inline void lm_amx_block(const uint16_t* w, int64_t ldw, const uint16_t* tail, const uint16_t* strip,
                         int64_t strip_stride, int64_t depth, float* sums, int64_t ldc) {
  lm_amx_zero_sums<Two>();
  const int64_t whole = depth / 32 * 32;
  auto step = [&](const uint16_t* rows, int64_t stride_bytes, int64_t k) {
    LM_TILE_LOAD(0, rows, stride_bytes);
    LM_TILE_LOAD(1, rows + 16 * (stride_bytes / 2), stride_bytes);
    LM_TILE_LOAD(2, strip + k * 16, 64);
    LM_TILE_DOT(4, 0, 2);
    LM_TILE_DOT(6, 1, 2);
    if constexpr (Two) {
      LM_TILE_LOAD(3, strip + strip_stride + k * 16, 64);
      LM_TILE_DOT(5, 0, 3);
      LM_TILE_DOT(7, 1, 3);
    }
  };
  for (int64_t k = 0; k < whole; k += 32) step(w + k, ldw * 2, k);
  if (whole < depth) step(tail, 64, whole);
  lm_amx_store_sums<Two>(sums, 16 * ldc, 16, ldc * 4);
}
template <int R>
inline void lm_gemv_bf16_amx(const float* packed, int64_t rows, const uint16_t* w, int64_t row_stride,
                             int64_t depth, float* sums) {
  static_assert(R == 32, "AMX blocks are two tiles of 16 weight rows");
  const uint16_t* strips = (const uint16_t*)packed;
  const int64_t strip_stride = 16 * lm_bf16_strip_depth(depth), count = (rows + 15) / 16, ldc = count * 16;
  const int64_t whole = depth / 32 * 32;
  alignas(64) uint16_t tail[32 * 32];
  if (whole < depth)
    for (int r = 0; r < 32; ++r)
      for (int64_t k = 0; k < 32; ++k) tail[r * 32 + k] = whole + k < depth ? w[r * row_stride + whole + k] : 0;
  lm_amx_begin();
  int64_t s = 0;
  for (; s + 2 <= count; s += 2)
    lm_amx_block<true>(w, row_stride, tail, strips + s * strip_stride, strip_stride, depth, sums + s * 16, ldc);
  if (s < count) lm_amx_block<false>(w, row_stride, tail, strips + s * strip_stride, strip_stride, depth, sums + s * 16, ldc);
  lm_amx_end();
}
// The same for 32 weight rows that weights(d, n, wide, ldw, next) gives a chunk of at a time
// as bf16 (lm_gemv_bf16_strips_chunks' contract; a quantized weight dequantized into `wide`,
// zero-padded to a multiple of 32): each chunk's sums tiles start from the sums so far, as the
// chunk loop of the bf16 pairs does, a tile load and store of 1 KiB per 8 steps of depth.
template <class Weights>
inline void lm_amx_chunks(const float* packed, int64_t rows, int64_t depth, float* sums, Weights weights) {
  alignas(64) uint16_t wide[32 * lm_bf16_chunk];
  const uint16_t* strips = (const uint16_t*)packed;
  const int64_t strip_stride = 16 * lm_bf16_strip_depth(depth), count = (rows + 15) / 16, ldc = count * 16;
  lm_amx_begin();
  for (int64_t d = 0; d < depth || d == 0; d += lm_bf16_chunk) {  // depth 0: the sums are zeros
    const int64_t chunk = depth - d < lm_bf16_chunk ? depth - d : lm_bf16_chunk;
    int64_t ldw = lm_bf16_chunk;
    const uint16_t* next = nullptr;
    const uint16_t* w = weights(d, chunk, wide, ldw, next);
    for (int64_t s = 0; s < count; s += 2) {
      const bool two = s + 1 < count;
      float* c = sums + s * 16;
      if (d == 0) {
        lm_amx_zero_sums<true>();
      } else {
        LM_TILE_LOAD(4, c, ldc * 4);
        LM_TILE_LOAD(6, c + 16 * ldc, ldc * 4);
        if (two) {
          LM_TILE_LOAD(5, c + 16, ldc * 4);
          LM_TILE_LOAD(7, c + 16 * ldc + 16, ldc * 4);
        }
      }
      const uint16_t* strip = strips + s * strip_stride + d * 16;
      for (int64_t k = 0; k < chunk; k += 32) {
        LM_TILE_LOAD(0, w + k, ldw * 2);
        LM_TILE_LOAD(1, w + 16 * ldw + k, ldw * 2);
        LM_TILE_LOAD(2, strip + k * 16, 64);
        LM_TILE_DOT(4, 0, 2);
        LM_TILE_DOT(6, 1, 2);
        if (two) {
          LM_TILE_LOAD(3, strip + strip_stride + k * 16, 64);
          LM_TILE_DOT(5, 0, 3);
          LM_TILE_DOT(7, 1, 3);
        }
      }
      if (two)
        lm_amx_store_sums<true>(c, 16 * ldc, 16, ldc * 4);
      else
        lm_amx_store_sums<false>(c, 16 * ldc, 16, ldc * 4);
    }
  }
  lm_amx_end();
}
#endif
// lm_softmax_expf on sixteen lanes, the same values: the clamp a vmaxps whose NaN operand wins, n
// from vrndscaleps (rint), and 2^n applied by vscalefps, zeroing the lanes below ln(FLT_MIN) in
// the same instruction: 15 operations where the scalar form's loop, vectorised by GCC, took 24
// (and on 256-bit vectors, GCC's choice on Intel's tuning). As inline assembly, which GCC and
// clang both take (their builtins for these differ).
inline lm_f32x16 lm_softmax_exp16(lm_f32x16 x) {
  const lm_f32x16 lowest = lm_splat16(-87.33654f);
  unsigned short attended;  // x not less than ln(FLT_MIN), or NaN
  asm("vcmpps $5, %2, %1, %0" : "=Yk"(attended) : "v"(x), "v"(lowest));
  lm_f32x16 y, n;
  asm("vmaxps %1, %2, %0" : "=v"(y) : "v"(x), "v"(lowest));  // NaN stays NaN
  asm("vrndscaleps $0, %1, %0" : "=v"(n) : "v"(y * 1.44269504088896341f));  // to nearest
  const lm_f32x16 er = lm_exp_reduced_lanes(y, n);
  lm_f32x16 e;
  asm("vscalefps %2, %1, %0%{%3%}%{z%}" : "=v"(e) : "v"(er), "v"(n), "Yk"(attended));
  return e;
}
// lm_attention_softmax for the bf16 tiles' path (lm_attention_head_bf16_tiles), on its
// tile-major blocks: row r's scores for keys [16 jb, 16 jb + 16) at
// scores + ((r / 16) * (n32 / 16) + jb) * 256 + (r % 16) * 16 (the C tiles of Q Kᵀ as stored), its
// probabilities rounded to bf16 for keys [32 kc, 32 kc + 32) at
// probs + ((r / 16) * (n32 / 32) + kc) * 512 + (r % 16) * 32 (the A tiles of P V), zero from key n
// to n32 (a multiple of 32). The sums are of the f32 values, as eager's flash attention sums them.
// Row r attends only keys below diagonal_end + r (a causal mask): past them its probabilities
// are 0 and its scores are not read (the caller may leave whole 32-key chunks of them unset).
inline void lm_attention_probs_bf16(float* scores, int64_t rows, int64_t all_n, int64_t n32, int64_t diagonal_end,
                                    const float* bias, int64_t b_rs, int64_t b_cs, float scale, float* sums,
                                    uint16_t* probs) {
  const lm_f32x16 iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  for (int64_t r = 0; r < rows; ++r) {
    float* s = scores + r / 16 * (n32 / 16) * 256 + r % 16 * 16;  // keys j at s + j / 16 * 256 + j % 16
    const float* b = bias ? bias + r * b_rs : nullptr;
    uint16_t* p = probs + r / 16 * (n32 / 32) * 512 + r % 16 * 32;  // keys j at p + j / 32 * 512 + j % 32
    const int64_t n = lm_imin(lm_imax(diagonal_end + r, 0), all_n);
    const int64_t row_n32 = (n + 31) / 32 * 32;
    for (int64_t j = row_n32; j < n32; j += 32) __builtin_memset(p + j / 32 * 512, 0, 64);
    auto at = [&](int64_t j) -> float& { return s[j / 16 * 256 + j % 16]; };
    // The scaled, biased scores: in place where the bias is not contiguous (rare), so that the
    // second pass reads them as it reads the others.
    const bool vector_bias = b == nullptr || b_cs == 1;
    auto scores16 = [&](int64_t j) {  // j a multiple of 16
      lm_f32x16 x;
      __builtin_memcpy(&x, s + j / 16 * 256, sizeof x);
      if (!vector_bias) return x;
      x = x * scale;
      if (b) {
        lm_f32x16 y = {};
        if (j + 16 <= n)
          __builtin_memcpy(&y, b + j, sizeof y);
        else
          for (int64_t i = j; i < n; ++i) y[i - j] = b[i];
        x = x + y;
      }
      return x;
    };
    auto score = [&](int64_t j) { return vector_bias ? (b ? at(j) * scale + b[j] : at(j) * scale) : at(j); };
    if (!vector_bias)
      for (int64_t j = 0; j < n; ++j) at(j) = at(j) * scale + b[j * b_cs];
    // The max skips NaN, as lm_attention_softmax's does.
    lm_f32x16 mv = lm_splat16(-__builtin_inff());
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      const lm_f32x16 x = scores16(j);
      mv = x > mv ? x : mv;
    }
    float m = -__builtin_inff();
    for (int i = 0; i < 16; ++i) m = mv[i] > m ? mv[i] : m;
    for (; j < n; ++j) {
      const float x = score(j);
      m = x > m ? x : m;
    }
    if (m == -__builtin_inff())
      for (j = 0; j < n; ++j) {
        const float x = score(j);
        if (x != x) m = x;
      }
    if (m == -__builtin_inff()) {
      for (j = 0; j < row_n32; j += 32) __builtin_memset(p + j / 32 * 512, 0, 64);
      sums[r] = 1.0f;
      continue;
    }
    const lm_f32x16 mm = lm_splat16(m);
    lm_f32x16 sum = {};
    for (j = 0; j < row_n32; j += 32) {
      // (Past n the scores are zero-padded keys' or keys outside the window, and the bias is
      // not read: their values are replaced by 0 below.)
      lm_f32x16 e0 = lm_softmax_exp16(scores16(j) - mm), e1 = lm_softmax_exp16(scores16(j + 16) - mm);
      if (j + 32 > n) {  // keys from n on: 0
        const lm_f32x16 left = lm_splat16((float)(n - j));
        e0 = iota < left ? e0 : lm_f32x16{};
        e1 = iota + 16.0f < left ? e1 : lm_f32x16{};
      }
      sum += e0 + e1;
      const lm_f32x16 pairs = lm_round_bf16_pairs(e0, e1);
      __builtin_memcpy(p + j / 32 * 512, &pairs, sizeof pairs);
    }
    float total = 0.0f;
    for (int i = 0; i < 16; ++i) total += sum[i];
    sums[r] = total;
  }
}
// Keys [0, n) of k as B tiles of Q Kᵀ, zero past n keys and E dims: the tile of keys
// [16 jb, 16 jb + 16) and dims [32 ec, 32 ec + 32) at kb + (jb * chunks + ec) * 512, its row r
// the pairs (dims 32 ec + 2r, + 1) of the sixteen keys.
inline void lm_pack_key_tiles(const uint16_t* k, int64_t k_rs, int64_t k_cs, int64_t n, int64_t E, int64_t chunks,
                              int64_t key_blocks, uint16_t* kb) {
  for (int64_t jb = 0; jb < key_blocks; ++jb)
    for (int64_t ec = 0; ec < chunks; ++ec) {
      lm_u32x16 rows[16];
      for (int j = 0; j < 16; ++j) {
        const int64_t key = jb * 16 + j, e0 = ec * 32;
        if (key < n && k_cs == 1 && e0 + 32 <= E) {
          __builtin_memcpy(&rows[j], k + key * k_rs + e0, sizeof rows[j]);
        } else {
          alignas(64) uint16_t pairs[32];
          for (int e = 0; e < 32; ++e) pairs[e] = key < n && e0 + e < E ? k[key * k_rs + (e0 + e) * k_cs] : 0;
          __builtin_memcpy(&rows[j], pairs, sizeof rows[j]);
        }
      }
      lm_transpose16_u32(rows);
      uint16_t* tile = kb + (jb * chunks + ec) * 512;
      for (int r = 0; r < 16; ++r) __builtin_memcpy(tile + r * 32, &rows[r], sizeof rows[r]);
    }
}
// Keys [0, n) of v as B tiles of P V, zero past n keys and Ev columns: the tile of keys
// [32 kc, 32 kc + 32) and columns [16 cb, 16 cb + 16) at vb + (kc * col_blocks + cb) * 512, its
// row r the pairs (key 32 kc + 2r, + 1) of each column.
inline void lm_pack_value_tiles(const uint16_t* v, int64_t v_rs, int64_t v_cs, int64_t n, int64_t Ev,
                                int64_t key_chunks, int64_t col_blocks, uint16_t* vb) {
  typedef unsigned short lm_w32 __attribute__((vector_size(64)));
  for (int64_t kc = 0; kc < key_chunks; ++kc)
    for (int64_t cb = 0; cb < col_blocks; ++cb) {
      uint16_t* tile = vb + (kc * col_blocks + cb) * 512;
      const int64_t c0 = cb * 16;
      for (int r = 0; r < 16; ++r) {
        const int64_t j0 = kc * 32 + 2 * r;
        alignas(64) uint16_t two[32];  // key j0's 16 columns, then key j0 + 1's
        for (int i = 0; i < 2; ++i) {
          const int64_t key = j0 + i;
          if (key < n && v_cs == 1 && c0 + 16 <= Ev)
            __builtin_memcpy(two + 16 * i, v + key * v_rs + c0, 32);
          else
            for (int c = 0; c < 16; ++c) two[16 * i + c] = key < n && c0 + c < Ev ? v[key * v_rs + (c0 + c) * v_cs] : 0;
        }
        lm_w32 x;
        __builtin_memcpy(&x, two, sizeof x);
        const lm_w32 pairs = __builtin_shufflevector(x, x, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8,
                                                     24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        __builtin_memcpy(tile + r * 32, &pairs, sizeof pairs);
      }
    }
}
// Two row tiles by one or (Two) two column tiles of 16 x 16 f32 sums (c tile (i, j) at
// c + i * c_row + j * 256), each the sum over `steps` of A tiles (a + i * a_row + t * a_step)
// times B tiles (b + j * b_next + t * b_step): an A tile is 16 rows of 16 bf16 pairs, a B tile
// 16 pairs of rows by 16 columns, every tile 1 KiB in one run (16 rows of 64 bytes), so that
// each tile load streams lines the prefetchers follow. (A tiles read as rows of a 2 KiB-stride
// matrix ran P V at a seventh of the AMX tiles' rate.)
#if defined(__AMX_BF16__)
template <bool Two>
inline void lm_tile_product(const uint16_t* a, int64_t a_row, int64_t a_step, const uint16_t* b, int64_t b_next,
                            int64_t b_step, int64_t steps, float* c, int64_t c_row) {
  lm_amx_zero_sums<Two>();
  for (int64_t t = 0; t < steps; ++t) {
    LM_TILE_LOAD(0, a + t * a_step, 64);
    LM_TILE_LOAD(1, a + a_row + t * a_step, 64);
    LM_TILE_LOAD(2, b + t * b_step, 64);
    LM_TILE_DOT(4, 0, 2);
    LM_TILE_DOT(6, 1, 2);
    if constexpr (Two) {
      LM_TILE_LOAD(3, b + b_next + t * b_step, 64);
      LM_TILE_DOT(5, 0, 3);
      LM_TILE_DOT(7, 1, 3);
    }
  }
  lm_amx_store_sums<Two>(c, c_row, 256, 64);
}
#else
// Without AMX the same products on vdpbf16ps, in register tiles of 8 rows by the column tiles'
// 16 or 32 columns (16 accumulators where Two): each step a B tile's row of pairs is one load per
// column tile and each row's pair one broadcast, the A and B tiles read from L1 or L2 once per
// 8 rows. The sums are the same exact bf16 products added in f32 as on AMX tiles, in another
// order.
template <bool Two>
inline void lm_tile_product(const uint16_t* a, int64_t a_row, int64_t a_step, const uint16_t* b, int64_t b_next,
                            int64_t b_step, int64_t steps, float* c, int64_t c_row) {
  constexpr int S = Two ? 2 : 1;
  for (int h = 0; h < 4; ++h) {  // rows [8h, 8h + 8) of the two row tiles' 32
    const uint16_t* rows = a + h / 2 * a_row + h % 2 * 8 * 32;
    lm_f32x16 acc[8][S] = {};
    for (int64_t t = 0; t < steps; ++t) {
      const uint16_t* at = rows + t * a_step;
      const uint16_t* bt = b + t * b_step;
      for (int p = 0; p < 16; ++p) {
        lm_f32x16 x[S];
        for (int j = 0; j < S; ++j) __builtin_memcpy(&x[j], bt + j * b_next + p * 32, sizeof x[j]);
        for (int r = 0; r < 8; ++r) {
          const lm_f32x16 y = lm_broadcast_bf16_pairs<1>(at + r * 32 + 2 * p);
          for (int j = 0; j < S; ++j) acc[r][j] = lm_dot_bf16_pairs(acc[r][j], x[j], y);
        }
      }
    }
    float* out = c + h / 2 * c_row + h % 2 * 8 * 16;
    for (int r = 0; r < 8; ++r)
      for (int j = 0; j < S; ++j) __builtin_memcpy(out + j * 256 + r * 16, &acc[r][j], sizeof acc[r][j]);
  }
}
#endif
// A bf16 attention head of at least four query rows whose output is bf16 (lm_attention_head,
// AttentionSpec::bf16_probabilities) on bf16 tiles (lm_tile_product: AMX tiles, or vdpbf16ps
// where the CPU has AVX512-BF16 and no AMX), as eager's flash attention computes it: the
// scores Q Kᵀ as exact bf16 products summed in f32, the softmax in f32 (lm_attention_probs_bf16),
// the probabilities rounded to bf16 for P V (summed in f32), each output row divided by its f32 sum.
// Denormal inputs and results of the products are taken as zero (as oneDNN's bf16 products
// are). Query rows go in blocks of a multiple of 32 (two A tiles); keys, head dims and value
// columns are zero-padded to whole tiles, so any E and Ev work. Per head: K packed once as the B
// tiles of Q Kᵀ (16 keys by 16 pairs of head dims, each tile a 16 x 16 transpose of 32-bit pairs,
// lm_transpose16_u32), V as those of P V (16 pairs of keys by 16 columns); each block's Q and its
// bf16 probabilities are zero-padded tile-major copies. Causal and banded masks skip key chunks
// as the f32 path does (lm_attention_windows), in chunks of 32 keys.
// A 1,024-token, 32-head, head-dim-128 bf16 attention on two Xeon cores: 18.0 ms against
// inductor's 16.9 in one kernel-bench run, where computing it in f32 took about 70 (a run earlier
// the same day); the softmax's exps are now the largest part (docs/lessons.md, 2026-12-02
// afternoon).
inline bool lm_attention_head_bf16_tiles(const uint16_t* q, int64_t q_rs, int64_t q_cs, const uint16_t* k,
                                         int64_t k_rs, int64_t k_cs, const uint16_t* v, int64_t v_rs, int64_t v_cs,
                                         const float* bias, int64_t b_rs, int64_t b_cs, bool causal, int64_t shift,
                                         float* out, int64_t L, int64_t S, int64_t E, int64_t Ev, float scale,
                                         int64_t block, lm_attention_windows& windows) {
  const int64_t rows = ((block < L ? block : L) + 31) / 32 * 32;
  if (!windows.find(bias, b_rs, b_cs, L, S, rows, causal, shift)) return false;
  const int64_t lo = windows.lo, hi = windows.hi;
  if (lo >= hi) {
    for (int64_t i = 0; i < L * Ev; ++i) out[i] = 0.0f;
    return true;
  }
  const int64_t n = hi - lo, n32 = (n + 31) / 32 * 32;
  const int64_t e32 = (E + 31) / 32 * 32, chunks = e32 / 32;
  const int64_t ev16 = (Ev + 15) / 16 * 16, col_blocks = ev16 / 16;
  const int64_t bytes = 2 * (n32 * e32 + n32 * ev16 + rows * e32 + rows * n32) + 4 * (rows * n32 + rows * ev16 + rows);
  // Every tile 64-byte aligned: a tile whose rows straddle cache lines loaded at a third of the
  // rate (P V took 71 cycles a tile product instead of 24 with its operands in L1). (+ 64 * 8:
  // the alignment and each piece's rounding to 64 bytes.)
  char* const base = (char*)__builtin_malloc(bytes + 64 * 8);
  if (base == nullptr) return false;
  char* scratch = (char*)(((uintptr_t)base + 63) & ~(uintptr_t)63);
  auto take = [&](int64_t size) {
    char* p = scratch;
    scratch += (size + 63) / 64 * 64;
    return p;
  };
  uint16_t* kb = (uint16_t*)take(2 * n32 * e32);
  uint16_t* vb = (uint16_t*)take(2 * n32 * ev16);
  uint16_t* qb = (uint16_t*)take(2 * rows * e32);
  uint16_t* pb = (uint16_t*)take(2 * rows * n32);
  float* sc = (float*)take(4 * rows * n32);
  float* op = (float*)take(4 * rows * ev16);
  float* sums = (float*)take(4 * rows);
  lm_pack_key_tiles(k + lo * k_rs, k_rs, k_cs, n, E, chunks, n32 / 16, kb);
  lm_pack_value_tiles(v + lo * v_rs, v_rs, v_cs, n, Ev, n32 / 32, col_blocks, vb);
#if defined(__AMX_BF16__)
  lm_amx_begin();
#endif
  for (int64_t r0 = 0, i = 0; r0 < L; r0 += rows, ++i) {
    const int64_t count = L - r0 < rows ? L - r0 : rows;
    int64_t w0, bn;  // from a chunk of 32 keys' first
    if (!windows.block_keys(i, 32, out + r0 * Ev, count, Ev, w0, bn)) continue;
    const int64_t bn32 = (bn + 31) / 32 * 32;
    const int64_t count32 = (count + 31) / 32 * 32;
    const int64_t kb16 = bn32 / 16, kc32 = bn32 / 32;  // key tiles of Q Kᵀ's C and P V's A, a row tile
    // q's rows as A tiles, zero-padded: rows [16 rt, 16 rt + 16), dims [32 ec, 32 ec + 32) at
    // qb + (rt * chunks + ec) * 512.
    for (int64_t r = 0; r < count32; ++r)
      for (int64_t ec = 0; ec < chunks; ++ec) {
        uint16_t* qr = qb + (r / 16 * chunks + ec) * 512 + r % 16 * 32;
        const int64_t e_count = r >= count ? 0 : E - ec * 32 < 32 ? E - ec * 32 : 32;
        if (e_count > 0) {  // (rows past the block's have no q to point at)
          const uint16_t* src = q + (r0 + r) * q_rs + ec * 32 * q_cs;
          if (q_cs == 1)
            __builtin_memcpy(qr, src, 2 * e_count);
          else
            for (int64_t e = 0; e < e_count; ++e) qr[e] = src[e * q_cs];
        }
        for (int64_t e = e_count; e < 32; ++e) qr[e] = 0;
      }
    // Row r of the block attends keys below diagonal_end + r of its window (all of them
    // without a causal mask). A pair of row tiles needs only the 32-key chunks its last row
    // attends: with a causal mask, the chunks past its diagonal are neither multiplied nor read.
    const int64_t diagonal_end = causal ? r0 + shift + 1 - (lo + w0) : bn32;
    auto pair_chunks = [&](int64_t rt) {  // up to the pair's last row's keys
      return (lm_imin(lm_imax(diagonal_end + 16 * rt + 31, 0), bn32) + 31) / 32;
    };
    for (int64_t rt = 0; rt < count32 / 16; rt += 2)
      for (int64_t jb = 0; jb < 2 * pair_chunks(rt); jb += 2)
        lm_tile_product<true>(qb + rt * chunks * 512, chunks * 512, 512, kb + (w0 / 16 + jb) * chunks * 512,
                              chunks * 512, 512, chunks, sc + (rt * kb16 + jb) * 256, kb16 * 256);
    lm_attention_probs_bf16(sc, count, bn, bn32, diagonal_end, bias ? bias + r0 * b_rs + (lo + w0) * b_cs : nullptr,
                            b_rs, b_cs, scale, sums, pb);
    // Rows past the block's: zero probabilities.
    for (int64_t r = count; r < count32; ++r)
      for (int64_t kc = 0; kc < kc32; ++kc) __builtin_memset(pb + (r / 16 * kc32 + kc) * 512 + r % 16 * 32, 0, 64);
    const uint16_t* vw = vb + w0 / 32 * col_blocks * 512;  // the block's first key chunk
    for (int64_t rt = 0; rt < count32 / 16; rt += 2) {
      const uint16_t* a = pb + rt * kc32 * 512;
      float* c = op + rt * col_blocks * 256;
      const int64_t steps = pair_chunks(rt);
      int64_t cb = 0;
      for (; cb + 2 <= col_blocks; cb += 2)
        lm_tile_product<true>(a, kc32 * 512, 512, vw + cb * 512, 512, col_blocks * 512, steps, c + cb * 256,
                              col_blocks * 256);
      if (cb < col_blocks)
        lm_tile_product<false>(a, kc32 * 512, 512, vw + cb * 512, 0, col_blocks * 512, steps, c + cb * 256,
                               col_blocks * 256);
    }
    // The output's rows from the C tiles of P V: row r, columns [16 cb, 16 cb + 16) at
    // op + ((r / 16) * col_blocks + cb) * 256 + (r % 16) * 16.
    // Sixteen columns at a time: element by element (the index arithmetic kept GCC from
    // vectorising it) this took a twentieth of a 1,024-token causal head on a Zen 4.
    for (int64_t r = 0; r < count; ++r) {
      float* o = out + (r0 + r) * Ev;
      // Row r's columns [16 cb, 16 cb + 16) at row + cb * 256.
      const float* row = op + r / 16 * col_blocks * 256 + r % 16 * 16;
      const lm_f32x16 sum = lm_splat16(sums[r]);
      int64_t c = 0;
      for (; c + 16 <= Ev; c += 16) {
        lm_f32x16 x;
        __builtin_memcpy(&x, row + c / 16 * 256, sizeof x);
        x = x / sum;
        __builtin_memcpy(o + c, &x, sizeof x);
      }
      for (; c < Ev; ++c) o[c] = row[c / 16 * 256 + c % 16] / sums[r];
    }
  }
#if defined(__AMX_BF16__)
  lm_amx_end();
#endif
  __builtin_free(base);
  return true;
}
#if defined(__AMX_BF16__)
#undef LM_TILE_LOAD
#undef LM_TILE_STORE
#undef LM_TILE_ZERO
#undef LM_TILE_DOT
#endif
template <int R, class Weights>
inline void lm_gemv_bf16_strips_chunks(const float* packed, int64_t rows, int64_t depth, float* sums, Weights weights) {
#if defined(__AMX_BF16__)
  if constexpr (R == 32) {  // GemvSpec::amx_tiles (kAmxGemvRows)
    lm_amx_chunks(packed, rows, depth, sums, weights);
    return;
  }
#endif
  alignas(64) uint16_t wide[R * lm_bf16_chunk];
  const uint16_t* strips = (const uint16_t*)packed;
  const int64_t strip_stride = 16 * lm_bf16_strip_depth(depth), count = (rows + 15) / 16, ldc = count * 16;
  // Strips of 16 rows of one pair; a last one of at most 8 rows has two (lm_bf16_quad_strips).
  const int64_t full = lm_bf16_quad_strips && rows % 16 != 0 && rows % 16 <= 8 ? count - 1 : count;
  for (int64_t d = 0; d < depth || d == 0; d += lm_bf16_chunk) {  // depth 0: the sums are zeros
    const int64_t chunk = depth - d < lm_bf16_chunk ? depth - d : lm_bf16_chunk, padded = lm_bf16_step_depth(chunk);
    int64_t ldw = lm_bf16_chunk;
    const uint16_t* next = nullptr;
    const uint16_t* w = weights(d, chunk, wide, ldw, next);
    const bool accumulate = d > 0;
    // Tiles of four strips, then of three or two: a tile of one strip is R chains of dependent
    // vdpbf16ps, too few to hide their latency, so 3, 5 and 7 strips go as 3, 3 + 2 and 4 + 3.
    int64_t s = 0;
    if constexpr (R <= 6)
      for (int64_t left = full; left >= 3; left = full - s, next = nullptr)
        if (left == 4 || left >= 6) {
          lm_tile_bf16_strips<R, 4, 1>(w, ldw, strips + s * strip_stride + d * 16, strip_stride, padded / 2,
                                       sums + s * 16, ldc, accumulate, next);
          s += 4;
        } else {
          lm_tile_bf16_strips<R, 3, 1>(w, ldw, strips + s * strip_stride + d * 16, strip_stride, padded / 2,
                                       sums + s * 16, ldc, accumulate, next);
          s += 3;
        }
    for (; s + 2 <= full; s += 2, next = nullptr)
      lm_tile_bf16_strips<R, 2, 1>(w, ldw, strips + s * strip_stride + d * 16, strip_stride, padded / 2,
                                   sums + s * 16, ldc, accumulate, next);
    for (; s < full; ++s, next = nullptr)
      lm_tile_bf16_strips<R, 1, 1>(w, ldw, strips + s * strip_stride + d * 16, strip_stride, padded / 2,
                                   sums + s * 16, ldc, accumulate, next);
    if (full < count)  // two pairs a step: the chunk starts d * 8 values into the strip
      lm_tile_bf16_strips<R, 1, 2>(w, ldw, strips + s * strip_stride + d * 8, strip_stride, padded / 4,
                                   sums + s * 16, ldc, accumulate, next);
  }
}
// `wide` after fill(r, d, n, out) wrote each of the R rows' chunk there as bf16, padded with
// zeros to a multiple of 4.
template <int R, class Fill>
inline const uint16_t* lm_fill_bf16_chunk(int64_t d, int64_t n, uint16_t* wide, Fill fill) {
  for (int r = 0; r < R; ++r) {
    fill(r, d, n, wide + r * lm_bf16_chunk);
    // (On AMX to a multiple of 32: a tile's depth.)
    for (int64_t k = n; k < lm_bf16_strip_depth(n); ++k) wide[r * lm_bf16_chunk + k] = 0;
  }
  return wide;
}
// The same for R weight rows that dequantize(r, d, n, out) writes as bf16 into `wide`.
template <int R, class Dequantize>
inline void lm_gemv_bf16_strips_dot(const float* packed, int64_t rows, int64_t depth, float* sums,
                                    Dequantize dequantize) {
  lm_gemv_bf16_strips_chunks<R>(packed, rows, depth, sums,
                                [&](int64_t d, int64_t n, uint16_t* wide, int64_t&, const uint16_t*&) {
    return lm_fill_bf16_chunk<R>(d, n, wide, dequantize);
  });
}
// 32 f32 values (n of them, at most 32) rounded to bf16 and stored.
inline void lm_store_bf16_rounded(lm_f32x16 lo, lm_f32x16 hi, int64_t n, uint16_t* out) {
  const lm_f32x16 v = lm_round_bf16_pairs(lo, hi);
  __builtin_memcpy(out, &v, n * sizeof *out);
}
template <int R>
inline void lm_gemv_bf16_strips(const float* packed, int64_t rows, const signed char* w, int64_t row_stride,
                                int64_t depth, float* sums) {
  lm_gemv_bf16_strips_dot<R>(packed, rows, depth, sums, [&](int r, int64_t d, int64_t n, uint16_t* out) {
    const signed char* row = w + r * row_stride + d;
    lm_prefetch_next_block_chunk(w, row_stride, 1, r, R, d, lm_bf16_chunk);
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) lm_store_bf16_rounded(lm_widen_i8x16(row + k), lm_widen_i8x16(row + k + 16), 32, out + k);
    for (; k < n; ++k) out[k] = lm_f2bf((float)row[k]);
  });
}
// bf16 weights (a bf16 Linear's prompt, passes::is_bf16_pair_gemv, only where the CPU has
// AVX512-BF16): read in place, the next block's chunk prefetched as the tile goes (a copy of each
// chunk into L1, through memmove, took a quarter of an 8 x 2048 x 8192 product), but for a last
// chunk of a depth not a multiple of 4, copied so that it is padded with zeros.
template <int R>
inline void lm_gemv_bf16_strips(const float* packed, int64_t rows, const uint16_t* w, int64_t row_stride,
                                int64_t depth, float* sums) {
  lm_gemv_bf16_strips_chunks<R>(packed, rows, depth, sums,
                                [&](int64_t d, int64_t n, uint16_t* wide, int64_t& ldw, const uint16_t*& next) {
    if (n % 4 == 0) {
      ldw = row_stride;
      next = w + R * row_stride + d;
      return w + d;
    }
    for (int r = 0; r < R; ++r) lm_prefetch_next_block_chunk(w, row_stride, sizeof *w, r, R, d, lm_bf16_chunk);
    return lm_fill_bf16_chunk<R>(d, n, wide, [&](int r, int64_t from, int64_t count, uint16_t* out) {
      __builtin_memcpy(out, w + r * row_stride + from, count * sizeof *w);
    });
  });
}
// Groups of a multiple of 32 weights (the depth a multiple of the group, as torchao's are) take a
// table per chunk of each run of 32 weights' scale and -(zero * scale), made eight at a time
// where groups of 32 have adjacent scales (torchao's [N, groups] layout), and dequantize 32
// weights in two FMAs where every |scale| is below 2^102 (exact: lm_scales_below_2p102), else as
// (q - zero) * scale. A group's scalar loads, conversions, bounds and broadcasts, made as each
// group began, took as long as its 32 weights' vector work:
// 8 x 2048 x 8192 dequantized and multiplied in 1.8-1.9 us per 1,024 weight rows' chunk of 256
// on one Zen 4 core, 1.3 with the table (docs/lessons.md, 2026-11-29). Other groups go one run
// of the chunk per group, sixteen or one weight at a time.
template <int R>
inline void lm_gemv_bf16_strips_grouped(const float* packed, int64_t rows, const signed char* w, int64_t row_stride,
                                        int64_t depth, int64_t group, const uint16_t* s, int64_t scale_row,
                                        int64_t scale_group, const signed char* z, int64_t zero_row,
                                        int64_t zero_group, float* sums) {
  lm_gemv_bf16_strips_dot<R>(packed, rows, depth, sums, [&](int r, int64_t d, int64_t n, uint16_t* out) {
    if (n == 0) return;  // no groups: no scales to read
    const signed char* row = w + r * row_stride + d;
    lm_prefetch_next_block_chunk(w, row_stride, 1, r, R, d, lm_bf16_chunk);  // and its first group's scale and zero point
    __builtin_prefetch(s + (r + R) * scale_row + d / group * scale_group, 0, 2);
    if (z != nullptr) __builtin_prefetch(z + (r + R) * zero_row + d / group * zero_group, 0, 2);
    const uint16_t* row_scales = s + r * scale_row;
    const signed char* row_zeros = z == nullptr ? nullptr : z + r * zero_row;
    const int64_t first_group = d / group;
    if (group % 32 == 0 && depth % group == 0) {
      const int runs = (int)(n / 32);  // n is a multiple of the group
      alignas(32) float scale[8], zero[8], minus_zero_scale[8];
      bool small_scales;
      if (group == 32 && runs == 8 && scale_group == 1 && (row_zeros == nullptr || zero_group == 1)) {
        small_scales = lm_group_table8(row_scales, row_zeros, first_group, scale, zero, minus_zero_scale);
      } else {
        for (int b = 0; b < runs; ++b) {
          const int64_t j = (d + 32 * b) / group;
          scale[b] = lm_bf2f(row_scales[j * scale_group]);
          zero[b] = row_zeros == nullptr ? 0.0f : (float)row_zeros[j * zero_group];
          minus_zero_scale[b] = -(zero[b] * scale[b]);
        }
        small_scales = lm_scales_below_2p102(scale, runs);
      }
      // One loop per form, so that the choice is made once per chunk, not per run.
      auto run = [&](auto dequantize) {
        for (int b = 0; b < runs; ++b)
          lm_store_bf16_rounded(dequantize(b, 32 * b), dequantize(b, 32 * b + 16), 32, out + 32 * b);
      };
      if (small_scales)
        run([&](int b, int64_t k) {
          return lm_madd16(lm_widen_i8x16(row + k), lm_splat16(scale[b]), lm_splat16(minus_zero_scale[b]));
        });
      else
        run([&](int b, int64_t k) {
          return (lm_widen_i8x16(row + k) - lm_splat16(zero[b])) * lm_splat16(scale[b]);
        });
      return;
    }
    for (int64_t k = 0, j = first_group; k < n; ++j) {
      const int64_t end = (j + 1) * group - d < n ? (j + 1) * group - d : n;
      const float scale = lm_bf2f(row_scales[j * scale_group]);
      const float zero = row_zeros == nullptr ? 0.0f : (float)row_zeros[j * zero_group];
      auto value = [&](int64_t at) { return (lm_widen_i8x16(row + at) - zero) * scale; };
      for (; k + 32 <= end; k += 32) lm_store_bf16_rounded(value(k), value(k + 16), 32, out + k);
      for (; k + 16 <= end; k += 16) lm_store_bf16_rounded(value(k), lm_f32x16{}, 16, out + k);
      for (; k < end; ++k) out[k] = lm_f2bf(((float)row[k] - zero) * scale);
    }
  });
}
#else
inline void lm_pack_bf16_strips(const uint16_t* a, int64_t a_stride, int64_t rows, int64_t depth, float* strips) {
  lm_pack_strips(a, a_stride, rows, depth, strips);
}
template <int R>
inline void lm_gemv_bf16_strips(const float* strips, int64_t rows, const signed char* w, int64_t row_stride,
                                int64_t depth, float* sums) {
  lm_gemv_strips<R>(strips, rows, w, row_stride, depth, sums);
}
template <int R>
inline void lm_gemv_bf16_strips_grouped(const float* strips, int64_t rows, const signed char* w, int64_t row_stride,
                                        int64_t depth, int64_t group, const uint16_t* s, int64_t scale_row,
                                        int64_t scale_group, const signed char* z, int64_t zero_row,
                                        int64_t zero_group, float* sums) {
  lm_gemv_strips_grouped<R>(strips, rows, w, row_stride, depth, group, s, scale_row, scale_group, z, zero_row,
                            zero_group, sums);
}
#endif
// The GEMV pattern kernel's column form (GemvSpec::columns): the weight is [K, N] with N
// contiguous (x @ W, GPT-2's Conv1D), so a dot product would read one element per row. Instead
// `cols` outputs accumulate in `sums` (f32, in L1) while eight weight rows at a time stream
// through them, each row's run of columns contiguous, as sgemv does for this layout. bf16
// widens sixteen weights into their even and odd lanes (a shift and a mask), so each block of
// sixteen sums is held even columns first until the end.
// sums[c] = sum_k a[k * a_step] * w[k * w_step + c], for c < cols. A step adds R rows from `k`.
template <class E, int R>
inline void lm_gemv_columns_rows(const uint16_t* a, int64_t a_step, const uint16_t* w, int64_t w_step, int64_t k,
                                 int64_t cols, float* sums) {
  const int64_t whole = cols / 16 * 16;
  float x[R];
  lm_f32x8 x8[R];
  const uint16_t* row[R];
  for (int r = 0; r < R; ++r) {
    x[r] = E::load1(a + (k + r) * a_step);
    x8[r] = lm_f32x8{x[r], x[r], x[r], x[r], x[r], x[r], x[r], x[r]};
    row[r] = w + (k + r) * w_step;
  }
  for (int64_t c = 0; c < whole; c += 16) {
    lm_f32x8 first, second;
    __builtin_memcpy(&first, sums + c, sizeof first);
    __builtin_memcpy(&second, sums + c + 8, sizeof second);
    for (int r = 0; r < R; ++r) {
      lm_f32x8 w0, w1;
      E::widen16(row[r] + c, w0, w1);
      first = lm_madd8(x8[r], w0, first);
      second = lm_madd8(x8[r], w1, second);
    }
    __builtin_memcpy(sums + c, &first, sizeof first);
    __builtin_memcpy(sums + c + 8, &second, sizeof second);
  }
  for (int64_t c = whole; c < cols; ++c) {
    float t = sums[c];
    for (int r = 0; r < R; ++r) t += x[r] * E::load1(row[r] + c);
    sums[c] = t;
  }
}
template <class E>
inline void lm_gemv_columns(const uint16_t* a, int64_t a_step, const uint16_t* w, int64_t w_step, int64_t depth,
                            int64_t cols, float* sums) {
  for (int64_t c = 0; c < cols; ++c) sums[c] = 0.0f;
  int64_t k = 0;
  for (; k + 8 <= depth; k += 8) lm_gemv_columns_rows<E, 8>(a, a_step, w, w_step, k, cols, sums);
  for (; k < depth; ++k) lm_gemv_columns_rows<E, 1>(a, a_step, w, w_step, k, cols, sums);  // the last rows
  if (E::kInterleaved)
    for (int64_t c = 0; c < cols / 16 * 16; c += 16) {
      float block[16];
      __builtin_memcpy(block, sums + c, sizeof block);
      for (int j = 0; j < 8; ++j) {
        sums[c + 2 * j] = block[j];
        sums[c + 2 * j + 1] = block[8 + j];
      }
    }
}
// The prompt column forms' pass over a [K, N] weight (lm_gemm_bf16_columns, lm_gemm_f32_columns):
// chunk(k0, the chunk's rows, whether it is the first) for each chunk of `rows` weight rows, in
// order, so that every tile of rows runs over one chunk before the next.
template <class Chunk>
inline void lm_column_chunks(int64_t depth, int64_t rows, Chunk chunk) {
  for (int64_t k0 = 0; k0 < depth; k0 += rows) chunk(k0, depth - k0 < rows ? depth - k0 : rows, k0 == 0);
}
// The column form for a prompt's rows of bf16 activations (GemvSpec::columns with bf16_pairs):
// sums[m * ldc + c] = sum_k a[m * lda + k] * w[k * w_step + c] for m < rows and c < cols, `a`
// read along K with unit stride. With AVX512-BF16, each block of 32 columns is a register tile
// of MR rows x 32 columns: per pair of weight rows k, k + 1, their 32 columns' values are
// interleaved into pairs (two unpacks, so a register holds columns 0-3, 8-11, 16-19, 24-27 and
// the other 4-7, 12-15, ...) and each row's pair a[m][k], a[m][k + 1] is broadcast into
// vdpbf16ps, as lm_gemv_bf16_strips multiplies a [N, K] weight's pairs. Two shuffles per 2 x MR
// multiplies: a [K, N] weight needs no copy per call. As the f32 column form does, the weight is
// read in chunks of lm_bf16_column_chunk rows, every tile of rows over a chunk before the next,
// while the tiles fetch the next chunk's rows into L2: a weight row's 32 columns are one cache
// line, N values from the next, a stride the hardware's prefetchers do not follow, and without
// the prefetches GPT-2's 32-row products waited on memory for two thirds of their time. The
// sums go through memory between chunks in f32, so each adds its pairs in the order of k as one
// pass would. Elsewhere (and for a last block of fewer than 32 columns) each row is the column
// GEMV (lm_gemv_columns).
#if defined(__AVX512BF16__)
typedef unsigned short lm_u16x32 __attribute__((vector_size(64)));
constexpr int64_t lm_bf16_column_chunk = 64;  // even: a chunk's pairs are pairs of the whole depth
// MR rows of one block of 32 columns over `depth` weight rows (a chunk), added to the sums in c
// unless `first`.
template <int MR>
inline void lm_tile_bf16_columns(const uint16_t* a, int64_t lda, const uint16_t* w, int64_t w_step, int64_t depth,
                                 float* c, int64_t ldc, bool first) {
  lm_f32x16 acc[MR][2] = {};
  if (!first)
    for (int m = 0; m < MR; ++m) {
      lm_f32x16 low, high;  // columns 0-15 and 16-31, back into the pairs' lane order
      __builtin_memcpy(&low, c + m * ldc, sizeof low);
      __builtin_memcpy(&high, c + m * ldc + 16, sizeof high);
      acc[m][0] = __builtin_shufflevector(low, high, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
      acc[m][1] = __builtin_shufflevector(low, high, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    }
  auto step = [&](lm_u16x32 r0, lm_u16x32 r1, auto pair_of_row) {
    const lm_f32x16 lo = (lm_f32x16)__builtin_shufflevector(r0, r1, 0, 32, 1, 33, 2, 34, 3, 35, 8, 40, 9, 41, 10, 42, 11,
                                                            43, 16, 48, 17, 49, 18, 50, 19, 51, 24, 56, 25, 57, 26, 58,
                                                            27, 59);
    const lm_f32x16 hi = (lm_f32x16)__builtin_shufflevector(r0, r1, 4, 36, 5, 37, 6, 38, 7, 39, 12, 44, 13, 45, 14, 46,
                                                            15, 47, 20, 52, 21, 53, 22, 54, 23, 55, 28, 60, 29, 61, 30,
                                                            62, 31, 63);
    for (int m = 0; m < MR; ++m) {
      const lm_f32x16 x = pair_of_row(m);
      acc[m][0] = lm_dot_bf16_pairs(acc[m][0], lo, x);
      acc[m][1] = lm_dot_bf16_pairs(acc[m][1], hi, x);
    }
  };
  const int64_t ahead = lm_bf16_column_chunk * w_step;
  int64_t k = 0;
  for (; k + 2 <= depth; k += 2) {
    const uint16_t* row = w + k * w_step;
    __builtin_prefetch(row + ahead, 0, 2);
    __builtin_prefetch(row + ahead + 31, 0, 2);
    __builtin_prefetch(row + w_step + ahead, 0, 2);
    __builtin_prefetch(row + w_step + ahead + 31, 0, 2);
    lm_u16x32 r0, r1;
    __builtin_memcpy(&r0, row, sizeof r0);
    __builtin_memcpy(&r1, row + w_step, sizeof r1);
    step(r0, r1, [&](int m) { return lm_broadcast_bf16_pairs<1>(a + m * lda + k); });
  }
  if (k < depth) {  // an odd depth's last row, paired with zeros
    lm_u16x32 r0;
    __builtin_memcpy(&r0, w + k * w_step, sizeof r0);
    step(r0, lm_u16x32{}, [&](int m) { return (lm_f32x16)(lm_u32x16{} + (uint32_t)a[m * lda + k]); });
  }
  for (int m = 0; m < MR; ++m) {
    const lm_f32x16 first = __builtin_shufflevector(acc[m][0], acc[m][1], 0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20,
                                                    21, 22, 23);
    const lm_f32x16 second = __builtin_shufflevector(acc[m][0], acc[m][1], 8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14,
                                                     15, 28, 29, 30, 31);
    __builtin_memcpy(c + m * ldc, &first, sizeof first);
    __builtin_memcpy(c + m * ldc + 16, &second, sizeof second);
  }
}
// Rows m, m + R, ... of a block of columns in tiles of R rows while R are left; the next row.
template <int R>
inline int64_t lm_bf16_column_tiles(const uint16_t* a, int64_t lda, int64_t rows, int64_t m, const uint16_t* w,
                                    int64_t w_step, int64_t depth, float* sums, int64_t ldc, bool first) {
  for (; m + R <= rows; m += R) lm_tile_bf16_columns<R>(a + m * lda, lda, w, w_step, depth, sums + m * ldc, ldc, first);
  return m;
}
inline void lm_gemm_bf16_columns(const uint16_t* a, int64_t lda, int64_t rows, const uint16_t* w, int64_t w_step,
                                 int64_t depth, int64_t cols, float* sums, int64_t ldc) {
  const int64_t blocked = cols / 32 * 32;
  if (depth == 0)
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = 0; j < blocked; ++j) sums[m * ldc + j] = 0;
  lm_column_chunks(depth, lm_bf16_column_chunk, [&](int64_t k0, int64_t kc, bool first) {
    for (int64_t c = 0; c < blocked; c += 32) {
      const uint16_t* wk = w + k0 * w_step + c;
      int64_t m = lm_bf16_column_tiles<12>(a + k0, lda, rows, 0, wk, w_step, kc, sums + c, ldc, first);
      m = lm_bf16_column_tiles<8>(a + k0, lda, rows, m, wk, w_step, kc, sums + c, ldc, first);
      m = lm_bf16_column_tiles<4>(a + k0, lda, rows, m, wk, w_step, kc, sums + c, ldc, first);
      lm_bf16_column_tiles<1>(a + k0, lda, rows, m, wk, w_step, kc, sums + c, ldc, first);
    }
  });
  if (blocked < cols)
    for (int64_t m = 0; m < rows; ++m)
      lm_gemv_columns<lm_bf16>(a + m * lda, 1, w + blocked, w_step, depth, cols - blocked, sums + m * ldc + blocked);
}
#else
inline void lm_gemm_bf16_columns(const uint16_t* a, int64_t lda, int64_t rows, const uint16_t* w, int64_t w_step,
                                 int64_t depth, int64_t cols, float* sums, int64_t ldc) {
  for (int64_t m = 0; m < rows; ++m) lm_gemv_columns<lm_bf16>(a + m * lda, 1, w, w_step, depth, cols, sums + m * ldc);
}
#endif
#if defined(__AVX512VNNI__)
// vpdpbusd's operands and sums, for lm_gemv_rows_i8 and lm_gemv_prompt_i8: it adds four unsigned
// x signed byte products into each of sixteen i32 lanes, 64 pairs per instruction. Signed `a`
// flipped to unsigned (a ^ 0x80 = a + 128) gives sum (a + 128) w; a second vpdpbusd of ones by w
// gives sum w, and the difference 128 sum w is taken after, mod 2^32, as torch's i32 sum wraps.
// Each lane's four products stay within 4 * 255 * 128: no saturation. Unsigned `a` needs neither.
struct lm_vnni {
  typedef int I32 __attribute__((vector_size(64)));
  typedef uint32_t U32 __attribute__((vector_size(64)));
  static I32 load(const void* p) {
    I32 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static I32 flip() { return I32{} + (int)0x80808080; }
  static I32 ones() { return I32{} + 0x01010101; }
  // sum (a + 128) w - 128 sum w over the lanes of the two sums, mod 2^32 (sum_w zero for
  // unsigned `a`).
  static uint32_t total(I32 sum_aw, I32 sum_w) {
    const U32 v = (U32)sum_aw - ((U32)sum_w << 7);
    const lm_u32x8 v8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                        __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    return v8[0] + v8[1] + v8[2] + v8[3] + v8[4] + v8[5] + v8[6] + v8[7];
  }
};
#endif
// int8 (TA signed char) or uint8 (unsigned char: torchao's form for AVX512-VNNI CPUs without
// AMX) activations times int8 weights (torchao's dynamic activation quantization, _int_mm),
// summed exactly in i32 as torch does: sixteen pairs widen to i16 and vpmaddwd adds each
// neighbouring pair's products into an i32 lane (at most 2 * 255 * 128, no saturation). The
// lanes wrap on overflow, as torch's i32 sum does (unsigned arithmetic: no undefined overflow).
template <int R, class TA>
inline void lm_gemv_rows_i8(const TA* a, const signed char* w, int64_t row_stride, int64_t depth, int32_t* sums) {
  constexpr bool kSigned = (TA)-1 < 0;
  uint32_t total[R] = {};
  int64_t k = 0;
#if defined(__AVX512VNNI__)
  typedef lm_vnni V;
  auto step = [&](V::I32& sum_aw, V::I32& sum_w, const signed char* row, int64_t at) {
    const V::I32 wv = V::load(row + at);
    if constexpr (kSigned) {
      sum_aw = __builtin_ia32_vpdpbusd_v16si(sum_aw, V::load(a + at) ^ V::flip(), wv);
      sum_w = __builtin_ia32_vpdpbusd_v16si(sum_w, V::ones(), wv);
    } else {
      sum_aw = __builtin_ia32_vpdpbusd_v16si(sum_aw, V::load(a + at), wv);
    }
  };
  // Two chains of each sum, so that a row's vpdpbusds do not wait on each other.
  const int64_t whole = depth / 64 * 64;
  for (int r = 0; r < R; ++r) {
    const signed char* row = w + r * row_stride;
    V::I32 aw0 = {}, aw1 = {}, w0 = {}, w1 = {};
    for (k = 0; k + 128 <= whole; k += 128) {
      __builtin_prefetch(row + k + lm_stream_prefetch_bytes);
      __builtin_prefetch(row + k + 64 + lm_stream_prefetch_bytes);
      step(aw0, w0, row, k);
      step(aw1, w1, row, k + 64);
    }
    if (k < whole) step(aw0, w0, row, k);
    total[r] += V::total(aw0 + aw1, w0 + w1);
  }
  k = whole;
#elif defined(__AVX2__)
  typedef char lm_i8x16 __attribute__((vector_size(16)));
  typedef short lm_i16x16 __attribute__((vector_size(32)));
  auto widen = [](const signed char* p) {
    lm_i8x16 v;
    __builtin_memcpy(&v, p, sizeof v);
    return __builtin_ia32_pmovsxbw256(v);
  };
  auto widen_a = [](const TA* p) {
    lm_i8x16 v;
    __builtin_memcpy(&v, p, sizeof v);
    if constexpr (kSigned) return __builtin_ia32_pmovsxbw256(v);
    else return __builtin_ia32_pmovzxbw256(v);
  };
  // The rows one after another, as lm_gemv_rows_sequential reads int8 weights, for the same reason.
  const int64_t whole = depth / 32 * 32;
  for (int r = 0; r < R; ++r) {
    const signed char* row = w + r * row_stride;
    lm_u32x8 even = {}, odd = {};
    for (k = 0; k < whole; k += 32) {
      __builtin_prefetch(row + k + lm_stream_prefetch_bytes);
      even += (lm_u32x8)__builtin_ia32_pmaddwd256(widen_a(a + k), widen(row + k));
      odd += (lm_u32x8)__builtin_ia32_pmaddwd256(widen_a(a + k + 16), widen(row + k + 16));
    }
    if (k + 16 <= depth) even += (lm_u32x8)__builtin_ia32_pmaddwd256(widen_a(a + k), widen(row + k));
    even += odd;
    for (int lane = 0; lane < 8; ++lane) total[r] += even[lane];
  }
  k = depth / 16 * 16;
#endif
  for (int r = 0; r < R; ++r) {
    for (int64_t j = k; j < depth; ++j) total[r] += (uint32_t)(a[j] * w[r * row_stride + j]);
    sums[r] = (int32_t)total[r];
  }
}
// Eight rows of a prompt's 8-bit activations (row m at a + m * a_stride) times R int8 weight rows,
// exact in i32 as lm_gemv_rows_i8: sums[m * R + r]. Where the CPU has AVX512-VNNI, each 64 bytes
// of a pair of weight rows are loaded once and multiplied by all eight rows of `a`: sixteen
// vpdpbusd, and for signed `a` the pair's sum w once, not once per row of `a`. Called once per
// row of `a`, lm_gemv_rows_i8 took 16 vpdpbusd, 8 xors and 16 loads per weight row and 64
// weights, against 9, 4 and 5 here: the 1B Llama's int8-dynamic 8-token prefill spent 81% of its
// time there (docs/lessons.md, 2026-11-29 morning). Elsewhere lm_gemv_rows_i8 per row of `a`.
// Sums mod 2^32 are the same in any order: the bits do not depend on the path.
#if defined(__AVX512VNNI__)
template <int P, class TA>
inline void lm_gemv_prompt_i8_rows(const TA* a, int64_t a_stride, const signed char* w, int64_t row_stride,
                                   int64_t depth, int32_t* sums, int sums_stride) {
  constexpr bool kSigned = (TA)-1 < 0;
  typedef lm_vnni V;
  V::I32 acc[P][8] = {}, sum_w[P] = {};  // sum_w stays zero for unsigned `a`
  int64_t k = 0;
  for (; k + 64 <= depth; k += 64) {
    V::I32 wv[P];
    for (int p = 0; p < P; ++p) {
      __builtin_prefetch(w + p * row_stride + k + lm_stream_prefetch_bytes);
      wv[p] = V::load(w + p * row_stride + k);
      if constexpr (kSigned) sum_w[p] = __builtin_ia32_vpdpbusd_v16si(sum_w[p], V::ones(), wv[p]);
    }
    for (int m = 0; m < 8; ++m) {
      V::I32 x = V::load(a + m * a_stride + k);
      if constexpr (kSigned) x ^= V::flip();  // a + 128, unsigned
      for (int p = 0; p < P; ++p) acc[p][m] = __builtin_ia32_vpdpbusd_v16si(acc[p][m], x, wv[p]);
    }
  }
  for (int p = 0; p < P; ++p)
    for (int m = 0; m < 8; ++m) {
      uint32_t total = V::total(acc[p][m], sum_w[p]);
      for (int64_t j = k; j < depth; ++j) total += (uint32_t)(a[m * a_stride + j] * w[p * row_stride + j]);
      sums[m * sums_stride + p] = (int32_t)total;
    }
}
#endif
template <int R, class TA>
inline void lm_gemv_prompt_i8(const TA* a, int64_t a_stride, const signed char* w, int64_t row_stride, int64_t depth,
                              int32_t* sums) {
#if defined(__AVX512VNNI__)
  int r = 0;
  for (; r + 2 <= R; r += 2) lm_gemv_prompt_i8_rows<2>(a, a_stride, w + r * row_stride, row_stride, depth, sums + r, R);
  if (r < R) lm_gemv_prompt_i8_rows<1>(a, a_stride, w + r * row_stride, row_stride, depth, sums + r, R);
#else
  int32_t row_sums[R];
  for (int m = 0; m < 8; ++m) {
    lm_gemv_rows_i8<R>(a + m * a_stride, w, row_stride, depth, row_sums);
    for (int r = 0; r < R; ++r) sums[m * R + r] = row_sums[r];
  }
#endif
}
// A weight quantized per group along K (GemvSpec::group). f32: each row's int8 values multiply
// `a` group by group, and the group's scale and zero point apply to its sum,
// scale * (sum q*a - zero * sum a), instead of to every weight: one widen and one FMA per weight,
// equal to dequantizing first up to f32 rounding. bf16: each weight is dequantized and rounded
// to bf16 first, as the IR's bf16 Mul (and eager) rounds it, since that rounding moves a bf16
// sum by far more than f32's.
// The f32 vectors a grouped row (and the f32 column tiles below) are summed in: eight lanes, or
// sixteen where AVX-512 has them (half the instructions per weight, as lm_f32_i8).
struct lm_lanes8 {
  typedef lm_f32x8 V;
  static constexpr int kLanes = 8;
  static V load(const float* p) { return lm_load_f32x8(p); }
  static V widen(const signed char* w) { return lm_widen_i8(w); }
  static V madd(V a, V b, V c) { return lm_madd8(a, b, c); }
  static V broadcast(float v) { return lm_splat8(v); }
  static float sum(V v) { return lm_sum8(v); }
};
#if defined(__AVX512F__)
struct lm_lanes16 {
  typedef lm_f32x16 V;
  static constexpr int kLanes = 16;
  static V load(const float* p) {
    V v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static V widen(const signed char* w) { return lm_widen_i8x16(w); }
  static V madd(V a, V b, V c) { return lm_madd16(a, b, c); }
  static V broadcast(float v) { return lm_splat16(v); }
  static float sum(V v) { return lm_sum8(lm_fold16(v)); }
};
#endif
// The column form for a prompt's rows of f32 activations (GemvSpec::rows_in_item in f32):
// sums[m * ldc + c] = sum_k a[m * lda + k] * w[k * w_step + c] for m < rows and c < cols, `a`
// read along K with unit stride. Each block of 2 L columns (L lanes a register: 32 columns with
// AVX-512, 16 with AVX2) is a register tile of MR rows: per weight row k the block's values are
// loaded once for all MR rows, each row's a[m][k] broadcast into one fused multiply-add per
// register. sgemm packs the whole [K, N] weight into panels first, a pass over it that
// dominated 32-row products (GPT-2's Conv1D); this reads the weight in place, in chunks of
// lm_f32_column_chunk rows: a chunk's rows of the item's columns (16 KiB at 64 columns) stay in
// L1 for every tile of rows, and the pages it touches (one per weight row, N floats apart) in the
// TLB, while the tiles fetch the next chunk's rows into L2 (a stride the hardware's prefetchers
// do not follow). Each sum adds its products in the order of k, one fused multiply-add each,
// across chunks, in the tiles and in the columns past the last block alike: the same bits on
// both ISAs.
constexpr int64_t lm_f32_column_chunk = 64;
// The broadcasts are the lanes' own (an initializer of one value read from memory: one
// vbroadcastss from memory). Written V{} + x, GCC added 0 to x first, as -0 + 0 is not -0, and
// broadcast the sum from a register: two operations more per row and step, one on port 5.
#if defined(__AVX512F__)
typedef lm_lanes16 lm_f32_column_lanes;
constexpr int lm_f32_column_tile_rows = 12;  // 24 sums, two weight registers and a broadcast of 32
#else
typedef lm_lanes8 lm_f32_column_lanes;
constexpr int lm_f32_column_tile_rows = 6;  // 12 sums, two weight registers and a broadcast of 16
#endif
// MR rows of one block of columns over `depth` weight rows (a chunk), added to the sums in c
// unless `first`.
template <int MR>
inline void lm_tile_f32_columns(const float* a, int64_t lda, const float* w, int64_t w_step, int64_t depth, float* c,
                                int64_t ldc, bool first) {
  typedef lm_f32_column_lanes S;
  constexpr int L = S::kLanes;
  typename S::V acc[MR][2] = {};
  if (!first)
    for (int m = 0; m < MR; ++m) {
      acc[m][0] = S::load(c + m * ldc);
      acc[m][1] = S::load(c + m * ldc + L);
    }
  const int64_t ahead = lm_f32_column_chunk * w_step;
  for (int64_t k = 0; k < depth; ++k) {
    const float* row = w + k * w_step;
    __builtin_prefetch(row + ahead, 0, 2);
    __builtin_prefetch(row + ahead + 2 * L - 1, 0, 2);
    const typename S::V w0 = S::load(row), w1 = S::load(row + L);
    for (int m = 0; m < MR; ++m) {
      const typename S::V x = S::broadcast(a[m * lda + k]);
      acc[m][0] = S::madd(x, w0, acc[m][0]);
      acc[m][1] = S::madd(x, w1, acc[m][1]);
    }
  }
  for (int m = 0; m < MR; ++m) {
    __builtin_memcpy(c + m * ldc, &acc[m][0], sizeof acc[m][0]);
    __builtin_memcpy(c + m * ldc + L, &acc[m][1], sizeof acc[m][1]);
  }
}
// Rows m, m + R, ... of a block of columns in tiles of R rows while R are left; the next row.
template <int R>
inline int64_t lm_f32_column_tiles(const float* a, int64_t lda, int64_t rows, int64_t m, const float* w,
                                   int64_t w_step, int64_t depth, float* sums, int64_t ldc, bool first) {
  for (; m + R <= rows; m += R) lm_tile_f32_columns<R>(a + m * lda, lda, w, w_step, depth, sums + m * ldc, ldc, first);
  return m;
}
inline void lm_gemm_f32_columns(const float* a, int64_t lda, int64_t rows, const float* w, int64_t w_step,
                                int64_t depth, int64_t cols, float* sums, int64_t ldc) {
  constexpr int64_t block = 2 * lm_f32_column_lanes::kLanes;
  constexpr int MR = lm_f32_column_tile_rows;
  const int64_t blocked = cols / block * block;
  if (depth == 0)
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t j = 0; j < cols; ++j) sums[m * ldc + j] = 0;
  lm_column_chunks(depth, lm_f32_column_chunk, [&](int64_t k0, int64_t kc, bool first) {
    const float* ak = a + k0;
    const float* wk = w + k0 * w_step;
    for (int64_t c = 0; c < blocked; c += block) {
      int64_t m = lm_f32_column_tiles<MR>(ak, lda, rows, 0, wk + c, w_step, kc, sums + c, ldc, first);
      if (MR > 8) m = lm_f32_column_tiles<8>(ak, lda, rows, m, wk + c, w_step, kc, sums + c, ldc, first);
      m = lm_f32_column_tiles<4>(ak, lda, rows, m, wk + c, w_step, kc, sums + c, ldc, first);
      m = lm_f32_column_tiles<2>(ak, lda, rows, m, wk + c, w_step, kc, sums + c, ldc, first);
      lm_f32_column_tiles<1>(ak, lda, rows, m, wk + c, w_step, kc, sums + c, ldc, first);
    }
    for (int64_t m = 0; m < rows && blocked < cols; ++m) {  // the columns past the last block
      float* out = sums + m * ldc + blocked;
      if (first)
        for (int64_t j = 0; j < cols - blocked; ++j) out[j] = 0;
      for (int64_t k = 0; k < kc; ++k) {
        const float x = ak[m * lda + k];
        const float* row = wk + k * w_step + blocked;
        for (int64_t j = 0; j < cols - blocked; ++j) out[j] = __builtin_fmaf(x, row[j], out[j]);
      }
    }
  });
}
// An f32 grouped GEMV row is sum_g s_g * (sum_k a_k q_k - z_g * A_g), A_g the sum of `a` over
// group g: the zero points come out of the loop over the weights as one dot product per row,
// sum_g z_g s_g A_g, with the A_g made once for all rows. Per group the loop then does one FMA
// by the scale, where widening, scaling and subtracting the zero point each group in registers
// made it compute-bound at 11-14 GB/s on two Emerald Rapids cores (docs/lessons.md, 2026-11-27).
// The sums of `a` over each group, A_g, made once per kernel call and row of `a`, not once per
// block of rows: summing a group's lanes took 10-15% of a decode GEMV's time when each block
// made them. The emitter gives each call (each thread's part of it) one of these, with room for
// depth / group sums; `a` is an input of the kernel, unchanged while it runs. With bf16 scales
// (lm_gemv_row_groups_bf16_dot) it holds `a` rounded back to the bf16 it was widened from
// instead, made once per call and row of `a` too (depth values at `pairs`).
struct lm_group_totals {
  const float* a;  // whose sums `sums` holds (nullptr: none yet)
  float* sums;
  const float* pairs_of;  // whose bf16 values `pairs` holds (nullptr: none yet)
  uint16_t* pairs;
};
template <class L>
inline const float* lm_group_totals_of(const float* a, int64_t depth, int64_t group, lm_group_totals* totals) {
  if (totals->a != a) {
    for (int64_t g = 0; g < depth / group; ++g) {
      typename L::V s = {};
      for (int64_t k = g * group; k < (g + 1) * group; k += L::kLanes) s += L::load(a + k);
      totals->sums[g] = L::sum(s);
    }
    totals->a = a;
  }
  return totals->sums;
}
// sum_g z_g s_g A_g over the `groups` groups of one row; eight groups a step where the zero
// points and scales of consecutive groups are adjacent (torchao's [N, groups] layout).
inline float lm_zero_point_term(const signed char* zero, int64_t zero_group, const float* scale, int64_t scale_group,
                                const float* totals, int64_t groups) {
  float t = 0.0f;
  int64_t g = 0;
  if (zero_group == 1 && scale_group == 1) {
    lm_f32x8 acc = {};
    for (; g + 8 <= groups; g += 8)
      acc = lm_madd8(lm_widen_i8(zero + g) * lm_load_f32x8(scale + g), lm_load_f32x8(totals + g), acc);
    t = lm_sum8(acc);
  }
  for (; g < groups; ++g) t += (float)zero[g * zero_group] * scale[g * scale_group] * totals[g];
  return t;
}
// sum_g s_g * sum_k a_k q_k over `count` groups from group `first` of S rows, one from each of S
// blocks far apart in the weight (S = 2: the halves of a thread's rows, two streams as
// lm_gemv_rows_pair reads them), the group a multiple of L::kLanes. A group's sum is a short
// dependency chain, so four groups' are in flight at once. Each row's operations are the same,
// in the same order, whatever S: the same bits.
template <class L, int S>
inline void lm_gemv_row_groups(const float* a, const signed char* const* rows, int64_t first, int64_t count,
                               int64_t group, const float* const* scales, int64_t scale_group, typename L::V* acc,
                               typename L::V* acc2) {
  typedef typename L::V V;
  auto scale_of = [&](int s, int64_t g) { return L::broadcast(scales[s][g * scale_group]); };
  const int64_t end = first + count;
  int64_t g = first;
  for (; g + 4 <= end; g += 4) {
    V part[S][4] = {};
    for (int s = 0; s < S; ++s)
      for (int64_t j = 0; j < 4 * group; j += 64)
        __builtin_prefetch(rows[s] + g * group + j + lm_stream_prefetch_bytes);
    for (int64_t k = g * group; k < (g + 1) * group; k += L::kLanes)
      for (int j = 0; j < 4; ++j) {
        const V x = L::load(a + k + j * group);
        for (int s = 0; s < S; ++s) part[s][j] = L::madd(x, L::widen(rows[s] + k + j * group), part[s][j]);
      }
    for (int s = 0; s < S; ++s)
      for (int j = 0; j < 4; j += 2) {
        acc[s] = L::madd(part[s][j], scale_of(s, g + j), acc[s]);
        acc2[s] = L::madd(part[s][j + 1], scale_of(s, g + j + 1), acc2[s]);
      }
  }
  for (; g < end; ++g) {
    V part[S] = {};
    for (int64_t k = g * group; k < (g + 1) * group; k += L::kLanes) {
      const V x = L::load(a + k);
      for (int s = 0; s < S; ++s) part[s] = L::madd(x, L::widen(rows[s] + k), part[s]);
    }
    for (int s = 0; s < S; ++s) acc[s] = L::madd(part[s], scale_of(s, g), acc[s]);
  }
}
// R rows from each of S blocks of an f32 grouped GEMV (w[s], scale[s], zero[s] where block s
// starts; its sums to sums[s]), each row read start to end, as lm_gemv_rows_sequential reads int8
// weights, a chunk of 256 groups at a time for all R rows: their piece of `a` stays in L1.
template <class L, int R, int S>
inline void lm_gemv_rows_grouped_f32(const float* a, const signed char* const* w, int64_t row_stride, int64_t depth,
                                     int64_t group, const float* const* scale, int64_t scale_row, int64_t scale_group,
                                     const signed char* const* zero, int64_t zero_row, int64_t zero_group,
                                     lm_group_totals* totals, float* const* sums) {
  typedef typename L::V V;
  constexpr int64_t kChunkGroups = 256;
  V acc[R][S] = {}, acc2[R][S] = {};
  const int64_t groups = depth / group;
  for (int64_t first = 0; first < groups; first += kChunkGroups) {
    const int64_t count = groups - first < kChunkGroups ? groups - first : kChunkGroups;
    for (int r = 0; r < R; ++r) {
      const signed char* rows[S];
      const float* scales[S];
      for (int s = 0; s < S; ++s) {
        rows[s] = w[s] + r * row_stride;
        scales[s] = scale[s] + r * scale_row;
      }
      lm_gemv_row_groups<L, S>(a, rows, first, count, group, scales, scale_group, acc[r], acc2[r]);
    }
  }
  const float* a_totals = zero[0] ? lm_group_totals_of<L>(a, depth, group, totals) : nullptr;
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s) {
      const float zero_term = zero[s] ? lm_zero_point_term(zero[s] + r * zero_row, zero_group, scale[s] + r * scale_row,
                                                           scale_group, a_totals, groups)
                                      : 0.0f;
      sums[s][r] = L::sum(acc[r][s] + acc2[r][s]) - zero_term;
    }
}
// lm_gemv_rows_grouped_f32 in sixteen lanes where AVX-512 has them and a group fills them, else
// in eight (the group a multiple of 8).
template <int R, int S>
inline void lm_gemv_rows_grouped_f32_lanes(const float* a, const signed char* const* w, int64_t row_stride,
                                           int64_t depth, int64_t group, const float* const* scale, int64_t scale_row,
                                           int64_t scale_group, const signed char* const* zero, int64_t zero_row,
                                           int64_t zero_group, lm_group_totals* totals, float* const* sums) {
#if defined(__AVX512F__)
  if (group % 16 == 0) {
    lm_gemv_rows_grouped_f32<lm_lanes16, R, S>(a, w, row_stride, depth, group, scale, scale_row, scale_group, zero,
                                               zero_row, zero_group, totals, sums);
    return;
  }
#endif
  lm_gemv_rows_grouped_f32<lm_lanes8, R, S>(a, w, row_stride, depth, group, scale, scale_row, scale_group, zero,
                                            zero_row, zero_group, totals, sums);
}
// A bf16 grouped row: each weight dequantized and rounded to bf16 (lm_dequantize_bf16x8); `a`
// is f32, widened once per call by the emitter. The scale cannot leave the loop as in the f32
// form: the rounding is per weight. lm_dequantize_bf16x8's values in three floating-point
// operations instead of seven, for |scale| < 2^102: d = q - zero, exact in integer lanes, then
// c = d * (65537 scale), which is x = (q - zero) * scale (exact: at most 16 significant bits)
// times 2^16 + 1 rounded once (65537 times a bf16 scale is exact in f32: 8 significant bits times
// 17 fit in 24), then d * (-65536 scale) + c in one FMA, exactly c - 65536 x: x rounded to 8
// significant bits, Veltkamp's split at 16 bits, c - (c - x), with its second subtraction folded
// into the FMA. It ties to even, and equals the integer rounding for every bf16 scale below 2^102
// and every q - zero of two int8s (all 29,956,864 pairs, checked offline;
// tests/cpp/test_quantized_gemv.cpp checks a sample), up to the sign of a zero product, which no
// sum starting from +0 keeps. Six operations per eight weights where the previous form, an FMA
// for x and two subtractions, had seven (docs/lessons.md, 2026-12-01). Requires
// -ffp-contract=off (jit.cpp).
struct lm_split_constants {
  lm_i32x8 zero;
  lm_f32x8 scale_65537, scale_minus_65536;
};
inline lm_f32x8 lm_dequantize_bf16x8_split(const signed char* q, const lm_split_constants& group) {
  const lm_f32x8 d = __builtin_convertvector(lm_widen_i8_i32(q) - group.zero, lm_f32x8);
  const lm_f32x8 c = d * group.scale_65537;
  return lm_madd8(d, group.scale_minus_65536, c);
}
#if defined(__AVX512BF16__)
// `a` (widened from bf16, so exact) back as bf16, 32 values a vector, for vdpbf16ps: made once
// per kernel call and row of `a`, where rounding each 32 values again for every two weight rows
// took a rounding instruction per 64 weights (depth a multiple of 32).
inline const uint16_t* lm_bf16_pairs_of(const float* a, int64_t depth, lm_group_totals* totals) {
  if (totals->pairs_of != a) {
    for (int64_t k = 0; k < depth; k += 32) {
      lm_f32x16 lo, hi;
      __builtin_memcpy(&lo, a + k, sizeof lo);
      __builtin_memcpy(&hi, a + k + 16, sizeof hi);
      const lm_f32x16 v = lm_round_bf16_pairs(lo, hi);
      __builtin_memcpy(totals->pairs + k, &v, sizeof v);
    }
    totals->pairs_of = a;
  }
  return totals->pairs;
}
inline lm_f32x16 lm_load_bf16x32(const uint16_t* p) {
  lm_f32x16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
#if defined(__AVX512BW__)
typedef short lm_i16x32 __attribute__((vector_size(64)));
typedef signed char lm_i8x64 __attribute__((vector_size(64)));
typedef signed char lm_i8x32 __attribute__((vector_size(32)));
// One float broadcast to sixteen lanes from memory: a load-port operation. Given the value in a
// register GCC made each of a table's broadcasts a shuffle on port 5, which the lookups need
// (the lookups alone, stored to L1, took 1.7 ns per 32 weights instead of 1.5 on a Xeon core).
inline lm_f32x16 lm_broadcast16_from(const float* p) {
  lm_f32x16 v;
  asm("vbroadcastss %1, %0" : "=v"(v) : "m"(*p));
  return v;
}
// 32 int8 values sign-extended to 16-bit lanes: one vpmovsxbw (GCC splits a convertvector into
// two 256-bit halves and a shuffle to join them).
inline lm_i16x32 lm_widen_i8x32(lm_i8x32 v) {
  return __builtin_ia32_pmovsxbw512_mask((char __attribute__((vector_size(32))))v, lm_i16x32{}, (unsigned)-1);
}
// 32 bytes zero-extended to 16-bit lanes: one vpmovzxbw.
inline lm_i16x32 lm_widen_u8x32(lm_i8x32 v) {
  return __builtin_ia32_pmovzxbw512_mask((char __attribute__((vector_size(32))))v, lm_i16x32{}, (unsigned)-1);
}
// table[index & 31] in each 16-bit lane (vpermw).
inline lm_i16x32 lm_lookup16(lm_i16x32 table, lm_i16x32 index) {
  return __builtin_ia32_permvarhi512_mask(table, index, lm_i16x32{}, (unsigned)-1);
}
// A group's sixteen weights in the lookup's index order (q & 15: q = 0..7, then -8..-1), before
// rounding: q * scale + minus_zero_scale, one FMA.
inline lm_f32x16 lm_int4_group_values(const float* scale, const float* minus_zero_scale) {
  const lm_f32x16 iota = {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1};
  return lm_madd16(iota, lm_broadcast16_from(scale), lm_broadcast16_from(minus_zero_scale));
}
// Groups of 32 int4 values (each a byte in [-8, 8)) as a table lookup: a group has only sixteen
// weights, (q - zero) * scale rounded to bf16 for q = 0..7, -8..-1, made by one FMA (the
// small-scale form of the dot path below: the same values) and rounded by vcvtne2ps2bf16 two
// groups at once, group j's sixteen in the low half of 32 bf16 lanes and group j + 1's in the
// high. Each 32 weights are then a sign-extension to 16-bit lanes, an AND (q & 15: q < 0 to lanes
// 8-15) or an OR (q | 16: the high half) and one vpermw: four operations per 32 weights, where
// widening, dequantizing and rounding them took eight. An 8192 x 2048 int4 GEMV on a Xeon core
// with AMX: 2.67 -> 1.99 ns per 32 weights with the weight in L2, 19.1 -> 22.4 GB/s on two cores
// from memory (docs/lessons.md, 2026-12-02). Same bits as the dot path's FMA form.
// The lookup reads only an index's low five bits, so a value outside int4's range would read
// another value's weight, and torchao's int4 tensors hold int8 bytes that nothing else stops a
// user from writing: every byte's q + 8 is ORed together on the way (no bit above the fourth:
// all in range), and the groups are summed only if all were; false leaves acc and acc2 as they
// were, for the FMA form. Checked and prefetched in the loop over the weights, not in passes of
// their own before it: on a Zen 5 the separate pass and its loop took a tenth of the kernel's
// time with the weight in L2 (0.98-1.04 -> 0.86-0.92 ns per 32 weights of an 8192 x 2048
// GEMV on one core; 41-47 -> 48-52 GB/s on two from memory; docs/lessons.md, 2026-12-07).
// `count` groups from `first` (even), S rows' tables at scale[s] and minus_zero_scale[s].
template <int S>
inline bool lm_int4_lookup_groups(const uint16_t* x, const signed char* const* rows, int64_t first, int count,
                                  const float (*scale)[16], const float (*minus_zero_scale)[16], lm_f32x16* acc,
                                  lm_f32x16* acc2) {
  auto values = [&](int s, int j) { return lm_int4_group_values(&scale[s][j], &minus_zero_scale[s][j]); };
  auto weights = [&](const signed char* q, lm_i16x32 table, bool high) {
    lm_i8x32 bytes;
    __builtin_memcpy(&bytes, q, sizeof bytes);
    const lm_i16x32 index = lm_widen_i8x32(bytes);
    return (lm_f32x16)lm_lookup16(table, high ? index | 16 : index & 15);
  };
  // The sums in locals for the loop: through the pointers GCC stored all of them to memory after
  // every step and loaded `x` twice, since a float table's loads might read what they point to.
  lm_f32x16 sums[S], sums2[S];
  for (int s = 0; s < S; ++s) sums[s] = acc[s], sums2[s] = acc2[s];
  lm_i8x64 in_range = {};
  int j = 0;
  for (; j + 2 <= count; j += 2) {
    lm_i16x32 table[S];
    for (int s = 0; s < S; ++s) table[s] = (lm_i16x32)lm_round_bf16_pairs(values(s, j), values(s, j + 1));
    const int64_t k = (first + j) * 32;
    const lm_f32x16 x0 = lm_load_bf16x32(x + k), x1 = lm_load_bf16x32(x + k + 32);
    for (int s = 0; s < S; ++s) {
      __builtin_prefetch(rows[s] + k + lm_stream_prefetch_bytes);
      lm_i8x64 bytes;
      __builtin_memcpy(&bytes, rows[s] + k, sizeof bytes);
      in_range |= bytes + 8;
      sums[s] = lm_dot_bf16_pairs(sums[s], x0, weights(rows[s] + k, table[s], false));
      sums2[s] = lm_dot_bf16_pairs(sums2[s], x1, weights(rows[s] + k + 32, table[s], true));
    }
  }
  if (j < count) {  // a last group, even-numbered: the first sums
    const int64_t k = (first + j) * 32;
    const lm_f32x16 xk = lm_load_bf16x32(x + k);
    for (int s = 0; s < S; ++s) {
      lm_i8x64 bytes = {};
      __builtin_memcpy(&bytes, rows[s] + k, 32);
      in_range |= bytes + 8;  // (the upper half's zeros add 8: in range)
      const lm_f32x16 v = values(s, j);
      sums[s] = lm_dot_bf16_pairs(sums[s], xk, weights(rows[s] + k, (lm_i16x32)lm_round_bf16_pairs(v, v), false));
    }
  }
  const lm_u64x8 above = (lm_u64x8)in_range & 0xf0f0f0f0f0f0f0f0ull;
  if (__builtin_ia32_ptestmq512((__attribute__((vector_size(64))) long long)above,
                                (__attribute__((vector_size(64))) long long)above, (unsigned char)-1) != 0)
    return false;
  for (int s = 0; s < S; ++s) acc[s] = sums[s], acc2[s] = sums2[s];
  return true;
}
// lm_int4_lookup_groups reading the weight's packed copy (runtime/cpu/int4_pairs.h, the
// pack_int4_weights option): byte i of each 64 weights holds weight i's nibble in its low four
// bits and weight 32 + i's in its high four, every one an int4 value (checked when the copy was
// made), so 32 bytes index both groups' tables: a zero-extension to 16-bit lanes, then an AND
// (the low nibbles, group j's half of the table) or a shift and an OR (the high ones, | 16:
// group j + 1's). The tables, products and sums are the byte form's, in its order: the same bits
// from half the bytes. `count` is even: a row of packed values is whole 64-weight blocks.
template <int S>
inline void lm_int4_pair_lookup_groups(const uint16_t* x, const unsigned char* const* pairs, int64_t first, int count,
                                       const float (*scale)[16], const float (*minus_zero_scale)[16], lm_f32x16* acc,
                                       lm_f32x16* acc2) {
  auto values = [&](int s, int j) { return lm_int4_group_values(&scale[s][j], &minus_zero_scale[s][j]); };
  lm_f32x16 sums[S], sums2[S];  // in locals for the loop, as in lm_int4_lookup_groups
  for (int s = 0; s < S; ++s) sums[s] = acc[s], sums2[s] = acc2[s];
  for (int j = 0; j + 2 <= count; j += 2) {
    lm_i16x32 table[S];
    for (int s = 0; s < S; ++s) table[s] = (lm_i16x32)lm_round_bf16_pairs(values(s, j), values(s, j + 1));
    const int64_t k = (first + j) * 32;
    const lm_f32x16 x0 = lm_load_bf16x32(x + k), x1 = lm_load_bf16x32(x + k + 32);
    for (int s = 0; s < S; ++s) {
      const unsigned char* packed = pairs[s] + k / 2;
      if ((j & 2) == 0) __builtin_prefetch(packed + lm_stream_prefetch_bytes);  // once per 64 bytes
      lm_i8x32 bytes;
      __builtin_memcpy(&bytes, packed, sizeof bytes);
      const lm_i16x32 nibbles = lm_widen_u8x32(bytes);
      sums[s] = lm_dot_bf16_pairs(sums[s], x0, (lm_f32x16)lm_lookup16(table[s], nibbles & 15));
      sums2[s] = lm_dot_bf16_pairs(sums2[s], x1, (lm_f32x16)lm_lookup16(table[s], (nibbles >> 4) | 16));
    }
  }
  for (int s = 0; s < S; ++s) acc[s] = sums[s], acc2[s] = sums2[s];
}
#endif
// lm_gemv_row_groups_bf16 where the CPU has AVX512-BF16 and a group is a multiple of 32 weights:
// 32 weights at a time are dequantized in f32 (q * scale - zero * scale in one FMA where every
// |scale| of the table is below 2^102, exact (lm_scales_below_2p102); else
// (q - zero) * scale, exact for any scale), rounded to bf16 by one vcvtne2ps2bf16, the rounding
// lm_dequantize_bf16x8 does in integer lanes (a denormal scale's products aside: they become 0),
// and multiplied by `a` as bf16 (x, lm_bf16_pairs_of) with vdpbf16ps. Per 32
// weights of a row: eight 512-bit instructions (two widenings of two, two FMAs, the rounding, the
// dot product) where the Veltkamp form has 28 of 256 bits, and Zen 4 runs 512 bits at half their
// rate: about 1.4x. The scales of sixteen groups a table. A 4096x4096 int4 GEMV on two Zen 4
// cores took 1,301 us against the Veltkamp form's 1,801 (cpu_isa="avx2"), interleaved in one
// process (docs/lessons.md, 2026-11-28). Groups of 32 int4 values take lm_int4_lookup_groups
// where the CPU has AVX512-BW, from the rows' packed copies where `pairs` is given
// (lm_int4_pair_lookup_groups). Each row's operations are the same whatever S: the same bits.
template <int S>
inline void lm_gemv_row_groups_bf16_dot(const uint16_t* x, const signed char* const* rows, int64_t depth,
                                        int64_t group, const uint16_t* const* scales, int64_t scale_group,
                                        const signed char* const* zeros, int64_t zero_group, float* const* sums,
                                        const unsigned char* const* pairs) {
  typedef lm_lanes16 L;
  constexpr int kTable = 16;
  lm_f32x16 acc[S] = {}, acc2[S] = {};
  const int64_t groups = depth / group;
  for (int64_t first = 0; first < groups; first += kTable) {
    const int count = groups - first < kTable ? (int)(groups - first) : kTable;
    alignas(64) float scale[S][kTable], zero[S][kTable], minus_zero_scale[S][kTable];
    bool small_scales = true;  // every |scale| below 2^102 (false for NaN)
    for (int s = 0; s < S; ++s) {
      // Made sixteen at a time where they are adjacent: made one at a time, the table took a
      // fifth of the kernel's time.
      if (count == kTable && scale_group == 1 && (zeros[s] == nullptr || zero_group == 1)) {
        typedef uint16_t lm_u16x16 __attribute__((vector_size(32)));
        typedef long long lm_i64x4 __attribute__((vector_size(32)));
        // The scales and zero points of the row two on (512 and 256 bytes ahead at 2,048
        // weights a row): without, the weight's stream read 23.5 GB/s on two Xeon cores, with
        // them 24.5-25 (the lookup form, 2026-12-02).
        __builtin_prefetch((const char*)(scales[s] + first) + 512, 0, 2);
        if (zeros[s] != nullptr) __builtin_prefetch(zeros[s] + first + 256, 0, 2);
        lm_u16x16 bits;
        __builtin_memcpy(&bits, scales[s] + first, sizeof bits);
        const lm_u32x16 wide_bits = __builtin_convertvector(bits, lm_u32x16) << 16;
        const lm_f32x16 sv = (lm_f32x16)wide_bits;
        const lm_f32x16 zv = zeros[s] == nullptr ? lm_f32x16{} : lm_widen_i8x16(zeros[s] + first);
        const lm_f32x16 mzs = -(zv * sv);
        __builtin_memcpy(scale[s], &sv, sizeof sv);
        __builtin_memcpy(zero[s], &zv, sizeof zv);
        __builtin_memcpy(minus_zero_scale[s], &mzs, sizeof mzs);
        const lm_u32x16 large = (lm_u32x16)((wide_bits & 0x7fffffffu) >= 0x72800000u);  // 2^102, inf, NaN
        const lm_u32x8 any = __builtin_shufflevector(large, large, 0, 1, 2, 3, 4, 5, 6, 7) |
                             __builtin_shufflevector(large, large, 8, 9, 10, 11, 12, 13, 14, 15);
        small_scales = small_scales && __builtin_ia32_ptestz256((lm_i64x4)any, (lm_i64x4)any);
      } else {
        lm_group_table_one_by_one(scales[s], scale_group, zeros[s], zero_group, first, count, scale[s], zero[s],
                                  minus_zero_scale[s]);
        small_scales &= lm_scales_below_2p102(scale[s], count);
      }
    }
#if defined(__AVX512BW__)
    if (small_scales && group == 32 && pairs != nullptr) {
      lm_int4_pair_lookup_groups<S>(x, pairs, first, count, scale, minus_zero_scale, acc, acc2);
      continue;
    }
    if (small_scales && group == 32 &&
        lm_int4_lookup_groups<S>(x, rows, first, count, scale, minus_zero_scale, acc, acc2))
      continue;
#endif
    for (int s = 0; s < S; ++s)
      for (int64_t j = 0; j < count * group; j += 64)
        __builtin_prefetch(rows[s] + first * group + j + lm_stream_prefetch_bytes);
    // One loop per form, so that the choice is made once per table, not per vector.
    auto run = [&](auto dequantize) {
      for (int j = 0; j < count; ++j)
        for (int64_t k = (first + j) * group; k < (first + j + 1) * group; k += 32) {
          const lm_f32x16 xk = lm_load_bf16x32(x + k);
          for (int s = 0; s < S; ++s) {
            const lm_f32x16 w = lm_round_bf16_pairs(dequantize(s, j, k), dequantize(s, j, k + 16));
            if (j % 2 == 0) acc[s] = lm_dot_bf16_pairs(acc[s], xk, w);
            else acc2[s] = lm_dot_bf16_pairs(acc2[s], xk, w);
          }
        }
    };
    if (small_scales)
      run([&](int s, int j, int64_t k) {
        return L::madd(L::widen(rows[s] + k), L::broadcast(scale[s][j]), L::broadcast(minus_zero_scale[s][j]));
      });
    else
      run([&](int s, int j, int64_t k) {
        return (L::widen(rows[s] + k) - L::broadcast(zero[s][j])) * L::broadcast(scale[s][j]);
      });
  }
  for (int s = 0; s < S; ++s) *sums[s] = L::sum(acc[s] + acc2[s]);
}
#endif
// One group's weights of S rows (from k to k + group, the group G weights where known when
// compiling, else `group`) multiplied by `a` into four sums per row, 32 weights a step, each
// weight dequantized from its row's group constants by `dequantize`; a group's weights past a
// multiple of 32 go to the first sum.
template <int S, int64_t G, class C, class D>
inline void lm_bf16_group_sums(const float* a, const signed char* const* rows, int64_t k, int64_t group,
                               const C* constants, D dequantize, lm_f32x8 (*acc)[4]) {
  const int64_t end = k + (G ? G : group);
  for (; k + 32 <= end; k += 32)
    for (int u = 0; u < 4; ++u) {
      const lm_f32x8 x = lm_load_f32x8(a + k + 8 * u);
      for (int s = 0; s < S; ++s) acc[s][u] = lm_madd8(x, dequantize(rows[s] + k + 8 * u, constants[s]), acc[s][u]);
    }
  for (; k < end; k += 8) {  // a group of 8, 16 or 24 (mod 32)
    const lm_f32x8 x = lm_load_f32x8(a + k);
    for (int s = 0; s < S; ++s) acc[s][0] = lm_madd8(x, dequantize(rows[s] + k, constants[s]), acc[s][0]);
  }
}
// Groups `first` to `first + count` of S rows in lm_dequantize_bf16x8_split's form, from each
// row's table of the groups' zero points and scales times 65537 and -65536.
template <int S, int64_t G>
inline void lm_bf16_split_groups(const float* a, const signed char* const* rows, int64_t first, int count,
                                 int64_t group, const int (*zero_i32)[8], const float (*scale_65537)[8],
                                 const float (*scale_minus_65536)[8], lm_f32x8 (*acc)[4]) {
  for (int j = 0; j < count; ++j) {
    lm_split_constants constants[S];
    for (int s = 0; s < S; ++s)
      constants[s] = lm_split_constants{lm_splat_i32x8(zero_i32[s][j]), lm_splat8(scale_65537[s][j]),
                                        lm_splat8(scale_minus_65536[s][j])};
    lm_bf16_group_sums<S, G>(
        a, rows, (first + j) * group, group, constants,
        [](const signed char* q, const lm_split_constants& c) { return lm_dequantize_bf16x8_split(q, c); }, acc);
  }
}
// Eight groups of 32 from group `first` of S rows in the common case, torchao's [N, groups]
// scales and zero points (adjacent), every |scale| below 2^102: the split's constants made as
// vectors straight from the bf16 scales and int8 zero points, then each group's four sums per
// row (lm_bf16_group_sums). False, having done nothing, in any other case. Built from the general
// form's tables (lm_group_table8, then the constants one by one) the same loop took 1.1-1.3x this
// one's time on a Zen 3 core, interleaved (docs/lessons.md, 2026-12-01).
template <int S>
inline bool lm_bf16_split_table_of_32s(const float* a, const signed char* const* rows, int64_t first, int count,
                                       const uint16_t* const* scales, int64_t scale_group,
                                       const signed char* const* zeros, int64_t zero_group, lm_f32x8 (*acc)[4]) {
  constexpr int kTable = 8;
  if (count != kTable || scale_group != 1) return false;
  alignas(32) int zero_i32[S][kTable];
  alignas(32) float scale_65537[S][kTable], scale_minus_65536[S][kTable];
  for (int s = 0; s < S; ++s) {
    if (zeros[s] != nullptr && zero_group != 1) return false;
    const lm_f32x8 scale = lm_bf16::load8(scales[s] + first);
    if (!lm_scales8_below_2p102(scale)) return false;
    const lm_i32x8 zero = zeros[s] == nullptr ? lm_i32x8{} : lm_widen_i8_i32(zeros[s] + first);
    const lm_f32x8 s1 = scale * 65537.0f, s2 = scale * -65536.0f;
    __builtin_memcpy(scale_65537[s], &s1, sizeof s1);
    __builtin_memcpy(scale_minus_65536[s], &s2, sizeof s2);
    __builtin_memcpy(zero_i32[s], &zero, sizeof zero);
  }
  for (int s = 0; s < S; ++s)
    for (int64_t j = 0; j < kTable * 32; j += 64)
      __builtin_prefetch(rows[s] + first * 32 + j + lm_stream_prefetch_bytes);
  lm_bf16_split_groups<S, 32>(a, rows, first, kTable, 32, zero_i32, scale_65537, scale_minus_65536, acc);
  return true;
}
// S rows (one from each of S blocks far apart in the weight: two streams, as lm_gemv_rows_pair
// reads int8 rows), each read start to end into four sums per row (lm_bf16_group_sums). The
// scales (and zero points) of eight groups are made at once into a small table, vectorised where
// they are adjacent (torchao's [N, groups] layout), and each group broadcasts its own from there
// before its weights; groups of 32 in torchao's layout go through lm_bf16_split_table_of_32s.
// The form before this one summed each row in two sums, sixteen weights a step, and broadcast a
// group's constants inside the loop over its weights: a 5632 x 2048 int4 GEMV took 4.9 cycles
// per eight weights on a Zen 3 core with its weight in L2, 1.4x this form's time, and read
// 8.8 GB/s against this form's 11.9 on two cores from memory (docs/lessons.md, 2026-12-01). Each
// row's operations are the same, in the same order, whatever S: the same bits.
// `pairs`, where given, the rows' int4 values packed two a byte (lm_int4_pair_lookup_groups).
template <int S>
inline void lm_gemv_row_groups_bf16(const float* a, const uint16_t* x, const signed char* const* rows, int64_t depth,
                                    int64_t group, const uint16_t* const* scales, int64_t scale_group,
                                    const signed char* const* zeros, int64_t zero_group, float* const* sums,
                                    const unsigned char* const* pairs) {
#if defined(__AVX512BF16__)
  if (group % 32 == 0)
    return lm_gemv_row_groups_bf16_dot<S>(x, rows, depth, group, scales, scale_group, zeros, zero_group, sums, pairs);
#endif
  constexpr int kTable = 8;
  lm_f32x8 acc[S][4] = {};
  const int64_t groups = depth / group;
  for (int64_t first = 0; first < groups; first += kTable) {
    const int count = groups - first < kTable ? (int)(groups - first) : kTable;
    if (group == 32 &&
        lm_bf16_split_table_of_32s<S>(a, rows, first, count, scales, scale_group, zeros, zero_group, acc))
      continue;
    alignas(32) float scale[S][kTable], zero[S][kTable], minus_zero_scale[S][kTable];
    bool split = true;
    for (int s = 0; s < S; ++s) {
      for (int64_t j = 0; j < count * group; j += 64)
        __builtin_prefetch(rows[s] + first * group + j + lm_stream_prefetch_bytes);
      if (count == kTable && scale_group == 1 && (zeros[s] == nullptr || zero_group == 1)) {
        split &= lm_group_table8(scales[s], zeros[s], first, scale[s], zero[s], minus_zero_scale[s]);
      } else {
        lm_group_table_one_by_one(scales[s], scale_group, zeros[s], zero_group, first, count, scale[s], zero[s],
                                  minus_zero_scale[s]);
        split &= lm_scales_below_2p102(scale[s], count);
      }
    }
    // One loop per form, so that the choice is made once per eight groups, not per vector.
    if (split) {
      alignas(32) int zero_i32[S][kTable];
      alignas(32) float scale_65537[S][kTable], scale_minus_65536[S][kTable];
      for (int s = 0; s < S; ++s)
        for (int j = 0; j < count; ++j) {
          zero_i32[s][j] = (int)zero[s][j];
          scale_65537[s][j] = scale[s][j] * 65537.0f;
          scale_minus_65536[s][j] = scale[s][j] * -65536.0f;
        }
      lm_bf16_split_groups<S, 0>(a, rows, first, count, group, zero_i32, scale_65537, scale_minus_65536, acc);
    } else {
      for (int j = 0; j < count; ++j) {
        lm_f32x8 constants[S][2];  // each row's zero point and scale
        for (int s = 0; s < S; ++s) {
          constants[s][0] = lm_splat8(zero[s][j]);
          constants[s][1] = lm_splat8(scale[s][j]);
        }
        lm_bf16_group_sums<S, 0>(
            a, rows, (first + j) * group, group, constants,
            [](const signed char* q, const lm_f32x8* c) { return lm_dequantize_bf16x8(q, c[0], c[1]); }, acc);
      }
    }
  }
  for (int s = 0; s < S; ++s) *sums[s] = lm_sum8((acc[s][0] + acc[s][1]) + (acc[s][2] + acc[s][3]));
}
// R rows from each of S blocks of a grouped GEMV whose groups are whole vectors (w[s], scale[s],
// zero[s] where block s starts; its sums to sums[s]): f32 scales sum each group and scale the sum
// (lm_gemv_rows_grouped_f32_lanes); bf16 ones dequantize every weight (lm_gemv_row_groups_bf16),
// row r of every block together, with `a` widened to f32 once per call by the emitter. `pairs`:
// each block's int4 values packed two a byte (runtime/cpu/int4_pairs.h, rows row_stride / 2
// bytes apart), or null; bf16 groups of 32 read them instead of w.
template <int R, int S, class TA, class TS>
inline void lm_gemv_rows_grouped_blocks(const TA* a, const signed char* const* w, int64_t row_stride, int64_t depth,
                                        int64_t group, const TS* const* scale, int64_t scale_row, int64_t scale_group,
                                        const signed char* const* zero, int64_t zero_row, int64_t zero_group,
                                        lm_group_totals* totals, float* const* sums,
                                        const unsigned char* const* pairs) {
  if constexpr (sizeof(TS) == 4) {
    (void)pairs;  // f32 activations sum each group and scale the sum: no lookup to read them
    lm_gemv_rows_grouped_f32_lanes<R, S>(a, w, row_stride, depth, group, scale, scale_row, scale_group, zero, zero_row,
                                         zero_group, totals, sums);
  } else {
    static_assert(sizeof(TA) == 4, "a bf16 grouped GEMV's activations are widened to f32 once per call");
    const uint16_t* x = nullptr;  // `a` as bf16, where the rows take vdpbf16ps
#if defined(__AVX512BF16__)
    if (group % 32 == 0) x = lm_bf16_pairs_of(a, depth, totals);
#endif
    for (int r = 0; r < R; ++r) {
      const signed char* rows[S];
      const TS* scales[S];
      const signed char* zeros[S];
      float* row_sums[S];
      const unsigned char* pair_rows[S];
      for (int s = 0; s < S; ++s) {
        rows[s] = w[s] + r * row_stride;
        scales[s] = scale[s] + r * scale_row;
        zeros[s] = zero[s] ? zero[s] + r * zero_row : nullptr;
        row_sums[s] = sums[s] + r;
        pair_rows[s] = pairs ? pairs[s] + r * (row_stride / 2) : nullptr;
      }
      lm_gemv_row_groups_bf16<S>(a, x, rows, depth, group, scales, scale_group, zeros, zero_group, row_sums,
                                 pairs ? pair_rows : nullptr);
    }
  }
}
template <int R, class TA, class TS>
inline void lm_gemv_rows_grouped(const TA* a, const signed char* w, int64_t row_stride, int64_t depth, int64_t group,
                                 const TS* scale, int64_t scale_row, int64_t scale_group, const signed char* zero,
                                 int64_t zero_row, int64_t zero_group, lm_group_totals* totals, float* sums,
                                 const unsigned char* pairs = nullptr) {
  auto zero_point = [&](int r, int64_t g) { return zero ? (float)zero[r * zero_row + g * zero_group] : 0.0f; };
  if (group % 8 != 0) {  // no whole vectors per group: one weight at a time
    for (int r = 0; r < R; ++r) {
      float t = 0.0f;
      for (int64_t k = 0; k < depth; ++k) {
        const float weight = (w[r * row_stride + k] - zero_point(r, k / group)) *
                             lm_load_f32(scale + r * scale_row + k / group * scale_group);
        t += lm_load_f32(a + k) * (sizeof(TS) == 2 ? lm_rbf(weight) : weight);
      }
      sums[r] = t;
    }
    return;
  }
  const signed char* const ws[1] = {w};
  const TS* const scales[1] = {scale};
  const signed char* const zeros[1] = {zero};
  float* const all_sums[1] = {sums};
  const unsigned char* const all_pairs[1] = {pairs};
  lm_gemv_rows_grouped_blocks<R, 1>(a, ws, row_stride, depth, group, scales, scale_row, scale_group, zeros, zero_row,
                                    zero_group, totals, all_sums, pairs ? all_pairs : nullptr);
}
// The block of R rows at w and the one `half` rows further, as lm_gemv_rows_pair reads int8 rows:
// two streams, for groups of whole vectors; groups of any other size one block after the other.
// Each row's sums are lm_gemv_rows_grouped's.
template <int R, class TA, class TS>
inline void lm_gemv_rows_grouped_pair(const TA* a, const signed char* w, int64_t row_stride, int64_t depth,
                                      int64_t group, const TS* scale, int64_t scale_row, int64_t scale_group,
                                      const signed char* zero, int64_t zero_row, int64_t zero_group,
                                      lm_group_totals* totals, int64_t half, float* sums0, float* sums1,
                                      const unsigned char* pairs = nullptr) {
  const signed char* const ws[2] = {w, w + half * row_stride};
  const TS* const scales[2] = {scale, scale + half * scale_row};
  const signed char* const zeros[2] = {zero, zero ? zero + half * zero_row : nullptr};
  if (group % 8 == 0) {
    float* const sums[2] = {sums0, sums1};
    const unsigned char* const both_pairs[2] = {pairs, pairs ? pairs + half * (row_stride / 2) : nullptr};
    lm_gemv_rows_grouped_blocks<R, 2>(a, ws, row_stride, depth, group, scales, scale_row, scale_group, zeros, zero_row,
                                      zero_group, totals, sums, pairs ? both_pairs : nullptr);
    return;
  }
  lm_gemv_rows_grouped<R>(a, ws[0], row_stride, depth, group, scales[0], scale_row, scale_group, zeros[0], zero_row,
                          zero_group, totals, sums0);
  lm_gemv_rows_grouped<R>(a, ws[1], row_stride, depth, group, scales[1], scale_row, scale_group, zeros[1], zero_row,
                          zero_group, totals, sums1);
}
}  // namespace
)LUMINAL";

// The helpers of the explicit 16-lane loops (codegen/cpp/emit.cpp, lane loops): elementwise f32
// and bf16 code over contiguous elements where the CPU has AVX512-BF16. Each gives the bits its
// scalar twin gives every lane. GCC cannot vectorise the scalar bf16 rounding (lm_f2bf, lm_rbf)
// into vcvtneps2bf16: its seven integer operations per vector were two thirds of a bf16
// RMSNorm's (2026-12-06 (morning)). Only there: on AVX-512 without BF16 the same lanes rounding
// with those integer operations ran a bf16 RMSNorm 12-15% slower than GCC's vectorised scalar
// loop (2026-12-06 (afternoon)).
constexpr const char* kLaneHelpers = R"LUMINAL(namespace {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
#define LM_LANE_LOOPS 1
typedef int lm_i32x16 __attribute__((vector_size(64)));
typedef unsigned short lm_u16x16 __attribute__((vector_size(32)));
typedef short lm_i16x16 __attribute__((vector_size(32)));
// Sixteen bf16 bits as f32: one vpmovzxwd to 512 bits and a shift (GCC 12 widened a
// __builtin_convertvector in 256-bit halves and joined them: five instructions).
inline lm_f32x16 lm_widen_bf16_lanes(lm_u16x16 h) {
  return (lm_f32x16)((lm_u32x16)__builtin_ia32_pmovzxwd512_mask((lm_i16x16)h, lm_i32x16{}, (unsigned short)-1) << 16);
}
// The low halves of sixteen 32-bit lanes: one vpmovdw.
inline lm_u16x16 lm_narrow_lanes(lm_u32x16 u) {
  return (lm_u16x16)__builtin_ia32_pmovdw512_mask((lm_i32x16)u, lm_i16x16{}, (unsigned short)-1);
}
inline lm_f32x16 lm_lanes_f32(const float* p) {
  lm_f32x16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline lm_f32x16 lm_lanes_bf16(const uint16_t* p) {
  lm_u16x16 h;
  __builtin_memcpy(&h, p, sizeof h);
  return lm_widen_bf16_lanes(h);
}
inline void lm_store_lanes_f32(float* p, lm_f32x16 v) { __builtin_memcpy(p, &v, sizeof v); }
// lm_f2bf on every lane, with lm_bf16_rounded_bits' integer operations.
inline lm_u16x16 lm_f2bf_lanes_exact(lm_f32x16 x) {
  return lm_narrow_lanes(lm_bf16_rounded_bits_of<lm_u32x16>(x) >> 16);
}
// lm_f2bf on every lane. vcvtneps2bf16 rounds to nearest even and quiets a NaN keeping its sign
// and top payload, as lm_f2bf does, but takes a denormal input as zero: a vector holding one goes
// the integer way.
inline lm_u16x16 lm_f2bf_lanes(lm_f32x16 x) {
  if (__builtin_expect(__builtin_ia32_fpclassps512_mask(x, 0x20 /* denormal */, (unsigned short)-1) != 0, 0))
    return lm_f2bf_lanes_exact(x);
  lm_u16x16 h;
  asm("vcvtneps2bf16 %1, %0" : "=v"(h) : "v"(x));
  return h;
}
inline lm_f32x16 lm_rbf(lm_f32x16 x) { return lm_widen_bf16_lanes(lm_f2bf_lanes(x)); }
inline void lm_store_lanes_bf16(uint16_t* p, lm_f32x16 v) {
  const lm_u16x16 h = lm_f2bf_lanes(v);
  __builtin_memcpy(p, &h, sizeof h);
}
// lm_exp_reduced, lm_two_to, lm_exp_one_power, lm_sigmoid and lm_expf on every lane: the same
// operations in the same order as the scalar ones in kMathHelpers (tests/ops/test_lane_loops.py
// compares the two builds bit for bit). erf's twin (lm_erff_lanes, below) takes four vectors at
// once: on one vector, GCC's vectorised scalar erf had run a bf16 gelu 3% faster than it did.
inline lm_f32x16 lm_exp_reduced(lm_f32x16 y, lm_f32x16& n) {
  n = __builtin_ia32_rndscaleps_mask(y * 1.44269504088896341f, 4 /* rint */, lm_f32x16{}, (unsigned short)-1, 4);
  return lm_exp_reduced_lanes(y, n);
}
inline lm_f32x16 lm_two_to(lm_f32x16 n) {
  return (lm_f32x16)((lm_u32x16)(__builtin_convertvector(n, lm_i32x16) + 127) << 23);
}
inline lm_f32x16 lm_exp_one_power(lm_f32x16 x) {
  lm_f32x16 n;
  const lm_f32x16 er = lm_exp_reduced(x, n);
  return er * lm_two_to(n);
}
inline lm_f32x16 lm_sigmoid(lm_f32x16 x) {
  const lm_f32x16 y = -x, lowest = lm_splat16(lm_exp_lowest), highest = lm_splat16(89.0f);
  return 1.0f / (1.0f + lm_exp_one_power(y < lowest ? lowest : y > highest ? highest : y));
}
inline lm_f32x16 lm_expf(lm_f32x16 x) {
  const lm_f32x16 lowest = lm_splat16(-104.0f), highest = lm_splat16(89.0f);
  lm_f32x16 n;
  const lm_f32x16 er = lm_exp_reduced(x < lowest ? lowest : x > highest ? highest : x, n);
  const lm_i32x16 whole = __builtin_convertvector(n, lm_i32x16), half = whole >> 1;
  const lm_f32x16 low = (lm_f32x16)((lm_u32x16)(half + 127) << 23);
  const lm_f32x16 high = (lm_f32x16)((lm_u32x16)(whole - half + 127) << 23);
  return x < lowest ? lm_f32x16{} : er * low * high;
}
// lm_erff on K vectors of sixteen lanes, each lane the scalar one's operations in the same
// order (the same bits), each step for all K vectors before the next. One erf is a chain of ~30
// dependent steps, and the core overlaps only a few vectors' chains where each comes whole: with
// four interleaved, gelu's bf16 kernel ran 1.25x (f32 1.04x) faster on a Zen 5 core than GCC's
// vectorised scalar loop, with two 1.14x, with eight slower again (spills) (2026-12-06 (night)).
template <int K>
inline void lm_erff_lanes(const lm_f32x16* x, lm_f32x16* out) {
  lm_f32x16 ax[K], t[K], t2[K], p01[K], p23[K], p45[K], p[K], below_one[K];
  lm_f32x16 xc[K], u[K], u2[K], q01[K], q23[K], q45[K], q[K], y[K], n[K], m[K], two_n[K], from_one[K];
  for (int k = 0; k < K; ++k) ax[k] = (lm_f32x16)((lm_u32x16)x[k] & 0x7fffffffu);
  for (int k = 0; k < K; ++k) t[k] = ax[k] * ax[k];
  for (int k = 0; k < K; ++k) t2[k] = t[k] * t[k];
  for (int k = 0; k < K; ++k) p01[k] = lm_madd16(lm_splat16(-3.761262583963134e-01f), t[k], lm_splat16(1.283791657323385e-01f));
  for (int k = 0; k < K; ++k) p23[k] = lm_madd16(lm_splat16(-2.6853815987219237e-02f), t[k], lm_splat16(1.1283585269118034e-01f));
  for (int k = 0; k < K; ++k) p45[k] = lm_madd16(lm_splat16(-8.01024591295114e-04f), t[k], lm_splat16(5.188334323542069e-03f));
  for (int k = 0; k < K; ++k) p[k] = lm_madd16(lm_splat16(7.854019990888662e-05f), t2[k], p45[k]);
  for (int k = 0; k < K; ++k) p23[k] = lm_madd16(p23[k], t2[k], p01[k]);
  for (int k = 0; k < K; ++k) p[k] = lm_madd16(p[k], t2[k] * t2[k], p23[k]);
  for (int k = 0; k < K; ++k) below_one[k] = lm_madd16(ax[k], p[k], ax[k]);
  for (int k = 0; k < K; ++k) xc[k] = ax[k] > 4.0f ? lm_splat16(4.0f) : ax[k];  // NaN stays NaN
  for (int k = 0; k < K; ++k) u[k] = xc[k] - 2.5f;
  for (int k = 0; k < K; ++k) u2[k] = u[k] * u[k];
  for (int k = 0; k < K; ++k) q01[k] = lm_madd16(lm_splat16(-3.5269395542327037e-01f), u[k], lm_splat16(-1.5568178920679518f));
  for (int k = 0; k < K; ++k) q23[k] = lm_madd16(lm_splat16(-1.0711248820741228e-02f), u[k], lm_splat16(5.611686192596473e-02f));
  for (int k = 0; k < K; ++k) q45[k] = lm_madd16(lm_splat16(-1.51964631753623e-04f), u[k], lm_splat16(2.465396538162899e-03f));
  for (int k = 0; k < K; ++k) q[k] = lm_madd16(lm_splat16(1.8638027149990997e-04f), u2[k], q45[k]);
  for (int k = 0; k < K; ++k) q23[k] = lm_madd16(q23[k], u2[k], q01[k]);
  for (int k = 0; k < K; ++k) q[k] = lm_madd16(q[k], u2[k] * u2[k], q23[k]);
  for (int k = 0; k < K; ++k) y[k] = lm_madd16(-xc[k], xc[k], q[k]);
  for (int k = 0; k < K; ++k)
    n[k] = __builtin_ia32_rndscaleps_mask(y[k] * 1.44269504088896341f, 4 /* rint */, lm_f32x16{}, (unsigned short)-1, 4);
  lm_expm1_reduced_lanes<K>(y, n, m);
  for (int k = 0; k < K; ++k) two_n[k] = lm_two_to(n[k]);
  for (int k = 0; k < K; ++k) from_one[k] = lm_madd16(-m[k], two_n[k], 1.0f - two_n[k]);
  for (int k = 0; k < K; ++k) {
    const lm_f32x16 e = ax[k] < 1.0f ? below_one[k] : from_one[k];
    out[k] = (lm_f32x16)(((lm_u32x16)e & 0x7fffffffu) | ((lm_u32x16)x[k] & 0x80000000u));
  }
}
// Values that already are bf16 (lm_bf16_bits): their upper halves.
inline void lm_store_lanes_bf16_bits(uint16_t* p, lm_f32x16 v) {
  const lm_u16x16 h = lm_narrow_lanes((lm_u32x16)v >> 16);
  __builtin_memcpy(p, &h, sizeof h);
}
#else
#define LM_LANE_LOOPS 0
#endif

// Running sums of eight rows at once (a Scan kernel's row blocks, codegen/kernel.h ScanSpec),
// each row a contiguous run of n elements. The scalar scan is one dependent add per element, a
// latency chain; here an 8 x 8 tile of the rows is transposed so that one vector add takes a
// column, the next element of eight rows, and transposed back to be stored. Each row's elements
// are still added one after another, in the scalar loop's order and accumulator (double for
// f32, float for bf16, ir::scan_accumulator: lm_cumsum_element says which), so the bits are the
// scalar loop's. A block of fewer rows repeats its last row's pointers: the repeat writes the
// values the row gets anyway. (lm_transpose8 turns the tile's rows into its columns and back.)
typedef double lm_f64x8 __attribute__((vector_size(64)));
template <class T> struct lm_cumsum_element;
template <> struct lm_cumsum_element<float> {
  typedef lm_f64x8 Sums;
  // Adds a column to the sums and gives the values stored: the sums rounded to f32.
  static lm_f32x8 add(Sums& sum, lm_f32x8 column) {
    sum += __builtin_convertvector(column, lm_f64x8);
    return __builtin_convertvector(sum, lm_f32x8);
  }
  static void store(float* p, lm_f32x8 v) { __builtin_memcpy(p, &v, sizeof v); }
  static double widen(float x) { return x; }
  static float narrow(double sum) { return (float)sum; }
};
template <> struct lm_cumsum_element<uint16_t> {
  typedef lm_f32x8 Sums;
  // The sums rounded to bf16 (lm_bf16_rounded_bits on every lane), still in f32 lanes.
  static lm_f32x8 add(Sums& sum, lm_f32x8 column) {
    sum += column;
    return (lm_f32x8)lm_bf16_rounded_bits_of<lm_u32x8>(sum);
  }
  static void store(uint16_t* p, lm_f32x8 v) {
    typedef unsigned short lm_u16x8 __attribute__((vector_size(16)));
    const lm_u16x8 h = __builtin_convertvector((lm_u32x8)v >> 16, lm_u16x8);
    __builtin_memcpy(p, &h, sizeof h);
  }
  static float widen(uint16_t x) { return lm_bf2f(x); }
  static uint16_t narrow(float sum) { return lm_f2bf(sum); }
};
template <class T>
inline void lm_cumsum_rows8(const T* const* in, T* const* out, int64_t n) {
  typedef lm_cumsum_element<T> E;
  typename E::Sums sum = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    lm_f32x8 t[8];
    for (int r = 0; r < 8; ++r) t[r] = lm_load_f32x8(in[r] + j);
    lm_transpose8(t);
    for (int c = 0; c < 8; ++c) t[c] = E::add(sum, t[c]);
    lm_transpose8(t);
    for (int r = 0; r < 8; ++r) E::store(out[r] + j, t[r]);
  }
  for (; j < n; ++j)
    for (int r = 0; r < 8; ++r) {
      sum[r] += E::widen(in[r][j]);
      out[r][j] = E::narrow(sum[r]);
    }
}
}  // namespace
)LUMINAL";

}  // namespace

const std::string& prelude() {
  static const std::string text = std::string("// Generated by luminal. Do not edit.\n") + kHalfSource + kHelpers + scalar_helpers_source() + kMathHelpers +
                                 kLaneHelpers;
  return text;
}

}  // namespace luminal::codegen::cpp
