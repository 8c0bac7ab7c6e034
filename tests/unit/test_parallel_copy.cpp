#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

#include "runtime/parallel_copy.h"

namespace gf {
namespace {

// Bytes that differ at every offset (a part copied to the wrong place cannot go unseen).
std::vector<char> pattern(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<char> v(bytes);
  for (char& c : v) c = static_cast<char>(rng());
  return v;
}

// Every size around the split points, on 4 threads, each call into a buffer poisoned first and
// guarded on both sides: the copy is the source byte for byte and writes nothing else.
TEST(ParallelCopy, CopiesEverySizeExactlyAndNothingBeyond) {
  ParallelCopy copy(4, 0);
  ASSERT_EQ(copy.helpers(), 3u);
  constexpr size_t kGuard = 128;
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{255},
        size_t{256}, size_t{257}, size_t{4096 + 1}, (size_t{1} << 20) + 7}) {
    SCOPED_TRACE(bytes);
    const std::vector<char> src = pattern(bytes, static_cast<uint32_t>(bytes));
    std::vector<char> dst(bytes + 2 * kGuard, '\x5a');
    copy(dst.data() + kGuard, src.data(), bytes);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + kGuard));
    for (size_t i = 0; i < kGuard; ++i) {
      ASSERT_EQ(dst[i], '\x5a');
      ASSERT_EQ(dst[kGuard + bytes + i], '\x5a');
    }
  }
}

// Many calls in a row on one object (each must wait for the helpers' parts of its own copy, not
// the last one's), mixing sizes below and above the split threshold.
TEST(ParallelCopy, ConsecutiveCallsEachFinishTheirOwnCopy) {
  ParallelCopy copy(8, 1000);
  std::mt19937 rng(7);
  const std::vector<char> src = pattern(1 << 16, 11);
  for (int call = 0; call < 500; ++call) {
    const size_t bytes = rng() % src.size();
    const size_t offset = rng() % (src.size() - bytes + 1);
    std::vector<char> dst(bytes, '\0');
    copy(dst.data(), src.data() + offset, bytes);
    ASSERT_TRUE(std::equal(dst.begin(), dst.end(), src.begin() + static_cast<ptrdiff_t>(offset)))
        << "call " << call;
  }
}

TEST(ParallelCopy, OneThreadCopiesOnTheCaller) {
  ParallelCopy copy(1, 0);
  EXPECT_EQ(copy.helpers(), 0u);
  const std::vector<char> src = pattern(3000, 3);
  std::vector<char> dst(src.size());
  copy(dst.data(), src.data(), src.size());
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace gf
