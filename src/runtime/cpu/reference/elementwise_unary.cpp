// Reference kernels for the float-only unary ops: exp/log family, trigonometry, rounding and
// the activation functions. Each computes in float (f32, f16, bf16) or double (f64).
#include <cmath>
#include <numbers>
#include <string>

#include "runtime/cpu/reference/elementwise_family.h"

namespace gf::ref {

namespace {

// y = f(x) for a float tensor; f is generic over float and double.
template <class F>
void float_map(const KernelArgs& a, F f) {
  visit_float_dtype(a.inputs[0].dtype(), "float unary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], f);
  });
}

// Clamps to [0, 1] with NaN passing through (np.clip semantics).
template <class C>
C clamp01(C v) {
  return v < C(0) ? C(0) : v > C(1) ? C(1) : v;
}

// log(1 + exp(x)) without overflow for large x.
template <class C>
C softplus(C x) {
  return std::log1p(std::exp(-std::fabs(x))) + (x > C(0) ? x : C(0));
}

// Half to even, spelled out rather than relying on the floating-point rounding mode.
template <class C>
C round_half_even(C x) {
  if (std::fabs(x - std::trunc(x)) == C(0.5)) return C(2) * std::round(x / C(2));
  return std::round(x);
}

template <class C>
C sigmoid(C x) {
  // Two forms so that exp never overflows into a 0/inf or inf/inf.
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

float attr(const KernelArgs& a, const char* name, float fallback) {
  return a.attrs().get_float(name, fallback);
}

#define GF_FLOAT_UNARY(name, expr)             \
  void name(const KernelArgs& a) {             \
    float_map(a, [](auto x) { return expr; }); \
  }

using std::numbers::pi;

GF_FLOAT_UNARY(exp_k, std::exp(x))
GF_FLOAT_UNARY(log_k, std::log(x))
GF_FLOAT_UNARY(sqrt_k, std::sqrt(x))
GF_FLOAT_UNARY(reciprocal_k, decltype(x)(1) / x)
GF_FLOAT_UNARY(tanh_k, std::tanh(x))
GF_FLOAT_UNARY(erf_k, std::erf(x))
GF_FLOAT_UNARY(sigmoid_k, sigmoid(x))
GF_FLOAT_UNARY(hard_swish_k, x* clamp01(x / decltype(x)(6) + decltype(x)(0.5)))
GF_FLOAT_UNARY(softplus_k, softplus(x))
GF_FLOAT_UNARY(softsign_k, x / (decltype(x)(1) + std::fabs(x)))
GF_FLOAT_UNARY(mish_k, x* std::tanh(softplus(x)))
GF_FLOAT_UNARY(sin_k, std::sin(x))
GF_FLOAT_UNARY(cos_k, std::cos(x))
GF_FLOAT_UNARY(tan_k, std::tan(x))
GF_FLOAT_UNARY(asin_k, std::asin(x))
GF_FLOAT_UNARY(acos_k, std::acos(x))
GF_FLOAT_UNARY(atan_k, std::atan(x))
GF_FLOAT_UNARY(sinh_k, std::sinh(x))
GF_FLOAT_UNARY(cosh_k, std::cosh(x))
GF_FLOAT_UNARY(asinh_k, std::asinh(x))
GF_FLOAT_UNARY(acosh_k, std::acosh(x))
GF_FLOAT_UNARY(atanh_k, std::atanh(x))
GF_FLOAT_UNARY(floor_k, std::floor(x))
GF_FLOAT_UNARY(ceil_k, std::ceil(x))
GF_FLOAT_UNARY(round_k, round_half_even(x))

#undef GF_FLOAT_UNARY

void leaky_relu(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 0.01f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    return x < C(0) ? static_cast<C>(alpha) * x : x;
  });
}

void elu(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 1.0f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x;
  });
}

// ONNX's defaults are the float32 values of the constants from the SELU paper.
void selu(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 1.67326319217681884765625f);
  const double gamma = attr(a, "gamma", 1.05070102214813232421875f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    const C g = static_cast<C>(gamma);
    return x > C(0) ? g * x : g * static_cast<C>(alpha) * std::expm1(x);
  });
}

void celu(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 1.0f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    const C al = static_cast<C>(alpha);
    return x > C(0) ? x : al * std::expm1(x / al);
  });
}

// np.where(x > alpha, x, 0): NaN becomes 0, as in ONNX's reference.
void thresholded_relu(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 1.0f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    return x > static_cast<C>(alpha) ? x : C(0);
  });
}

void hard_sigmoid(const KernelArgs& a) {
  const double alpha = attr(a, "alpha", 0.2f);
  const double beta = attr(a, "beta", 0.5f);
  float_map(a, [&](auto x) {
    using C = decltype(x);
    return clamp01(static_cast<C>(alpha) * x + static_cast<C>(beta));
  });
}

void gelu(const KernelArgs& a) {
  if (a.attrs().get_string("approximate", "none") == "tanh") {
    float_map(a, [](auto x) {
      using C = decltype(x);
      const C k = static_cast<C>(std::sqrt(2.0 / pi));
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    });
  } else {
    float_map(a, [](auto x) {
      using C = decltype(x);
      return C(0.5) * x * (C(1) + std::erf(x / static_cast<C>(std::numbers::sqrt2)));
    });
  }
}

}  // namespace

void register_unary_math_kernels(KernelTable& table) {
  set_kernel(table, Op::kExp, exp_k);
  set_kernel(table, Op::kLog, log_k);
  set_kernel(table, Op::kSqrt, sqrt_k);
  set_kernel(table, Op::kReciprocal, reciprocal_k);
  set_kernel(table, Op::kTanh, tanh_k);
  set_kernel(table, Op::kErf, erf_k);
  set_kernel(table, Op::kSigmoid, sigmoid_k);
  set_kernel(table, Op::kHardSwish, hard_swish_k);
  set_kernel(table, Op::kSoftplus, softplus_k);
  set_kernel(table, Op::kSoftsign, softsign_k);
  set_kernel(table, Op::kMish, mish_k);
  set_kernel(table, Op::kSin, sin_k);
  set_kernel(table, Op::kCos, cos_k);
  set_kernel(table, Op::kTan, tan_k);
  set_kernel(table, Op::kAsin, asin_k);
  set_kernel(table, Op::kAcos, acos_k);
  set_kernel(table, Op::kAtan, atan_k);
  set_kernel(table, Op::kSinh, sinh_k);
  set_kernel(table, Op::kCosh, cosh_k);
  set_kernel(table, Op::kAsinh, asinh_k);
  set_kernel(table, Op::kAcosh, acosh_k);
  set_kernel(table, Op::kAtanh, atanh_k);
  set_kernel(table, Op::kFloor, floor_k);
  set_kernel(table, Op::kCeil, ceil_k);
  set_kernel(table, Op::kRound, round_k);
  set_kernel(table, Op::kLeakyRelu, leaky_relu);
  set_kernel(table, Op::kElu, elu);
  set_kernel(table, Op::kSelu, selu);
  set_kernel(table, Op::kCelu, celu);
  set_kernel(table, Op::kThresholdedRelu, thresholded_relu);
  set_kernel(table, Op::kHardSigmoid, hard_sigmoid);
  set_kernel(table, Op::kGelu, gelu);
}

}  // namespace gf::ref
