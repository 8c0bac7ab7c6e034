// ProgramCache's byte accounting when programs share memory (the CUDA session arena, as large as
// the largest lease on it): the kept programs hold their own bytes summed plus the largest
// shared part, and the byte bound evicts by that. Placeholder programs stand for compiled ones:
// the cache only keeps and counts them.
#include <gtest/gtest.h>

#include "runtime/program_cache.h"
#include "runtime/session_programs.h"

namespace gf {
namespace {

ProgramCache::ProgramPtr placeholder() {
  return std::make_shared<const CompiledProgram>();
}
ProgramCache::Key key(int64_t n) {
  return {{n, 16}};
}

TEST(ProgramCacheBytes, OwnBytesAddUpAndTheSharedPartCountsOnceAtItsLargest) {
  ProgramCache cache(8, 0);
  std::vector<ProgramCache::ProgramPtr> dropped;
  cache.insert(key(1), placeholder(), 10, 100, dropped);
  EXPECT_EQ(cache.bytes(), 110u);
  cache.insert(key(2), placeholder(), 20, 300, dropped);
  EXPECT_EQ(cache.bytes(), 30u + 300u);
  cache.insert(key(3), placeholder(), 5, 200, dropped);
  EXPECT_EQ(cache.bytes(), 35u + 300u);
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(cache.programs(), 3);
}

TEST(ProgramCacheBytes, TheBoundEvictsTheLeastRecentlyUsedUntilTheSumAndTheLargestShareFit) {
  ProgramCache cache(8, 320);
  std::vector<ProgramCache::ProgramPtr> dropped;
  cache.insert(key(1), placeholder(), 10, 100, dropped);  // 110
  cache.insert(key(2), placeholder(), 10, 300, dropped);  // 20 + 300 = 320: fits
  EXPECT_TRUE(dropped.empty());
  cache.insert(key(3), placeholder(), 10, 200, dropped);  // 30 + 300 = 330: key 1 goes
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(cache.bytes(), 20u + 300u);
  EXPECT_FALSE(cache.find(key(1)).has_value());
  // Key 2 becomes the most recently used; key 3's 250 own bytes leave no room beside key 2's
  // share: key 3 goes first (least recently used), then key 2 as well.
  ASSERT_TRUE(cache.find(key(2)).has_value());
  cache.insert(key(4), placeholder(), 250, 50, dropped);
  EXPECT_EQ(dropped.size(), 3u);
  EXPECT_EQ(cache.programs(), 1);
  EXPECT_EQ(cache.bytes(), 250u + 50u);
  EXPECT_EQ(cache.evictions(), 3);
}

TEST(ProgramCacheBytes, AProgramOverTheBoundByItselfRunsButIsNotKept) {
  ProgramCache cache(8, 320);
  std::vector<ProgramCache::ProgramPtr> dropped;
  const ProgramCache::ProgramPtr big = placeholder();
  EXPECT_EQ(cache.insert(key(1), big, 1, 320, dropped), big);
  EXPECT_EQ(cache.programs(), 0);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.evictions(), 1);
  cache.insert(key(2), placeholder(), 0, 320, dropped);  // exactly the bound: kept
  EXPECT_EQ(cache.programs(), 1);
}

TEST(ProgramCacheBytes, DroppingTheLargestShareLowersTheCountToTheNextLargest) {
  ProgramCache cache(2, 0);
  std::vector<ProgramCache::ProgramPtr> dropped;
  cache.insert(key(1), placeholder(), 0, 500, dropped);
  cache.insert(key(2), placeholder(), 0, 100, dropped);
  EXPECT_EQ(cache.bytes(), 500u);
  cache.insert(key(3), placeholder(), 0, 200, dropped);  // the count bound drops key 1
  EXPECT_EQ(dropped.size(), 1u);
  EXPECT_EQ(cache.bytes(), 200u);
  cache.drop_all(dropped);
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace gf
