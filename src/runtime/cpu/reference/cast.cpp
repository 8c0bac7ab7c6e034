// Reference kernels for Cast and CastLike: every pair of the nine dtypes. Each conversion
// rounds exactly once: to-nearest-even into floats, truncation toward zero into integers
// (saturating out of range, see float_to_int), modular between integers, x != 0 into bool.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/cpu/reference/elementwise_family.h"

namespace gf::ref {

namespace {

template <class T>
inline constexpr bool kIs16BitFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// Narrowing to float with round-to-odd: the float's 24 bits are more than twice the 11 (f16) or
// 8 (bf16) bits of the final target plus two, so a second rounding to nearest-even from there
// gives the same result as one direct rounding (no double-rounding error).
float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d && (std::bit_cast<uint32_t>(f) & 1u) == 0) {
    f = std::nextafter(f, d > static_cast<double>(f) ? std::numeric_limits<float>::infinity()
                                                     : -std::numeric_limits<float>::infinity());
  }
  return f;
}

float int_to_float_round_odd(int64_t v) {
  const bool negative = v < 0;
  uint64_t m = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int exponent = 0;
  bool sticky = false;
  while (m >= (uint64_t{1} << 24)) {
    sticky |= (m & 1u) != 0;
    m >>= 1;
    ++exponent;
  }
  if (sticky) m |= 1u;
  const float f = std::ldexp(static_cast<float>(m), exponent);
  return negative ? -f : f;
}

// One element from storage type From to storage type To.
template <class To, class From>
To convert(From v) {
  using CF = ComputeType<From>;
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<CF>(v) != CF(0);  // NaN is true
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(static_cast<ComputeType<To>>(v ? 1 : 0));
  } else if constexpr (kIs16BitFloat<To>) {
    if constexpr (std::is_same_v<From, double>) {
      return To(double_to_float_round_odd(v));
    } else if constexpr (std::is_integral_v<From>) {
      return To(int_to_float_round_odd(v));
    } else {
      return To(static_cast<float>(v));  // float, or the other 16-bit type (exact widening)
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(static_cast<CF>(v));
  } else if constexpr (kIsFloat<From>) {
    return float_to_int<To>(static_cast<double>(static_cast<CF>(v)));
  } else {
    return static_cast<To>(v);  // integer to integer: modular (two's complement) since C++20
  }
}

void cast_tensor(const Tensor& in, Tensor& out) {
  visit_dtype(in.dtype(), [&](auto from_tag) {
    visit_dtype(out.dtype(), [&](auto to_tag) {
      using From = typename decltype(from_tag)::type;
      using To = typename decltype(to_tag)::type;
      const From* x = in.data<From>();
      To* y = out.data<To>();
      for (int64_t i = 0; i < in.numel(); ++i) y[i] = convert<To>(x[i]);
    });
  });
}

// The output's dtype comes from inference (attribute `to`, or the dtype of CastLike's input 1).
void cast(const KernelArgs& a) {
  cast_tensor(a.inputs[0], a.outputs[0]);
}

}  // namespace

void register_cast_kernels(KernelTable& table) {
  set_kernel(table, Op::kCast, cast);
  set_kernel(table, Op::kCastLike, cast);
}

}  // namespace gf::ref
