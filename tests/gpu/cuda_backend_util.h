// Helpers of the CUDA backend tests: random inputs for a graph, the reference interpreter as the
// oracle, and a comparison within each dtype's tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graphfuse/graphfuse.h"
#include "runtime/cpu/reference/interpreter.h"
#include "test_util.h"

namespace gf::testing {

struct ValueRange {
  float lo = -2, hi = 2;
};

// Random data for every input of `g` (static shapes): floats uniform in `range`, integers in
// [0, 3), bools at random.
inline std::vector<Tensor> random_inputs(const Graph& g, ValueRange range, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> out;
  for (ValueId v : g.inputs()) {
    const TensorType& t = g.value(v).type;
    Tensor f(DType::kF32, t.shape.static_dims());
    std::uniform_real_distribution<float> dist(range.lo, range.hi);
    for (int64_t i = 0; i < f.numel(); ++i) {
      f.data<float>()[i] = is_floating(t.dtype) ? dist(rng) : static_cast<float>(rng() % 3);
    }
    out.push_back(to_dtype(f, t.dtype));
  }
  return out;
}

// Relative tolerance for results stored in `dtype` (a few units in its last place, plus the
// different summation orders of GEMMs and reductions).
inline double tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::kF16: return 1e-2;
    case DType::kBF16: return 4e-2;
    case DType::kF32: return 2e-4;
    default: return 0;
  }
}

// Floats within rtol/atol scaled by the output's magnitude; integers and bools exact.
inline void expect_matches(const Tensor& got, const Tensor& want, double tol_scale = 1) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  if (!is_floating(want.dtype())) {
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(got.element_as_int(i), want.element_as_int(i)) << "element " << i;
    return;
  }
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.element_as_double(i);
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  const double tol = tolerance_for(want.dtype()) * tol_scale;
  std::vector<double> expected;
  for (int64_t i = 0; i < want.numel(); ++i) expected.push_back(want.element_as_double(i));
  expect_values(got, want.dims(), expected, tol, tol * std::max(1.0, scale));
}

}  // namespace gf::testing
