// Flash attention on tensor cores (ONNX opset 23 semantics, as
// src/runtime/cpu/reference/attention.cpp) for f16/bf16 with one head size kD of 16, 32, 64 or
// 128 for Q, K and V. One block per (batch, query head, tile of kBlockM query rows), kMTiles x 16
// rows per warp. The Q tile stays in shared memory; K and V pass through it in tiles of kBlockN
// keys. Per tile each warp computes its rows' scores with mma.sync (m16n8k16, f32
// accumulation), every K fragment serving all kMTiles row groups, keeps a running row max and
// sum (online softmax in f32), rounds the weights to the input format and adds weights x V into
// f32 accumulators with mma.sync again. Nothing of size Sq x Skv reaches memory.
//
// Overlap: V of tile t is fetched (cp.async) while the scores of tile t are computed, K of tile
// t + 1 while its weighted sum is, as in FlashAttention-2. Tiles are stored in shared memory
// with their 16-byte chunks permuted by row (gf_tile_at), so ldmatrix reads 8 rows of one chunk
// column without bank conflicts.
//
// The kernel is bound by issuing instructions (the tensor pipe waits on them), so the work
// around the MMAs is kept small: a tile's copies are one cp.async per piece at offsets fixed
// per thread; scores away from masks keep their raw products, whose scale to log2 units joins
// the exponent's FMA; and a tile that raises none of a warp's row maxima (most tiles, once the
// maxima settle) skips rescaling the output accumulators.
//
// Needs from the emitter: attention_common.cuh, mma_fragments.cuh and attention_flash_common.cuh
// before it, gf_elem (16-bit storage), gf_load, gf_mask_elem, and the constants kWarps, kMTiles,
// kBf16 (the MMA input format), kB, kHq, kGroup, kSq, kSkv, kD, kQ/kK/kV/kY strides (batch, head,
// position; multiples of 8 elements; the head_dim stride is 1), kScale, kSoftcap, kCausal and the
// mask constants of attention_common.cuh.
//
// Against the reference: the scores are exact products of the 16-bit inputs summed in f32 (in
// another order), then scaled; the weights are rounded to the input format before the weighted
// sum. Results differ from the reference's by that rounding, within the format's tolerance.
// Pointers that are not 16-byte aligned take plain loads and stores instead of cp.async.
// Shared memory is dynamic: kMmaSharedBytes, set by the emitter as the launch's.

constexpr int kMmaThreads = 32 * (int)kWarps;
constexpr int kWarpRows = 16 * (int)kMTiles;
constexpr int kBlockM = kWarpRows * (int)kWarps;  // query rows per block
constexpr int kBlockN = 64;                // keys per K/V tile
constexpr int kHd = (int)kD;
constexpr int kChunks = kHd / 8;  // 16-byte chunks per tile row
// Rows that share a 128-byte line take different chunk permutations: 8 chunks per line.
constexpr int kSwizzleMask = (kChunks < 8 ? kChunks : 8) - 1;
constexpr int kSwizzleShift = kChunks >= 8 ? 0 : kChunks == 4 ? 1 : 2;
constexpr int kKSteps = kHd / 16;      // k16 steps of Q x K^T
constexpr int kSTiles = kBlockN / 8;   // n8 tiles of a warp's scores
constexpr int kOTiles = kHd / 8;       // n8 tiles of a warp's output
constexpr int kMmaSharedBytes = 2 * kHd * (kBlockM + 2 * kBlockN);
static_assert(kHd == 16 || kHd == 32 || kHd == 64 || kHd == 128, "head size of the MMA kernel");

// Element offset of (row, 16-byte chunk) in a tile of kHd-wide rows.
static __device__ __forceinline__ int gf_tile_at(int row, int chunk) {
  return row * kHd + ((chunk ^ ((row >> kSwizzleShift) & kSwizzleMask)) << 3);
}

static __device__ __forceinline__ void gf_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
static __device__ __forceinline__ void gf_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Rows [0, valid) of a kRows-row tile whose row 0 is at `src` (row stride `stride` elements)
// into shared memory; rows from `valid` on are zeros. valid >= 1. With `async` the copies are
// cp.async (the caller commits and waits); otherwise plain loads and stores.
template <int kRows>
static __device__ __forceinline__ void gf_load_tile(gf_elem* tile, const gf_elem* src, int64_t stride,
                                                    int valid, bool async) {
  // Each thread's pieces are one chunk column, kStep rows apart: the chunk permutation repeats
  // every kStep rows, so every piece's place in the tile is the first's plus a constant.
  constexpr int kStep = kMmaThreads / kChunks;
  if constexpr ((kRows * kChunks) % kMmaThreads == 0 && kMmaThreads % kChunks == 0 &&
                ((kStep >> kSwizzleShift) & kSwizzleMask) == 0) {
    if (async) {
      const int row0 = threadIdx.x / kChunks, chunk = threadIdx.x % kChunks;
      const uint32_t dst0 = gf_smem_addr(tile + gf_tile_at(row0, chunk));
      const gf_elem* const src0 = src + row0 * stride + chunk * 8;
#pragma unroll
      for (int i = 0; i < kRows * kChunks / kMmaThreads; ++i) {
        const int row = row0 + i * kStep;
        const gf_elem* from = row < valid ? src0 + i * kStep * stride : src;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                         dst0 + (uint32_t)(i * kStep * kHd * (int)sizeof(gf_elem))),
                     "l"(from), "r"(row < valid ? 16 : 0)
                     : "memory");
      }
      return;
    }
  }
  for (int at = threadIdx.x; at < kRows * kChunks; at += kMmaThreads) {
    const int row = at / kChunks, chunk = at % kChunks;
    gf_elem* dst = tile + gf_tile_at(row, chunk);
    const gf_elem* from = row < valid ? src + row * stride + chunk * 8 : src;
    if (async) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(gf_smem_addr(dst)),
                   "l"(from), "r"(row < valid ? 16 : 0)
                   : "memory");
    } else {
      uint32_t* words = reinterpret_cast<uint32_t*>(dst);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        words[e] = row < valid ? (uint32_t)from[2 * e] | ((uint32_t)from[2 * e + 1] << 16) : 0u;
      }
    }
  }
}

static __device__ __forceinline__ void gf_attention_mma(void* const* buffers) {
  const gf_elem* q = (const gf_elem*)buffers[0] + kQOffset;
  const gf_elem* k = (const gf_elem*)buffers[1] + kKOffset;
  const gf_elem* v = (const gf_elem*)buffers[2] + kVOffset;
  const void* mask = kHasMask ? buffers[3] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasMask ? 4 : 3] + kYOffset;

  extern __shared__ __align__(128) uint4 gf_shared[];
  gf_elem* const gf_sq = reinterpret_cast<gf_elem*>(gf_shared);
  gf_elem* const gf_sk = gf_sq + kBlockM * kHd;
  gf_elem* const gf_sv = gf_sk + kBlockN * kHd;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragment row (and row + 8) and column pair
  const GfFlashTile f = gf_flash_tile<kBlockM>(blockIdx.x);
  const int64_t b = f.b, h = f.h, first_row = f.first_row, kv_end = f.kv_end;
  const int q_rows = f.q_rows;
  const gf_elem* q_tile = q + b * kQStrideB + h * kQStrideH + first_row * kQStrideS;
  const gf_elem* k_head = k + b * kKStrideB + f.kv_h * kKStrideH;
  const gf_elem* v_head = v + b * kVStrideB + f.kv_h * kVStrideH;
  gf_elem* y_head = y + b * kYStrideB + h * kYStrideH;
  const bool aligned = gf_flash_aligned(q, k, v, y);

  gf_load_tile<kBlockM>(gf_sq, q_tile, kQStrideS, q_rows, aligned);
  if (kv_end > 0) {
    gf_load_tile<kBlockN>(gf_sk, k_head, kKStrideS, kv_end < kBlockN ? (int)kv_end : kBlockN, aligned);
  }
  gf_cp_async_commit();
  gf_cp_async_wait_all();
  __syncthreads();

  // With two row groups and head sizes up to 64, the warp's Q fragments (at most 32 registers)
  // are read from shared memory once, not once per K tile: 5% faster at head size 64 on an H200.
  // With one row group the extra registers cost more than the reads (at head size 128 they take
  // the block count per SM from 3 to 2).
  constexpr bool kQInRegisters = kMTiles == 2 && kHd <= 64;
  uint32_t q_frag[kQInRegisters ? kMTiles : 1][kQInRegisters ? kKSteps : 1][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
        gf_ldmatrix_x4(q_frag[m][ks],
                       gf_sq + gf_tile_at(warp * kWarpRows + m * 16 + (lane & 15), ks * 2 + (lane >> 4)));
      }
    }
  }

  float o[kMTiles][kOTiles][4];
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
    for (int d = 0; d < kOTiles; ++d) o[m][d][0] = o[m][d][1] = o[m][d][2] = o[m][d][3] = 0.0f;
  }
  // Per thread: rows r = 2 * m + half (half 0: fragment elements 0-1, half 1: elements 2-3),
  // query row first_row + warp_first + 8 * r + g.
  float row_max[2 * kMTiles], row_sum[2 * kMTiles];  // max in log2 units; sum: this thread's part
  const int warp_first = warp * kWarpRows;  // the warp's first row in the block
  const int64_t thread_row = first_row + warp_first + g;
#pragma unroll
  for (int r = 0; r < 2 * kMTiles; ++r) {
    row_max[r] = gf_neg_inf();
    row_sum[r] = 0.0f;
  }

  const int n_tiles = (int)((kv_end + kBlockN - 1) / kBlockN);
  for (int nt = 0; nt < n_tiles; ++nt) {
    const int64_t j0 = (int64_t)nt * kBlockN;
    const int valid = kv_end - j0 < kBlockN ? (int)(kv_end - j0) : kBlockN;
    gf_load_tile<kBlockN>(gf_sv, v_head + j0 * kVStrideS, kVStrideS, valid, aligned);
    gf_cp_async_commit();

    // Scores of this warp's rows against the tile's keys.
    float s[kMTiles][kSTiles][4];
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
      for (int n = 0; n < kSTiles; ++n) s[m][n][0] = s[m][n][1] = s[m][n][2] = s[m][n][3] = 0.0f;
    }
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t qa[kMTiles][4];
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        if constexpr (kQInRegisters) {
#pragma unroll
          for (int i = 0; i < 4; ++i) qa[m][i] = q_frag[m][ks][i];
        } else {
          gf_ldmatrix_x4(qa[m], gf_sq + gf_tile_at(warp_first + m * 16 + (lane & 15), ks * 2 + (lane >> 4)));
        }
      }
#pragma unroll
      for (int np = 0; np < kSTiles / 2; ++np) {
        uint32_t kb[4];
        gf_ldmatrix_x4(kb, gf_sk + gf_tile_at(np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                              ks * 2 + ((lane >> 3) & 1)));
#pragma unroll
        for (int m = 0; m < kMTiles; ++m) {
          gf_mma(s[m][2 * np], qa[m], kb[0], kb[1]);
          gf_mma(s[m][2 * np + 1], qa[m], kb[2], kb[3]);
        }
      }
    }

    // Scaled and masked where they must be (gf_flash_mask_scores): every score unless they stay
    // raw products (kFlashRawScores), else only in tiles that reach the sequence's end or the
    // causal diagonal.
    const bool edge_tile = valid < kBlockN || (kCausal && j0 + kBlockN - 1 > first_row + warp_first);
    const float to_log2 = kFlashRawScores ? kFlashScaleLog2 : 1.0f;
    if (!kFlashRawScores || edge_tile) {
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        gf_flash_mask_scores<kSTiles>(&s[m][0][0], mask, b, h, thread_row + 16 * m, t, j0, valid);
      }
    }

    // Online softmax. Once the maxima settle, a tile moves none of the warp's rows: its
    // accumulators are left as they are (a rescale by 1).
    float rescale[2 * kMTiles];
    bool unmoved = true;
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
      gf_flash_softmax<kSTiles>(&s[m][0][0], to_log2, row_max + 2 * m, row_sum + 2 * m,
                                rescale + 2 * m, unmoved);
    }
    if (!__all_sync(0xffffffffu, unmoved)) {
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) gf_flash_rescale<kOTiles>(&o[m][0][0], rescale + 2 * m);
    }

    gf_cp_async_wait_all();
    __syncthreads();  // V of this tile is in; no warp reads K any more
    if (nt + 1 < n_tiles) {
      const int64_t next = j0 + kBlockN;
      gf_load_tile<kBlockN>(gf_sk, k_head + next * kKStrideS, kKStrideS,
                            kv_end - next < kBlockN ? (int)(kv_end - next) : kBlockN, aligned);
      gf_cp_async_commit();
    }

    // Weights x V: the score accumulators of two n8 tiles are the A fragment of one k16 step.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int m = 0; m < kMTiles; ++m) {
        a[m][0] = gf_pack2(s[m][2 * kk][0], s[m][2 * kk][1]);
        a[m][1] = gf_pack2(s[m][2 * kk][2], s[m][2 * kk][3]);
        a[m][2] = gf_pack2(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        a[m][3] = gf_pack2(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < kOTiles / 2; ++dp) {
        uint32_t vb[4];
        gf_ldmatrix_x4_trans(vb, gf_sv + gf_tile_at(kk * 16 + (lane & 15), dp * 2 + (lane >> 4)));
#pragma unroll
        for (int m = 0; m < kMTiles; ++m) {
          gf_mma(o[m][2 * dp], a[m], vb[0], vb[1]);
          gf_mma(o[m][2 * dp + 1], a[m], vb[2], vb[3]);
        }
      }
    }
    gf_cp_async_wait_all();
    __syncthreads();  // K of the next tile is in; no warp reads V any more
  }

#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
    gf_flash_store_rows<kOTiles>(&o[m][0][0], row_sum + 2 * m, y_head, thread_row + 16 * m, t,
                                 aligned);
  }
}
