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
// Needs from the emitter: attention_common.cuh, mma_fragments.cuh, attention_flash_common.cuh and
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

    // Scaled and masked where they must be, as attention_mma.cuh; then the online softmax.
    const bool edge_tile =
        valid < kBlockKeys || (kCausal && j0 + kBlockKeys - 1 > first_row + warp_first);
    const float to_log2 = kFlashRawScores ? kFlashScaleLog2 : 1.0f;
    if (!kFlashRawScores || edge_tile) {
      gf_flash_mask_scores<kWgSTiles>(s, mask, b, h, thread_row, t, j0, valid);
    }
    float rescale[2];
    bool unmoved = true;
    gf_flash_softmax<kWgSTiles>(s, to_log2, row_max, row_sum, rescale, unmoved);
    if (!__all_sync(0xffffffffu, unmoved)) gf_flash_rescale<kWgOTiles>(o, rescale);

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

  gf_flash_store_rows<kWgOTiles>(o, row_sum, y_head, thread_row, t, aligned);
}
