// The helper functions that emitted scalar expressions call, as source text for a target.
// Each mirrors a reference-kernel helper (elementwise_family.h, cast.cpp, src/ir/dtype.cpp) so
// generated code and the oracle agree bit for bit.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "codegen/common/scalar_emitter.h"

namespace gf::codegen {

namespace {

// Replaces each `$KEY` of `text` by its value; longer keys first, so $I leaves $ISFINITE alone.
std::string substitute(std::string text, std::vector<std::pair<std::string, std::string>> subs) {
  std::stable_sort(subs.begin(), subs.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [key, value] : subs) {
    for (size_t pos = text.find(key); pos != std::string::npos;
         pos = text.find(key, pos + value.size())) {
      text.replace(pos, key.size(), value);
    }
  }
  return text;
}

constexpr const char* kBitCasts = R"(
$I uint32_t gf_float_as_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }
$I float gf_bits_as_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
)";

// Same algorithms as gf::float_to_half_bits / half_bits_to_float / the bf16 pair.
constexpr const char* k16BitHelpers = R"(
$I float gf_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return $BITS2F(sign);
    int e = -1;
    do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
    return $BITS2F(sign | (uint32_t)(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13);
  }
  if (exp == 0x1f) return $BITS2F(sign | 0x7f800000u | mant << 13);
  return $BITS2F(sign | (exp + 127 - 15) << 23 | mant << 13);
}
$I uint16_t gf_f32_to_f16(float f) {
  const uint32_t x = $F2BITS(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    if (abs < 0x33000000u) return sign;
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exp;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t midpoint = 1u << (shift - 1);
    if (rem > midpoint || (rem == midpoint && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((abs >> 23) - 127 + 15) << 10 | (abs & 0x7fffffu) >> 13;
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return (uint16_t)(sign | half);
}
$I float gf_bf16_to_f32(uint16_t b) { return $BITS2F((uint32_t)b << 16); }
$I uint16_t gf_f32_to_bf16(float f) {
  const uint32_t x = $F2BITS(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
)";

// Narrowing with round-to-odd before a second rounding to a 16-bit format, as the reference
// Cast does, so that the two roundings equal one.
constexpr const char* kRoundOdd = R"(
$I float gf_f64_to_f32_odd(double d) {
  float f = (float)d;
  const uint32_t bits = $F2BITS(f);
  if ($ISFINITE(f) && (double)f != d && (bits & 1u) == 0) {
    // One step toward d: away from zero when d is beyond f on f's side of zero.
    const bool away = ((double)f < d) == ((bits & 0x80000000u) == 0);
    f = $BITS2F(away ? bits + 1u : bits - 1u);
  }
  return f;
}
$I float gf_i64_to_f32_odd(int64_t v) {
  const bool negative = v < 0;
  uint64_t m = negative ? 0 - (uint64_t)v : (uint64_t)v;
  int exponent = 0;
  bool sticky = false;
  while (m >= ((uint64_t)1 << 24)) { sticky |= (m & 1u) != 0; m >>= 1; ++exponent; }
  if (sticky) m |= 1u;
  const float f = $LDEXP((float)m, exponent);
  return negative ? -f : f;
}
)";

// Integer helpers: division and remainder never trap (a zero divisor gives 0: generated code
// cannot raise the reference's error), min / -1 wraps.
constexpr const char* kIntegerTemplates = R"(
template <class T> $I T gf_max(T acc, T v) { return (v != v || v > acc) ? v : acc; }
template <class T> $I T gf_min(T acc, T v) { return (v != v || v < acc) ? v : acc; }
template <class T> $I T gf_clip(T x, T lo, T hi) { x = x < lo ? lo : x; return x > hi ? hi : x; }
template <class T> $I T gf_clamp01(T v) { return v < T(0) ? T(0) : v > T(1) ? T(1) : v; }
template <class T> $I T gf_idiv(T a, T b) {
  if (b == 0) return 0;
  if (T(-1) < T(0) && b == T(-1)) return (T)(0 - (uint64_t)a);
  return (T)(a / b);
}
template <class T> $I T gf_imod(T a, T b, bool python_sign) {
  if (b == 0) return 0;
  if (T(-1) < T(0) && b == T(-1)) return 0;
  T r = (T)(a % b);
  if (python_sign && r != 0 && ((r < 0) != (b < 0))) r = (T)(r + b);
  return r;
}
)";

// Wrapping arithmetic per integer type, through the unsigned type (signed overflow is UB).
constexpr const char* kWrapping = R"(
$I $T gf_wadd($T a, $T b) { return ($T)($U)(($U)a + ($U)b); }
$I $T gf_wsub($T a, $T b) { return ($T)($U)(($U)a - ($U)b); }
$I $T gf_wmul($T a, $T b) { return ($T)($U)(($U)a * ($U)b); }
$I $T gf_ipow($T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if ($T(-1) < $T(0) && base == $T(-1)) return e % 2 == 0 ? $T(1) : $T(-1);
    return 0;
  }
  $T result = 1;
  while (e > 0) {
    if (e & 1) result = gf_wmul(result, base);
    base = gf_wmul(base, base);
    e >>= 1;
  }
  return result;
}
)";

// Float to integer: truncation toward zero, saturating, NaN -> 0 (float_to_int).
constexpr const char* kFloatToInt = R"(
$I $T gf_f2i_$N(double v) {
  if (v != v) return 0;
  if (v >= $HI) return $MAX;
  if (v <= $MIN) return $MIN;
  return ($T)v;
}
)";

// The float activations with more than one use of x, per float type.
constexpr const char* kFloatHelpers = R"(
// 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: one exp of -|x| and one division, with no
// branch for the compiler to turn into both paths.
$I $T gf_sigmoid($T x) {
  const $T e = $EXP(-$FABS(x));
  return (x >= $T(0) ? $T(1) : e) / ($T(1) + e);
}
$I $T gf_softplus($T x) { return $LOG1P($EXP(-$FABS(x))) + (x > $T(0) ? x : $T(0)); }
)";

struct IntType {
  const char* c_type;
  const char* unsigned_type;
  const char* short_name;
  const char* hi;  // 2^digits, exact as a double
  const char* max;
  const char* min;
};

constexpr IntType kIntTypes[] = {
    {"int64_t", "uint64_t", "i64", "9223372036854775808.0", "INT64_MAX", "INT64_MIN"},
    {"int32_t", "uint32_t", "i32", "2147483648.0", "INT32_MAX", "INT32_MIN"},
    {"int8_t", "uint8_t", "i8", "128.0", "INT8_MAX", "INT8_MIN"},
    {"uint8_t", "uint8_t", "u8", "256.0", "UINT8_MAX", "0"},
};

}  // namespace

std::string scalar_prelude(const Target& t) {
  const std::vector<std::pair<std::string, std::string>> common = {
      {"$I", t.inline_kw},
      {"$F2BITS", t.float_as_bits},
      {"$BITS2F", t.bits_as_float},
      {"$ISFINITE", math_fn(t, "isfinite", DType::kF32)},
      {"$LDEXP", math_fn(t, "ldexp", DType::kF32)},
  };
  std::string out = "// Scalar helpers (" + t.name + ").\n";
  if (t.define_bit_casts) out += substitute(kBitCasts, common);
  if (t.define_16bit_helpers) out += substitute(k16BitHelpers, common);
  out += substitute(kRoundOdd, common);
  out += substitute(kIntegerTemplates, common);
  for (const IntType& it : kIntTypes) {
    auto subs = common;
    subs.insert(subs.begin(), {{"$T", it.c_type},
                               {"$U", it.unsigned_type},
                               {"$N", it.short_name},
                               {"$HI", it.hi},
                               {"$MAX", it.max},
                               {"$MIN", it.min}});
    out += substitute(kWrapping, subs);
    out += substitute(kFloatToInt, subs);
  }
  for (DType ft : {DType::kF32, DType::kF64}) {
    auto subs = common;
    subs.insert(subs.begin(), {{"$T", compute_c_type(ft)},
                               {"$EXP", math_fn(t, "exp", ft)},
                               {"$LOG1P", math_fn(t, "log1p", ft)},
                               {"$FABS", math_fn(t, "fabs", ft)}});
    out += substitute(kFloatHelpers, subs);
  }
  return out;
}

}  // namespace gf::codegen
