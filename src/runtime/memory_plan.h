// Static memory planning: every intermediate buffer of a program gets an offset in one arena,
// chosen from buffer lifetimes so that buffers alive at the same time never overlap. Addresses
// then never change between runs, which CUDA graphs rely on.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gf {

struct BufferLifetime {
  uint64_t bytes = 0;
  int first_use = 0;  // index of the step that writes it
  int last_use = 0;   // index of the last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per buffer, aligned to kArenaAlignment
  uint64_t arena_bytes = 0;
  uint64_t lower_bound = 0;  // the most bytes alive at any one step: no plan can do better
};

inline constexpr uint64_t kArenaAlignment = 256;  // cudaMalloc's alignment; enough for AVX-512

// Greedy by size: the largest buffers are placed first, each at the lowest offset that does not
// overlap a placed buffer whose lifetime intersects its own.
MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers);

// The arena cut at every buffer's start and end into pieces: per buffer, the [first, last)
// indices of the pieces it covers (an empty buffer covers one byte), and the number of cuts.
// Buffers placed on the same bytes at different times share pieces, so ordering the uses of
// each piece orders every reuse of memory (the CUDA graph's edges).
struct ArenaPieces {
  std::vector<std::pair<int, int>> of_buffer;
  int count = 0;
};
ArenaPieces arena_pieces(const MemoryPlan& plan, const std::vector<BufferLifetime>& buffers);

}  // namespace gf
