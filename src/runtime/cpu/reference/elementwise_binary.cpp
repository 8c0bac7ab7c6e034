// Reference kernels for the binary broadcast ops: arithmetic, Pow, Mod, comparisons, logic,
// bitwise ops, PRelu, Where and Clip. Integers wrap on overflow; integer division and
// remainder by zero fail with the node named.
#include <cmath>
#include <limits>

#include "runtime/cpu/reference/elementwise_family.h"

namespace gf::ref {

namespace {

// out = f(x, y) with x, y and out of the storage type T, computed in ComputeType<T>.
template <class T, class F>
void broadcast_same_type(const KernelArgs& a, F&& f) {
  using C = ComputeType<T>;
  const T* x = a.inputs[0].data<T>();
  const T* y = a.inputs[1].data<T>();
  T* out = a.outputs[0].data<T>();
  for_each_broadcast(
      a.outputs[0], {&a.inputs[0], &a.inputs[1]}, [&](int64_t i, const MultiIndex& it) {
        out[i] =
            static_cast<T>(f(static_cast<C>(x[it.offset(0)]), static_cast<C>(y[it.offset(1)])));
      });
}

// The same over every numeric dtype.
template <class F>
void numeric_binary(const KernelArgs& a, F&& f) {
  visit_numeric_dtype(a.inputs[0].dtype(),
                      [&](auto tag) { broadcast_same_type<typename decltype(tag)::type>(a, f); });
}

void add(const KernelArgs& a) {
  numeric_binary(a, [](auto x, auto y) { return add_c(x, y); });
}

void sub(const KernelArgs& a) {
  numeric_binary(a, [](auto x, auto y) { return sub_c(x, y); });
}

void mul(const KernelArgs& a) {
  numeric_binary(a, [](auto x, auto y) { return mul_c(x, y); });
}

// Integer division truncates toward zero (C and ONNX Runtime, not numpy's floor).
void div(const KernelArgs& a) {
  numeric_binary(a, [&](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) kernel_fail(a, "integer division by zero");
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return wrap_neg(x);  // min / -1 overflows; it wraps to min
      }
      return static_cast<C>(x / y);
    } else {
      return x / y;
    }
  });
}

// fmod=1: the remainder takes the dividend's sign (C fmod, %). fmod=0 (integers only): it takes
// the divisor's sign (Python's %).
void mod(const KernelArgs& a) {
  const bool c_fmod = a.attrs().get_int("fmod", 0) != 0;
  numeric_binary(a, [&](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(x, y);
    } else {
      if (y == 0) kernel_fail(a, "integer modulo by zero");
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return C(0);  // min % -1 overflows in C++; the remainder is 0
      }
      C r = static_cast<C>(x % y);
      if constexpr (std::is_signed_v<C>) {
        if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
      }
      return r;
    }
  });
}

// Exact integer power with wraparound. A negative exponent gives the real result 1 / x^n
// truncated toward zero, as casting the float result would; 0 to a negative power (a division
// by zero) gives 0.
template <class B>
B int_pow(B base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<B>) {
      if (base == -1) return e % 2 == 0 ? B(1) : B(-1);
    }
    return 0;
  }
  B result = 1;
  while (e > 0) {
    if (e & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return result;
}

// Base and exponent may have different dtypes; the result has the base's.
void pow(const KernelArgs& a) {
  const Tensor& base = a.inputs[0];
  const Tensor& expo = a.inputs[1];
  visit_numeric_dtype(base.dtype(), [&](auto btag) {
    visit_numeric_dtype(expo.dtype(), [&](auto etag) {
      using B = typename decltype(btag)::type;
      using E = typename decltype(etag)::type;
      using CB = ComputeType<B>;
      using CE = ComputeType<E>;
      const B* pb = base.data<B>();
      const E* pe = expo.data<E>();
      B* out = a.outputs[0].data<B>();
      for_each_broadcast(a.outputs[0], {&base, &expo}, [&](int64_t i, const MultiIndex& it) {
        const CB b = static_cast<CB>(pb[it.offset(0)]);
        const CE e = static_cast<CE>(pe[it.offset(1)]);
        if constexpr (std::is_integral_v<CB> && std::is_integral_v<CE>) {
          out[i] = static_cast<B>(int_pow(b, static_cast<int64_t>(e)));  // clang-14 type-checks this for float B too
        } else if constexpr (std::is_integral_v<CB>) {
          out[i] = float_to_int<CB>(std::pow(static_cast<double>(b), static_cast<double>(e)));
        } else if constexpr (std::is_same_v<CB, double> || std::is_same_v<CE, double>) {
          out[i] = static_cast<B>(std::pow(static_cast<double>(b), static_cast<double>(e)));
        } else {
          out[i] = static_cast<B>(std::pow(static_cast<float>(b), static_cast<float>(e)));
        }
      });
    });
  });
}

// out = pred(x, y) as bool, for inputs of any one dtype.
template <class Pred>
void compare(const KernelArgs& a, Pred pred) {
  visit_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = a.inputs[0].data<T>();
    const T* y = a.inputs[1].data<T>();
    bool* out = a.outputs[0].data<bool>();
    for_each_broadcast(
        a.outputs[0], {&a.inputs[0], &a.inputs[1]}, [&](int64_t i, const MultiIndex& it) {
          out[i] = pred(static_cast<C>(x[it.offset(0)]), static_cast<C>(y[it.offset(1)]));
        });
  });
}

void equal(const KernelArgs& a) {
  compare(a, [](auto x, auto y) { return x == y; });
}
void less(const KernelArgs& a) {
  compare(a, [](auto x, auto y) { return x < y; });
}
void less_or_equal(const KernelArgs& a) {
  compare(a, [](auto x, auto y) { return x <= y; });
}
void greater(const KernelArgs& a) {
  compare(a, [](auto x, auto y) { return x > y; });
}
void greater_or_equal(const KernelArgs& a) {
  compare(a, [](auto x, auto y) { return x >= y; });
}

void logical_and(const KernelArgs& a) {
  broadcast_same_type<bool>(a, [](bool x, bool y) { return x && y; });
}
void logical_or(const KernelArgs& a) {
  broadcast_same_type<bool>(a, [](bool x, bool y) { return x || y; });
}
void logical_xor(const KernelArgs& a) {
  broadcast_same_type<bool>(a, [](bool x, bool y) { return x != y; });
}

template <class F>
void integer_binary(const KernelArgs& a, F&& f) {
  visit_integer_dtype(a.inputs[0].dtype(),
                      [&](auto tag) { broadcast_same_type<typename decltype(tag)::type>(a, f); });
}

void bitwise_and(const KernelArgs& a) {
  integer_binary(a, [](auto x, auto y) { return x & y; });
}
void bitwise_or(const KernelArgs& a) {
  integer_binary(a, [](auto x, auto y) { return x | y; });
}
void bitwise_xor(const KernelArgs& a) {
  integer_binary(a, [](auto x, auto y) { return x ^ y; });
}

// The output has X's shape (inference checked that the slope broadcasts to it).
void prelu(const KernelArgs& a) {
  numeric_binary(a, [](auto x, auto slope) {
    using C = decltype(x);
    return x < C(0) ? mul_c(x, slope) : x;
  });
}

void where(const KernelArgs& a) {
  const Tensor& cond = a.inputs[0];
  visit_dtype(a.inputs[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* c = cond.data<bool>();
    const T* x = a.inputs[1].data<T>();
    const T* y = a.inputs[2].data<T>();
    T* out = a.outputs[0].data<T>();
    for_each_broadcast(a.outputs[0], {&cond, &a.inputs[1], &a.inputs[2]},
                       [&](int64_t i, const MultiIndex& it) {
                         out[i] = c[it.offset(0)] ? x[it.offset(1)] : y[it.offset(2)];
                       });
  });
}

// An omitted bound is no bound. NaN passes through; with min > max every element becomes max,
// as np.clip does.
void clip(const KernelArgs& a) {
  visit_numeric_dtype(a.inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const bool has_lo = a.has_input(1), has_hi = a.has_input(2);
    const C lo = has_lo ? static_cast<C>(a.inputs[1].data<T>()[0]) : C(0);
    const C hi = has_hi ? static_cast<C>(a.inputs[2].data<T>()[0]) : C(0);
    map_same_type<T>(a.inputs[0], a.outputs[0], [&](C x) {
      if (has_lo && x < lo) x = lo;
      if (has_hi && x > hi) x = hi;
      return x;
    });
  });
}

}  // namespace

void register_binary_kernels(KernelTable& table) {
  set_kernel(table, Op::kAdd, add);
  set_kernel(table, Op::kSub, sub);
  set_kernel(table, Op::kMul, mul);
  set_kernel(table, Op::kDiv, div);
  set_kernel(table, Op::kMod, mod);
  set_kernel(table, Op::kPow, pow);
  set_kernel(table, Op::kEqual, equal);
  set_kernel(table, Op::kLess, less);
  set_kernel(table, Op::kLessOrEqual, less_or_equal);
  set_kernel(table, Op::kGreater, greater);
  set_kernel(table, Op::kGreaterOrEqual, greater_or_equal);
  set_kernel(table, Op::kAnd, logical_and);
  set_kernel(table, Op::kOr, logical_or);
  set_kernel(table, Op::kXor, logical_xor);
  set_kernel(table, Op::kBitwiseAnd, bitwise_and);
  set_kernel(table, Op::kBitwiseOr, bitwise_or);
  set_kernel(table, Op::kBitwiseXor, bitwise_xor);
  set_kernel(table, Op::kPRelu, prelu);
  set_kernel(table, Op::kWhere, where);
  set_kernel(table, Op::kClip, clip);
}

}  // namespace gf::ref
