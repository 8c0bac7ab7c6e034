// Determinism: the same inputs give bitwise the same outputs, run after run, from one thread or
// several at once, on the fused CPU backend (generated kernels with OpenMP, BLAS, the program
// cache). Compared with memcmp: "close" is not the property under test.
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "graphfuse/models.h"
#include "test_util.h"

namespace gf {
namespace {

Graph small_gpt2() {
  models::Gpt2Config c;
  c.layers = 2;
  c.d_model = 64;
  c.heads = 4;
  return models::gpt2_stack(c);
}

Tensor random_activations(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kF32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// A first run's output that is finite and not trivially zero, so equality means something.
void expect_meaningful(const Tensor& y) {
  bool nonzero = false;
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(y.data<float>()[i])) << "element " << i;
    nonzero = nonzero || y.data<float>()[i] != 0.0f;
  }
  EXPECT_TRUE(nonzero);
}

TEST(Determinism, Gpt2StackIsBitwiseIdenticalOverTwentyFusedRuns) {
  const Session s(small_gpt2());
  const Tensor x = random_activations({2, 5, 64}, 11);
  const Tensor other = random_activations({1, 3, 64}, 12);
  const Tensor first = s.run({x})[0];
  expect_meaningful(first);
  ASSERT_GE(s.stats().fused_kernels, 1) << "the fused backend did not take the graph";
  for (int run = 1; run < 20; ++run) {
    // Every fifth run, another shape goes through first: cached programs must not share state.
    if (run % 5 == 0) s.run({other});
    EXPECT_TRUE(bitwise_equal(s.run({x})[0], first)) << "run " << run << " differs from run 0";
  }
  // A fresh session over the same graph (its program comes from the JIT's cache) agrees too.
  const Session again(s.graph());
  EXPECT_TRUE(bitwise_equal(again.run({x})[0], first));
}

TEST(Determinism, FourThreadsOnOneSessionGiveBitwiseIdenticalOutputs) {
  const Session s(small_gpt2());
  // Two inputs of one shape, alternated across threads, so runs that shared buffers would show.
  const std::vector<Tensor> inputs{random_activations({2, 5, 64}, 21),
                                   random_activations({2, 5, 64}, 22)};
  const std::vector<Tensor> expected{s.run({inputs[0]})[0], s.run({inputs[1]})[0]};
  expect_meaningful(expected[0]);
  ASSERT_FALSE(bitwise_equal(expected[0], expected[1]));
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const size_t which = static_cast<size_t>(t + i) % 2;
        try {
          if (!bitwise_equal(s.run({inputs[which]})[0], expected[which])) ++mismatches;
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "of 40 concurrent runs";
  EXPECT_EQ(s.host_bytes_in_use(), 0u);
}

}  // namespace
}  // namespace gf
