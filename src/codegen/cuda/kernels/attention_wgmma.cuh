// Flash attention with wgmma (sm_90a; ONNX opset 23 semantics, as
// src/runtime/cpu/reference/attention.cpp) for f16/bf16 with head size kD of 64 or 128 for Q, K
// and V. One block of two warpgroups per (batch, query head, tile of 128 query rows), 64 rows
// per warpgroup. The Q tile stays in shared memory; K and V pass through it in tiles of
// kBlockKeys keys, double-buffered: all threads copy tile t + 1 (cp.async) while tile t is
// multiplied. Per tile a warpgroup computes its rows' scores with one wgmma chain (Q and K from
// shared memory, f32 accumulators), keeps a running row max and sum (online softmax in f32),
// rounds the weights to the input format and adds weights x V with a second chain, whose A
// operand is the weights' registers and whose B is V read transposed from shared memory.
// Nothing of size Sq x Skv reaches memory.
//
// Against the mma.sync kernel (attention_mma.cuh): a warpgroup's products are a few
// instructions, not one per 16 x 8 x 16 piece plus the ldmatrix loads that feed it, so the
// instructions around them (the softmax) have the issue slots to themselves.
//
// Tiles are stored as wgmma's 128-byte swizzled layout (wgmma_common.cuh) in runs of 64
// columns: run c of a tile of R rows starts at c x R x 128 bytes. The scores and weights use
// the accumulator layout of wgmma, which per warp is mma.sync's m16n8 one (warp w of the
// warpgroup holds rows 16w..16w+15), so the masks and the online softmax are those of
// attention_mma.cuh with one 16-row group per warp.
//
// Needs from the emitter: attention_common.cuh, attention_flash_tile.cuh, mma_fragments.cuh and
// wgmma_common.cuh before it, gf_elem (16-bit storage), gf_load, gf_mask_elem, the constants kBf16
// (the MMA input format), kBlockKeys (64 or 128), kB, kHq, kGroup, kSq, kSkv, kD, kQ/kK/kV/kY
// strides (batch, head, position; the head_dim stride is 1), kScale, kSoftcap, kCausal and the mask
// constants of attention_common.cuh, and gf_wgmma_scores (m64 x kBlockKeys x k16, both operands
// K-major descriptors) and gf_wgmma_values (m64 x kD x k16, A in registers, B MN-major).
// Pointers or strides that are not 16-byte aligned take plain loads instead of cp.async.
// Shared memory is dynamic: kWgSharedBytes, set by the emitter as the launch's.

constexpr int kWgThreads = 256;
constexpr int kWgBlockM = 128;  // query rows per block
constexpr int kWgHd = (int)kD;
constexpr int kWgPieces = kWgHd / 8;  // 16-byte pieces per tile row
constexpr int kWgKSteps = kWgHd / 16;
constexpr int kWgSTiles = kBlockKeys / 8;  // n8 tiles of a warp's scores
constexpr int kWgOTiles = kWgHd / 8;       // n8 tiles of a warp's output
constexpr uint32_t kWgQBytes = kWgBlockM * kWgHd * 2;
constexpr uint32_t kWgKvBytes = kBlockKeys * kWgHd * 2;  // one K or V tile
// Q, two K and two V tiles, and room to align them to 1024 bytes (the swizzle's period).
constexpr int kWgSharedBytes = (int)(kWgQBytes + 4 * kWgKvBytes) + 1024;
constexpr float kWgSoftcapDivisor = kSoftcap > 0.0f ? kSoftcap : 1.0f;  // used only when > 0
constexpr float kWgLog2e = 1.4426950408889634f;
constexpr float kWgScaleLog2 = kScale * kWgLog2e;
static_assert(kWgHd == 64 || kWgHd == 128, "head size of the wgmma kernel");
static_assert(kBlockKeys == 64 || kBlockKeys == 128, "key tile of the wgmma kernel");

// Rows [0, valid) of a kRows-row tile whose row 0 is at `src` (row stride `stride` elements)
// into the swizzled tile at shared address `tile` (generic pointer `tile_ptr`); rows from
// `valid` on are zeros. valid >= 1. With `async` the copies are cp.async (the caller commits
// and waits); otherwise plain loads and stores.
template <int kRows>
static __device__ __forceinline__ void gf_wg_load_tile(uint32_t tile, unsigned char* tile_ptr,
                                                       const gf_elem* src, int64_t stride,
                                                       int valid, bool async) {
  static_assert((kRows * kWgPieces) % kWgThreads == 0, "whole rounds of pieces");
#pragma unroll
  for (int i = 0; i < kRows * kWgPieces / kWgThreads; ++i) {
    const int at = (int)threadIdx.x + i * kWgThreads;
    const int row = at / kWgPieces, piece = at % kWgPieces;
    const uint32_t offset = (uint32_t)(piece / 8) * (kRows * 128) + gf_swizzled(row, piece % 8);
    const gf_elem* from = row < valid ? src + row * stride + piece * 8 : src;
    if (async) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(tile + offset), "l"(from),
                   "r"(row < valid ? 16 : 0)
                   : "memory");
    } else {
      uint32_t* words = reinterpret_cast<uint32_t*>(tile_ptr + offset);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        words[e] = row < valid ? (uint32_t)from[2 * e] | ((uint32_t)from[2 * e + 1] << 16) : 0u;
      }
    }
  }
}

static __device__ __forceinline__ void gf_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void gf_wgmma_commit_and_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

static __device__ __forceinline__ void gf_attention_wgmma(void* const* buffers) {
  const gf_elem* q = (const gf_elem*)buffers[0] + kQOffset;
  const gf_elem* k = (const gf_elem*)buffers[1] + kKOffset;
  const gf_elem* v = (const gf_elem*)buffers[2] + kVOffset;
  const void* mask = kHasMask ? buffers[3] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasMask ? 4 : 3] + kYOffset;

  extern __shared__ __align__(1024) unsigned char gf_wg_shared[];
  const uint32_t raw = gf_smem_addr(gf_wg_shared);
  const uint32_t pad = ((raw + 1023u) & ~1023u) - raw;
  unsigned char* const sq_ptr = gf_wg_shared + pad;
  const uint32_t sq = raw + pad;
  const uint32_t sk0 = sq + kWgQBytes, sv0 = sk0 + 2 * kWgKvBytes;

  const int tid = (int)threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;  // the fragment row (and row + 8) and column pair
  const GfFlashTile f = gf_flash_tile<kWgBlockM>(blockIdx.x);
  const int64_t b = f.b, h = f.h, first_row = f.first_row, kv_end = f.kv_end;
  const int q_rows = f.q_rows;
  const gf_elem* q_tile = q + b * kQStrideB + h * kQStrideH + first_row * kQStrideS;
  const gf_elem* k_head = k + b * kKStrideB + f.kv_h * kKStrideH;
  const gf_elem* v_head = v + b * kVStrideB + f.kv_h * kVStrideH;
  gf_elem* y_head = y + b * kYStrideB + h * kYStrideH;
  const bool aligned = gf_flash_aligned(q, k, v, y);

  const int n_tiles = (int)((kv_end + kBlockKeys - 1) / kBlockKeys);
  // Tile nt's keys: those before kv_end (valid >= 1 for every tile loaded).
  const auto valid_keys = [&](int nt) {
    const int64_t left = kv_end - (int64_t)nt * kBlockKeys;
    return left < kBlockKeys ? (int)left : kBlockKeys;
  };
  const auto load_kv = [&](int nt) {
    const uint32_t at = (uint32_t)(nt & 1) * kWgKvBytes;
    const int64_t j0 = (int64_t)nt * kBlockKeys;
    gf_wg_load_tile<kBlockKeys>(sk0 + at, sq_ptr + kWgQBytes + at, k_head + j0 * kKStrideS,
                                kKStrideS, valid_keys(nt), aligned);
    gf_wg_load_tile<kBlockKeys>(sv0 + at, sq_ptr + kWgQBytes + 2 * kWgKvBytes + at,
                                v_head + j0 * kVStrideS, kVStrideS, valid_keys(nt), aligned);
  };
  gf_wg_load_tile<kWgBlockM>(sq, sq_ptr, q_tile, kQStrideS, q_rows, aligned);
  if (n_tiles > 0) load_kv(0);
  asm volatile("cp.async.commit_group;" ::: "memory");

  float o[kWgOTiles * 4];
#pragma unroll
  for (int i = 0; i < kWgOTiles * 4; ++i) o[i] = 0.0f;
  // Per thread: rows r = 0 (fragment elements 0-1) and 1 (elements 2-3), query row
  // thread_row + 8 r.
  float row_max[2] = {gf_neg_inf(), gf_neg_inf()};  // in log2 units
  float row_sum[2] = {0.0f, 0.0f};                  // this thread's part
  const int warp_first = wg * 64 + warp * 16;       // the warp's first row in the block
  const int64_t thread_row = first_row + warp_first + g;

  for (int nt = 0; nt < n_tiles; ++nt) {
    const int64_t j0 = (int64_t)nt * kBlockKeys;
    const int valid = valid_keys(nt);
    // Tile nt is in (and Q with the first); every warpgroup is done with tile nt - 1, whose
    // buffers tile nt + 1 takes. wgmma reads shared memory through the async proxy: the
    // copies are fenced towards it first.
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (nt + 1 < n_tiles) {
      load_kv(nt + 1);
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    const uint32_t kt = sk0 + (uint32_t)(nt & 1) * kWgKvBytes;
    const uint32_t vt = sv0 + (uint32_t)(nt & 1) * kWgKvBytes;

    // Scores of this warpgroup's 64 rows against the tile's keys.
    float s[kWgSTiles * 4];
    gf_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kWgKSteps; ++kk) {
      const uint32_t run = (uint32_t)(kk / 4), in_run = (uint32_t)(kk % 4) * 32;
      gf_wgmma_scores(s, gf_smem_desc(sq + run * (kWgBlockM * 128) + wg * 64 * 128 + in_run),
                      gf_smem_desc(kt + run * (kBlockKeys * 128) + in_run), kk > 0 ? 1 : 0);
    }
    gf_wgmma_commit_and_wait();

    // Masks as attention_mma.cuh: raw products unless a mask, softcap or negative scale needs
    // them scaled first; keys past the end and past the causal diagonal become -inf.
    constexpr bool kRawScores = !kHasMask && !(kSoftcap > 0.0f) && kWgScaleLog2 > 0.0f;
    const bool edge_tile =
        valid < kBlockKeys || (kCausal && j0 + kBlockKeys - 1 > first_row + warp_first);
    const float to_log2 = kRawScores ? kWgScaleLog2 : 1.0f;
    if (!kRawScores || edge_tile) {
#pragma unroll
      for (int n = 0; n < kWgSTiles; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int jj = n * 8 + 2 * t + (e & 1);
          const int64_t row = thread_row + 8 * (e >> 1);
          const bool cut = jj >= valid || (kCausal && j0 + jj > row);
          if constexpr (kRawScores) {
            if (cut) s[4 * n + e] = gf_neg_inf();
            continue;
          }
          float x = s[4 * n + e] * kScale;
          if constexpr (kSoftcap > 0.0f) x = kSoftcap * tanhf(x / kWgSoftcapDivisor);
          if (cut) {
            x = gf_neg_inf();
          } else if constexpr (kHasMask) {
            x = x + gf_attention_mask_bias(mask, b, h, row < kSq ? row : kSq - 1, j0 + jj);
          }
          s[4 * n + e] = x * kWgLog2e;
        }
      }
    }

    // Online softmax, as attention_mma.cuh.
    float rescale[2];
    bool unmoved = true;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int c = 2 * r;
      // The tile's maximum over four independent chains (one chain of kWgSTiles dependent
      // maxima would stall).
      float part[4] = {gf_neg_inf(), gf_neg_inf(), gf_neg_inf(), gf_neg_inf()};
#pragma unroll
      for (int n = 0; n < kWgSTiles; ++n) {
        part[n & 3] = fmaxf(part[n & 3], fmaxf(s[4 * n + c], s[4 * n + c + 1]));
      }
      float mx = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(row_max[r], mx * to_log2);
      const float shift = mx == gf_neg_inf() ? 0.0f : mx;
      rescale[r] = gf_exp2(row_max[r] - shift);
      unmoved = unmoved && mx == row_max[r];
      row_max[r] = mx;
      float sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int n = 0; n < kWgSTiles; ++n) {
        s[4 * n + c] = gf_exp2(fmaf(s[4 * n + c], to_log2, -shift));
        s[4 * n + c + 1] = gf_exp2(fmaf(s[4 * n + c + 1], to_log2, -shift));
        sum[n & 1] += s[4 * n + c] + s[4 * n + c + 1];
      }
      row_sum[r] = row_sum[r] * rescale[r] + (sum[0] + sum[1]);
    }
    if (!__all_sync(0xffffffffu, unmoved)) {
#pragma unroll
      for (int d = 0; d < kWgOTiles; ++d) {
        o[4 * d] *= rescale[0];
        o[4 * d + 1] *= rescale[0];
        o[4 * d + 2] *= rescale[1];
        o[4 * d + 3] *= rescale[1];
      }
    }

    // Weights x V: the score accumulators of two n8 tiles are the A fragment of one k16 step.
    uint32_t p[kBlockKeys / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBlockKeys / 16; ++kk) {
      p[kk][0] = gf_pack2(s[8 * kk], s[8 * kk + 1]);
      p[kk][1] = gf_pack2(s[8 * kk + 2], s[8 * kk + 3]);
      p[kk][2] = gf_pack2(s[8 * kk + 4], s[8 * kk + 5]);
      p[kk][3] = gf_pack2(s[8 * kk + 6], s[8 * kk + 7]);
    }
    gf_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockKeys / 16; ++kk) {
      gf_wgmma_values(o, p[kk], gf_smem_desc_mn(vt + kk * 16 * 128, kBlockKeys * 128));
    }
    gf_wgmma_commit_and_wait();
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int64_t row = thread_row + 8 * r;
    if (row >= kSq) continue;
    // No key with a finite bias (or no keys): a zero row, as the reference's sum 0 -> 1.
    const float inv = 1.0f / (sum == 0.0f ? 1.0f : sum);
    gf_elem* y_row = y_head + row * kYStrideS;
#pragma unroll
    for (int d = 0; d < kWgOTiles; ++d) {
      const uint32_t pair = gf_pack2(o[4 * d + 2 * r] * inv, o[4 * d + 2 * r + 1] * inv);
      gf_elem* at = y_row + d * 8 + 2 * t;
      if (aligned) {
        *reinterpret_cast<uint32_t*>(at) = pair;
      } else {
        at[0] = (gf_elem)(pair & 0xffffu);
        at[1] = (gf_elem)(pair >> 16);
      }
    }
  }
}
