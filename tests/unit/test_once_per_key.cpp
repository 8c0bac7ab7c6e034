// The compilers' in-memory layer (codegen/common/once_per_key.h): one computation per key
// however many threads ask at once, and a failure that is not kept.
#include "codegen/common/once_per_key.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gf::codegen {
namespace {

TEST(OncePerKey, ThreadsAskingTogetherShareOneComputation) {
  OncePerKey<int, int> values;
  std::atomic<int> runs{0};
  std::vector<int> got(16, 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      got[i] = values.get(7, [&] {
        ++runs;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others arrive meanwhile
        return 49;
      });
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  for (int v : got) EXPECT_EQ(v, 49);
  EXPECT_EQ(values.get(7, [] { return -1; }), 49);  // kept
  EXPECT_EQ(values.get(8, [] { return 64; }), 64);  // another key computes its own
}

TEST(OncePerKey, AFailureReachesTheCallerAndIsNotKept) {
  OncePerKey<int, int> values;
  EXPECT_THROW(values.get(1, []() -> int { throw std::runtime_error("no compiler"); }),
               std::runtime_error);
  EXPECT_EQ(values.get(1, [] { return 2; }), 2);
}

}  // namespace
}  // namespace gf::codegen
