#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "graphfuse/error.h"

namespace gf {

namespace {
uint64_t align_up(uint64_t x) { return (x + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  int steps = 0;
  for (const BufferLifetime& b : buffers) {
    GF_ASSERT(b.first_use <= b.last_use && b.first_use >= 0, "bad buffer lifetime");
    steps = std::max(steps, b.last_use + 1);
  }
  // Lower bound: the most (aligned) bytes alive at once.
  std::vector<uint64_t> live(static_cast<size_t>(steps), 0);
  for (const BufferLifetime& b : buffers)
    for (int s = b.first_use; s <= b.last_use; ++s) live[static_cast<size_t>(s)] += align_up(b.bytes);
  plan.lower_bound = live.empty() ? 0 : *std::max_element(live.begin(), live.end());

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first_use < buffers[b].first_use;
  });
  struct Placed {
    uint64_t offset, end;
    int first, last;
  };
  std::vector<Placed> placed;
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    const uint64_t size = align_up(std::max<uint64_t>(b.bytes, 1));
    // Intervals taken by buffers alive at the same time, by offset.
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (const Placed& p : placed)
      if (p.first <= b.last_use && b.first_use <= p.last) taken.emplace_back(p.offset, p.end);
    std::sort(taken.begin(), taken.end());
    // The smallest gap that fits (best fit), else the end.
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [start, end] : taken) {
      if (start >= cursor && start - cursor >= size && start - cursor < best_gap) {
        best = cursor;
        best_gap = start - cursor;
      }
      cursor = std::max(cursor, end);
    }
    if (best == UINT64_MAX) best = cursor;
    plan.offsets[i] = best;
    placed.push_back({best, best + size, b.first_use, b.last_use});
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
  }
  return plan;
}

ArenaPieces arena_pieces(const MemoryPlan& plan, const std::vector<BufferLifetime>& buffers) {
  std::vector<uint64_t> cuts;
  auto end = [&](size_t i) { return plan.offsets[i] + std::max<uint64_t>(buffers[i].bytes, 1); };
  for (size_t i = 0; i < buffers.size(); ++i) {
    cuts.push_back(plan.offsets[i]);
    cuts.push_back(end(i));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  auto piece = [&](uint64_t at) {
    return static_cast<int>(std::lower_bound(cuts.begin(), cuts.end(), at) - cuts.begin());
  };
  ArenaPieces out;
  for (size_t i = 0; i < buffers.size(); ++i)
    out.of_buffer.emplace_back(piece(plan.offsets[i]), piece(end(i)));
  out.count = static_cast<int>(cuts.size());
  return out;
}

}  // namespace gf
