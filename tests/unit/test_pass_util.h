// Helpers for the graph-pass tests: op counts, random inputs, and the check every rewrite
// test ends with: the rewritten graph computes what the original did on the reference
// interpreter.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "test_util.h"

namespace gf::testing {

inline int count_ops(const Graph& g, Op op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(),
                                        [&](const Node& n) { return n.op == op; }));
}

// Uniform values in [lo, hi) (bool: a fair coin), in any dtype.
inline Tensor random_tensor(DType dtype, const std::vector<int64_t>& dims, uint32_t seed,
                            double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DType::kF64, dims);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = dist(rng);
    t.data<double>()[i] = dtype == DType::kBool ? (v > (lo + hi) / 2 ? 1.0 : 0.0) : v;
  }
  return to_dtype(t, dtype);
}

// Random data for every graph input (their shapes must be static).
inline std::vector<Tensor> random_inputs(const Graph& g, uint32_t seed = 7) {
  std::vector<Tensor> out;
  for (ValueId v : g.inputs()) {
    const TensorType& t = g.value(v).type;
    out.push_back(random_tensor(t.dtype, t.shape.static_dims(), seed++));
  }
  return out;
}

// Runs both graphs on the reference interpreter and compares every output element-wise
// (|a - e| <= atol + rtol * |e|, NaN matching NaN).
inline void expect_same_results(const Graph& original, const Graph& rewritten,
                                const std::vector<Tensor>& inputs, double rtol = 1e-5,
                                double atol = 1e-5) {
  const std::vector<Tensor> expected = ref::run_graph(original, inputs);
  const std::vector<Tensor> actual = ref::run_graph(rewritten, inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    ASSERT_EQ(actual[o].dims(), expected[o].dims()) << "output " << o;
    std::vector<double> values;
    for (int64_t i = 0; i < expected[o].numel(); ++i) values.push_back(expected[o].element_as_double(i));
    SCOPED_TRACE("output " + std::to_string(o));
    expect_values(actual[o], expected[o].dims(), values, rtol, atol);
  }
}

inline void expect_same_results(const Graph& original, const Graph& rewritten, double rtol = 1e-5,
                                double atol = 1e-5) {
  expect_same_results(original, rewritten, random_inputs(original), rtol, atol);
}

}  // namespace gf::testing
