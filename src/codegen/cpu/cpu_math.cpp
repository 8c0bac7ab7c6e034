#include "codegen/cpu/cpu_math.h"

namespace gf::codegen {

namespace {

// exp of a double in [-745, 709] (callers clamp), relative error below 1e-13: 2^n * e^r with
// n = round(y / ln 2) and |r| <= ln(2)/2, the degree-10 Taylor polynomial of e^r, and 2^n built in
// the exponent bits. Rounding 1.5 * 2^52 + y / ln 2 leaves n in the low mantissa bits.
// Coefficients of erf: erf(a) = a * P(2a^2 - 1) on [0, 1], and erfc(a) = exp(-a^2) * Q((a -
// 2.5) / 1.5) on [1, 4] (erf(a) rounds to 1 in float beyond 4): Chebyshev fits converted to
// powers of the shifted variable, relative errors 2e-14 and 2.5e-10 (so erf's absolute error
// on [1, 4] stays below 4e-11, far under half a float ulp there).
constexpr const char* kCpuMath = R"(
static inline double gf_exp_core(double y) {
  const double k = y * 0x1.71547652b82fep+0 + 0x1.8p52;
  const double n = k - 0x1.8p52;
  const double r = (y - n * 0x1.62e42fefa39efp-1) - n * 0x1.abc9e3b39803fp-56;
  // Estrin's scheme: a short dependency chain matters where the loop stays scalar.
  const double r2 = r * r, r4 = r2 * r2;
  const double p01 = 1.0 + r, p23 = 0.5 + r * 0x1.5555555555555p-3;
  const double p45 = 0x1.5555555555555p-5 + r * 0x1.1111111111111p-7;
  const double p67 = 0x1.6c16c16c16c17p-10 + r * 0x1.a01a01a01a01ap-13;
  const double p89 = 0x1.a01a01a01a01ap-16 + r * 0x1.71de3a556c734p-19;
  const double p8a = p89 + r2 * 0x1.27e4fb7789f5cp-22;  // 1/8!, 1/9!, 1/10!
  const double p = (p01 + r2 * p23) + r4 * ((p45 + r2 * p67) + r4 * p8a);
  int64_t kb;
  memcpy(&kb, &k, sizeof kb);
  const int64_t scale_bits = (kb - 0x4338000000000000LL + 1023) << 52;
  double scale;
  memcpy(&scale, &scale_bits, sizeof scale);
  return p * scale;
}
static inline float gf_tanhf(float x) {
  double a = std::fabs((double)x);
  a = a > 10.0 ? 10.0 : a;  // tanh(10) rounds to 1 in float
  const double e = gf_exp_core(2.0 * a);
  const double big = (e - 1.0) / (e + 1.0);
  // Below 1/16 the quotient loses digits to e - 1; the series does not.
  const double a2 = a * a;
  const double small = a * (1.0 + a2 * (-0x1.5555555555555p-2 + a2 * (0x1.1111111111111p-3 +
                                      a2 * -0x1.ba1ba1ba1ba1cp-5)));
  return (float)std::copysign(a < 0x1p-4 ? small : big, (double)x);
}
static inline float gf_erff(float x) {
  double a = std::fabs((double)x);
  a = a > 4.0 ? 4.0 : a;
  const double a2 = a * a;
  const double u = 2.0 * a2 - 1.0;
  double p = -0x1.c1d8260cf974dp-33;
  p = p * u + 0x1.1c6a2269881dbp-28;
  p = p * u + -0x1.429d6ffcc88eep-24;
  p = p * u + 0x1.4864d6cf6031ap-20;
  p = p * u + -0x1.26399236e3333p-16;
  p = p * u + 0x1.c82aa346b7180p-13;
  p = p * u + -0x1.2b902b7b02336p-9;
  p = p * u + 0x1.454368013bd27p-6;
  p = p * u + -0x1.1fd162921528dp-3;
  p = p * u + 0x1.ee51eb23cb88ap-1;
  const double t = (a - 2.5) * 0x1.5555555555555p-1;
  double q = 0x1.e6ad498003f8bp-20;
  q = q * t + -0x1.5372dbe188fb2p-18;
  q = q * t + 0x1.f58a8421cd5a9p-18;
  q = q * t + -0x1.57c25650ce256p-16;
  q = q * t + 0x1.0b0fb050670a6p-14;
  q = q * t + -0x1.58f9e59010161p-13;
  q = q * t + 0x1.ac67c2ffce451p-12;
  q = q * t + -0x1.07663656ab9bfp-10;
  q = q * t + 0x1.3b1199d95ffc6p-9;
  q = q * t + -0x1.6d18adafd0c16p-8;
  q = q * t + 0x1.9940512dca46bp-7;
  q = q * t + -0x1.ba745613d527cp-6;
  q = q * t + 0x1.cba83c3bb310bp-5;
  q = q * t + -0x1.c8ca440ef2a5ep-4;
  q = q * t + 0x1.afbb3f3b39ef8p-3;
  const double erfc = gf_exp_core(-a2) * q;
  return (float)std::copysign(a < 1.0 ? a * p : 1.0 - erfc, (double)x);
}
)";

}  // namespace

Target cpu_kernel_target() {
  Target t = cpu_target();
  t.f32_math_overrides["tanh"] = "gf_tanhf";
  t.f32_math_overrides["erf"] = "gf_erff";
  return t;
}

std::string cpu_math_prelude() {
  return std::string("// Vectorisable float math (cpu).") + kCpuMath;
}

}  // namespace gf::codegen
