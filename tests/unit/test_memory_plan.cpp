#include <random>

#include "runtime/memory_plan.h"
#include "test_util.h"

namespace gf {
namespace {

// No two buffers alive at the same step may share bytes.
void expect_no_overlap(const std::vector<BufferLifetime>& b, const MemoryPlan& p) {
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(p.offsets[i] + b[i].bytes, p.arena_bytes);
    for (size_t j = i + 1; j < b.size(); ++j) {
      const bool same_time = b[i].first_use <= b[j].last_use && b[j].first_use <= b[i].last_use;
      const bool same_bytes = p.offsets[i] < p.offsets[j] + b[j].bytes && p.offsets[j] < p.offsets[i] + b[i].bytes;
      EXPECT_FALSE(same_time && same_bytes && b[i].bytes && b[j].bytes) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlan, ReusesTheBytesOfDeadBuffers) {
  // A chain a -> b -> c -> d: at most two are alive at once, so two slots suffice.
  std::vector<BufferLifetime> b = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  MemoryPlan p = plan_memory(b);
  expect_no_overlap(b, p);
  EXPECT_EQ(p.lower_bound, 2048u);
  EXPECT_EQ(p.arena_bytes, 2048u);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
}

TEST(MemoryPlan, TransformerLikeLifetimesStayWithinTenPercentOfTheBound) {
  // Residual stream (long-lived) plus per-layer temporaries of several sizes.
  std::vector<BufferLifetime> b;
  int step = 0;
  for (int layer = 0; layer < 12; ++layer) {
    const int s = step;
    b.push_back({768 * 128 * 4, s, s + 1});           // layer norm
    b.push_back({3 * 768 * 128 * 4, s + 1, s + 2});   // qkv
    b.push_back({768 * 128 * 4, s + 2, s + 3});       // attention
    b.push_back({768 * 128 * 4, s + 3, s + 7});       // residual 1
    b.push_back({768 * 128 * 4, s + 4, s + 5});       // layer norm 2
    b.push_back({4 * 768 * 128 * 4, s + 5, s + 6});   // mlp hidden
    b.push_back({768 * 128 * 4, s + 6, s + 8});       // residual 2
    step += 7;
  }
  MemoryPlan p = plan_memory(b);
  expect_no_overlap(b, p);
  EXPECT_LE(static_cast<double>(p.arena_bytes), 1.1 * static_cast<double>(p.lower_bound))
      << p.arena_bytes << " vs bound " << p.lower_bound;
}

TEST(MemoryPlan, RandomLifetimesNeverOverlap) {
  std::mt19937 rng(9);
  for (int round = 0; round < 50; ++round) {
    std::vector<BufferLifetime> b(30);
    for (auto& x : b) {
      x.first_use = std::uniform_int_distribution<int>(0, 40)(rng);
      x.last_use = x.first_use + std::uniform_int_distribution<int>(0, 10)(rng);
      x.bytes = std::uniform_int_distribution<uint64_t>(0, 100000)(rng);
    }
    MemoryPlan p = plan_memory(b);
    expect_no_overlap(b, p);
    EXPECT_GE(p.arena_bytes, p.lower_bound);
  }
}

TEST(MemoryPlan, ArenaPiecesAreSharedExactlyByBuffersThatShareBytes) {
  // Hand-placed: a [0, 512), b [256, 768) (overlaps a's second half), c [1024, 1024 + 0 bytes).
  MemoryPlan plan;
  plan.offsets = {0, 256, 1024};
  const std::vector<BufferLifetime> buffers = {{512, 0, 1}, {512, 2, 3}, {0, 4, 4}};
  const ArenaPieces p = arena_pieces(plan, buffers);
  // Cuts: 0, 256, 512, 768, 1024, 1025.
  EXPECT_EQ(p.count, 6);
  ASSERT_EQ(p.of_buffer.size(), 3u);
  EXPECT_EQ(p.of_buffer[0], (std::pair<int, int>{0, 2}));  // [0,256) [256,512)
  EXPECT_EQ(p.of_buffer[1], (std::pair<int, int>{1, 3}));  // [256,512) [512,768): shares piece 1
  EXPECT_EQ(p.of_buffer[2], (std::pair<int, int>{4, 5}));  // an empty buffer covers one byte
}

TEST(MemoryPlan, PlannedBuffersOverlapInBytesIffTheyShareAPiece) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> step(0, 30), bytes(0, 5000);
  std::vector<BufferLifetime> buffers;
  for (int i = 0; i < 60; ++i) {
    const int first = step(rng);
    buffers.push_back({static_cast<uint64_t>(bytes(rng)), first, first + step(rng) / 4});
  }
  const MemoryPlan plan = plan_memory(buffers);
  const ArenaPieces p = arena_pieces(plan, buffers);
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      auto end = [&](size_t k) { return plan.offsets[k] + std::max<uint64_t>(buffers[k].bytes, 1); };
      const bool bytes_overlap = plan.offsets[i] < end(j) && plan.offsets[j] < end(i);
      const bool pieces_overlap = p.of_buffer[i].first < p.of_buffer[j].second &&
                                  p.of_buffer[j].first < p.of_buffer[i].second;
      EXPECT_EQ(bytes_overlap, pieces_overlap) << "buffers " << i << " and " << j;
    }
  }
}

}  // namespace
}  // namespace gf
