// Private to the elementwise reference kernels: dtype visitors, broadcast iteration, wrapping
// integer arithmetic, and the per-file registration functions.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ir/dtype_dispatch.h"
#include "runtime/cpu/reference/kernels.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

// One per file of the family; register_elementwise_kernels (elementwise.cpp) calls them all.
void register_unary_math_kernels(KernelTable& table);  // elementwise_unary.cpp
void register_binary_kernels(KernelTable& table);      // elementwise_binary.cpp
void register_variadic_kernels(KernelTable& table);    // elementwise_variadic.cpp
void register_cast_kernels(KernelTable& table);        // cast.cpp

inline void set_kernel(KernelTable& table, Op op, Kernel k) {
  table[static_cast<size_t>(op)] = k;
}

// visit_dtype restricted to the numeric types (no bool) or to the integer types: shape
// inference rejects the others before a kernel runs.
template <class F>
void visit_numeric_dtype(DType t, F&& f) {
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      GF_ASSERT(false, "bool reached a numeric kernel; inference should have rejected it");
    } else {
      f(tag);
    }
  });
}

template <class F>
void visit_integer_dtype(DType t, F&& f) {
  visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool> || kIsFloat<T>) {
      GF_ASSERT(false, "a non-integer dtype reached an integer kernel");
    } else {
      f(tag);
    }
  });
}

// Calls f(i, it) for each element i of `out` (row-major), with it.offset(k) the element offset
// of inputs[k] under numpy broadcasting.
template <class F>
void for_each_broadcast(const Tensor& out, const std::vector<const Tensor*>& inputs, F&& f) {
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : inputs) strides.push_back(broadcast_strides(t->dims(), out.dims()));
  MultiIndex it(out.dims(), std::move(strides));
  for (int64_t i = 0; i < out.numel(); ++i, it.next()) f(i, it);
}

// y[i] = f(x[i]) for a tensor of storage type T, computed in ComputeType<T> and stored as T.
template <class T, class F>
void map_same_type(const Tensor& x, Tensor& y, F&& f) {
  using C = ComputeType<T>;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<T>(f(static_cast<C>(px[i])));
}

// Integer arithmetic wraps around (two's complement) as in ONNX Runtime and numpy; done in the
// unsigned type because signed overflow is undefined in C++.
template <class T>
T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T>
T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  // u8 * u8 and i8 * i8 promote to int, where the product cannot overflow.
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <class T>
T wrap_neg(T a) {
  return wrap_sub(T(0), a);
}

// Sum, difference and product in the compute type C: wrapping for integers, IEEE for floats.
template <class C>
C add_c(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return wrap_add(a, b);
  } else {
    return a + b;
  }
}
template <class C>
C sub_c(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return wrap_sub(a, b);
  } else {
    return a - b;
  }
}
template <class C>
C mul_c(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return wrap_mul(a, b);
  } else {
    return a * b;
  }
}

// Float to integer (Cast, Pow with an integer base): truncation toward zero. Out of range, ONNX
// leaves the result undefined; we saturate and map NaN to 0, as CUDA's conversions do, so that
// GPU backends can match the oracle.
template <class I>
I float_to_int(double v) {
  if (std::isnan(v)) return 0;
  const double hi = std::ldexp(1.0, std::numeric_limits<I>::digits);  // exact: max + 1
  if (v >= hi) return std::numeric_limits<I>::max();
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) {
    return std::numeric_limits<I>::min();
  }
  return static_cast<I>(std::trunc(v));
}

template <class C>
bool is_nan_c(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

}  // namespace gf::ref
