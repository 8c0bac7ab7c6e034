// Reference kernels for the elementwise and broadcast op family: the entry point, plus the
// unary ops that are not float math (sign-like ops, logic, predicates, Identity, Dropout).
// Float math is in elementwise_unary.cpp, binary ops in elementwise_binary.cpp, Min/Max/Sum/Mean
// in elementwise_variadic.cpp and Cast in cast.cpp.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/reference/elementwise_family.h"

namespace gf::ref {

namespace {

void identity(const KernelArgs& a) {
  if (a.inputs[0].nbytes()) {
    std::memcpy(a.outputs[0].raw(), a.inputs[0].raw(), a.inputs[0].nbytes());
  }
}

// Inference has already rejected training with a positive ratio, so this is the identity.
void dropout(const KernelArgs& a) {
  identity(a);
  if (a.outputs.size() > 1) {
    bool* mask = a.outputs[1].data<bool>();
    std::fill(mask, mask + a.outputs[1].numel(), true);
  }
}

void abs(const KernelArgs& a) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], [](auto x) {
      using C = decltype(x);
      if constexpr (std::is_floating_point_v<C>) {
        return std::fabs(x);
      } else if constexpr (std::is_unsigned_v<C>) {
        return x;
      } else {
        return x < 0 ? wrap_neg(x) : x;  // the most negative value stays itself, as in numpy
      }
    });
  });
}

void neg(const KernelArgs& a) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], [](auto x) {
      if constexpr (std::is_integral_v<decltype(x)>) {
        return wrap_neg(x);
      } else {
        return -x;
      }
    });
  });
}

// -1, 0 or 1; NaN stays NaN.
void sign(const KernelArgs& a) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], [](auto x) {
      using C = decltype(x);
      return x > C(0) ? C(1) : x < C(0) ? static_cast<C>(-1) : x;
    });
  });
}

// Written as "x < 0 ? 0 : x" so that NaN propagates, as np.maximum(x, 0) does.
void relu(const KernelArgs& a) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], [](auto x) {
      using C = decltype(x);
      return x < C(0) ? C(0) : x;
    });
  });
}

void logical_not(const KernelArgs& a) {
  map_same_type<bool>(a.inputs[0], a.outputs[0], [](bool x) { return !x; });
}

void bitwise_not(const KernelArgs& a) {
  visit_integer_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    map_same_type<T>(a.inputs[0], a.outputs[0], [](T x) { return static_cast<T>(~x); });
  });
}

// out[i] = pred(x[i]) for a float input and a bool output.
template <class Pred>
void float_predicate(const KernelArgs& a, Pred pred) {
  visit_float_dtype(a.inputs[0].dtype(), "float predicate", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = a.inputs[0].data<T>();
    bool* y = a.outputs[0].data<bool>();
    for (int64_t i = 0; i < a.inputs[0].numel(); ++i) y[i] = pred(static_cast<C>(x[i]));
  });
}

void is_nan(const KernelArgs& a) {
  float_predicate(a, [](auto x) { return std::isnan(x); });
}

void is_inf(const KernelArgs& a) {
  const bool negative = a.attrs().get_int("detect_negative", 1) != 0;
  const bool positive = a.attrs().get_int("detect_positive", 1) != 0;
  float_predicate(
      a, [&](auto x) { return std::isinf(x) && ((x > 0 && positive) || (x < 0 && negative)); });
}

}  // namespace

void register_elementwise_kernels(KernelTable& table) {
  set_kernel(table, Op::kIdentity, identity);
  set_kernel(table, Op::kDropout, dropout);
  set_kernel(table, Op::kAbs, abs);
  set_kernel(table, Op::kNeg, neg);
  set_kernel(table, Op::kSign, sign);
  set_kernel(table, Op::kRelu, relu);
  set_kernel(table, Op::kNot, logical_not);
  set_kernel(table, Op::kBitwiseNot, bitwise_not);
  set_kernel(table, Op::kIsNaN, is_nan);
  set_kernel(table, Op::kIsInf, is_inf);
  register_unary_math_kernels(table);
  register_binary_kernels(table);
  register_variadic_kernels(table);
  register_cast_kernels(table);
}

}  // namespace gf::ref
