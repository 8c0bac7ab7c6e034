// Private to the reduction family's reference kernels (reduction.cpp, reduce.cpp,
// normalization.cpp): axis arithmetic and the accumulator conversions they share.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ir/dtype_dispatch.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::ref {

// A tensor seen around one axis as [outer, len, inner]: element (o, k, i) sits at
// (o * len + k) * inner + i.
struct AxisSplit {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * len + k) * inner + i; }
};

inline AxisSplit split_at_axis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    const int64_t n = dims[static_cast<size_t>(d)];
    if (d < axis) {
      s.outer *= n;
    } else if (d == axis) {
      s.len = n;
    } else {
      s.inner *= n;
    }
  }
  return s;
}

// An axis attribute made non-negative; inference has range-checked it.
inline int64_t kernel_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

// Float types accumulate in double (a tighter oracle than any backend's float accumulation);
// integers in int64 with two's-complement wrap-around, as numpy's fixed-width sums do.
template <class T>
using Accum = std::conditional_t<kIsFloat<T>, double, int64_t>;

template <class T>
Accum<T> widen(T v) {
  return static_cast<Accum<T>>(static_cast<ComputeType<T>>(v));
}

// Back to storage: floats round (16-bit types through float), integers narrow modulo 2^bits.
template <class T>
T narrow(Accum<T> v) {
  if constexpr (kIsFloat<T>) {
    return T(static_cast<ComputeType<T>>(v));
  } else {
    return static_cast<T>(v);
  }
}

inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline double accum_add(double a, double b) {
  return a + b;
}
inline int64_t accum_add(int64_t a, int64_t b) {
  return wrap_add(a, b);
}

// numpy's maximum/minimum: a NaN anywhere wins.
inline double max_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return b > a ? b : a;
}
inline double min_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return b < a ? b : a;
}

// Registered by reduce.cpp and normalization.cpp, called from register_reduction_kernels.
void register_reduce_kernels(KernelTable& table);
void register_normalization_kernels(KernelTable& table);

}  // namespace gf::ref
