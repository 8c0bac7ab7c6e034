// What the flash attention kernels (attention_mma.cuh, attention_wgmma.cuh) share: which query
// tile of which head a block works on, and whether its tensors take 16-byte copies.
//
// Needs from the emitter: the constants kB, kHq, kGroup, kSq, kSkv, kCausal and the
// kQ/kK/kV/kY strides (batch, head, position).

struct GfFlashTile {
  int64_t b, h, kv_h;  // batch, query head, key/value head
  int64_t first_row;   // the tile's first query row
  int q_rows;          // its rows (the last tile may be short)
  int64_t kv_end;      // the keys it reads: all, or under is_causal those up to its last row
};

// Block order: the tiles of one head next to each other (they share its K and V in L2); under
// is_causal the tile is the slowest index instead, last tiles first: the blocks that see the
// most keys start first, and the grid ends with short ones.
template <int kRows>
__device__ __forceinline__ GfFlashTile gf_flash_tile(int64_t block) {
  constexpr int64_t q_tiles = kSq > 0 ? (kSq + kRows - 1) / kRows : 1;
  constexpr int64_t hq = kHq > 0 ? kHq : 1;
  constexpr int64_t heads = kB * kHq > 0 ? kB * kHq : 1;  // nonzero: not launched without heads
  const int64_t tile = kCausal ? q_tiles - 1 - block / heads : block % q_tiles;
  const int64_t head = kCausal ? block % heads : block / q_tiles;
  GfFlashTile f;
  f.h = head % hq;
  f.b = head / hq;
  f.kv_h = f.h / kGroup;
  f.first_row = tile * kRows;
  f.q_rows = (int)(kSq - f.first_row < kRows ? kSq - f.first_row : kRows);
  const int64_t last = f.first_row + f.q_rows;
  f.kv_end = kCausal ? (last < kSkv ? last : kSkv) : kSkv;
  return f;
}

// 16-byte pieces: the pointers and every row's start (strides in whole 8-element pieces).
__device__ __forceinline__ bool gf_flash_aligned(const void* q, const void* k, const void* v,
                                                 const void* y) {
  constexpr bool strides =
      ((kQStrideB | kQStrideH | kQStrideS | kKStrideB | kKStrideH | kKStrideS | kVStrideB |
        kVStrideH | kVStrideS | kYStrideB | kYStrideH | kYStrideS) %
       8) == 0;
  return strides && (((uint64_t)q | (uint64_t)k | (uint64_t)v | (uint64_t)y) & 15) == 0;
}
