// What GPU tests share: a fixture that skips without a CUDA device, random tensors, a tensor's
// copy in device memory, a relative-norm comparison, and the check of a 16-bit Gelu against its
// exact value.
#pragma once

#ifdef GF_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "graphfuse/device.h"
#include "graphfuse/tensor.h"
#include "test_util.h"

namespace gf::testing {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
  }
};

// major * 10 + minor of device 0 (0 without one).
inline int cuda_compute_capability() {
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) return 0;
  return probe.devices.front().compute_major * 10 + probe.devices.front().compute_minor;
}

// Values drawn uniformly from [-scale, scale], rounded to `dtype`.
inline Tensor uniform_tensor(std::mt19937& rng, DType dtype, std::vector<int64_t> dims,
                             float scale) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return to_dtype(t, dtype);
}

// Standard normal values.
inline Tensor normal_f32(std::mt19937& rng, std::vector<int64_t> dims) {
  Tensor t(DType::kF32, std::move(dims));
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

#ifdef GF_HAVE_CUDA
// Device memory of `bytes` (at least 1), or holding a copy of a tensor; freed on destruction,
// also when an assertion ends the test early.
struct DeviceCopy {
  void* p = nullptr;
  explicit DeviceCopy(size_t bytes) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess);
  }
  explicit DeviceCopy(const Tensor& t) : DeviceCopy(t.nbytes()) {
    EXPECT_EQ(cudaMemcpy(p, t.raw(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(p); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
};
#endif

// The relative error norm of `got` against `want`, ||got - want|| / ||want||, is at most `rel`;
// every element must be written (not NaN).
inline void expect_relative_norm_within(const Tensor& got, const Tensor& want, double rel) {
  ASSERT_EQ(got.dims(), want.dims());
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    ASSERT_FALSE(std::isnan(g)) << "element " << i << " unwritten or NaN";
    err += (g - w) * (g - w);
    norm += w * w;
  }
  EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), rel);
}

// The distance between neighbours of the 16-bit format (8 or 11 significant bits) at |v|.
inline double step_16bit(DType t, double v) {
  const int digits = t == DType::kBF16 ? 8 : 11;
  const int min_exp = t == DType::kBF16 ? -126 : -14;
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| in [2^(e-1), 2^e)
  return std::ldexp(1.0, std::max(e - 1, min_exp) - (digits - 1));
}

// Counts the 16-bit Gelu results `got` (erf or tanh form) of the 16-bit inputs `x` that are not
// the exact value rounded once, reporting the first five: the exact value in double (its lower
// tail through erfc, free of the cancellation in 1 + erf), within half a step of the format plus
// 2^-16 of its size for the approximation. Gelu(+inf) = +inf; 0.5 x (1 + erf) is NaN at -inf.
inline int64_t gelu_16bit_misses(DType t, bool tanh, const Tensor& x, const Tensor& got) {
  int64_t bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.element_as_double(i), a = got.element_as_double(i);
    const double u = std::sqrt(2.0 / std::acos(-1.0)) * (v + 0.044715 * v * v * v);
    const double exact = tanh     ? v / (1.0 + std::exp(-2.0 * u))
                         : v >= 0 ? v * (1.0 - 0.5 * std::erfc(v / std::sqrt(2.0)))
                                  : v * 0.5 * std::erfc(-v / std::sqrt(2.0));
    if (std::isnan(v) || std::isinf(v) || std::isinf(exact)) {
      const bool ok = std::isnan(v) || v < 0 ? std::isnan(a) : a == v;
      if (!ok && ++bad <= 5) ADD_FAILURE() << "x = " << v << ": " << a;
      continue;
    }
    const double tol = 0.5 * step_16bit(t, exact) + std::ldexp(std::fabs(exact), -16);
    if (!(std::fabs(a - exact) <= tol) && ++bad <= 5)
      ADD_FAILURE() << "x = " << v << ": " << a << ", exact " << exact;
  }
  return bad;
}

}  // namespace gf::testing
