// The sm_90 tensor-core GEMM: C[m, n] = act(A[m, k] W[n, k]^T + bias[n]), f16/bf16 with f32
// accumulation, after the prelude and mma_fragments.cuh. The emitter (codegen/cuda/
// tensor_core_gemm.cpp) writes ahead of it GF_NAME, gf_elem, kBf16, the shape (kM, kN, kK), the
// tile (kConsumers warpgroups of 64 rows, kTileN columns, kStages), the epilogue (kHasBias,
// kActivation), kRowsAligned (n a multiple of 8: rows of C are 16-byte aligned), the buffer
// indices (kBufA, kBufW, kBufBias, kBufC) and gf_wgmma(), one m64 x kTileN x k16 product.
//
// One block per SM walks the output tiles (persistent). Warpgroup 0 loads: its 128 threads copy
// each stage's A and W tiles (64 k-elements per row, 128 bytes) with cp.async into shared memory
// in the 128-byte swizzled layout wgmma reads, and hand the stage over through an mbarrier. The
// other warpgroups each multiply 64 rows of the tile by all of its columns (wgmma, operands in
// shared memory) and hand the stage back. The loader runs ahead across tiles, so the next tile's
// loads overlap this tile's epilogue. The epilogue goes through shared memory (swizzled, so the
// fragment writes meet no bank conflicts) and leaves as 16-byte row-contiguous stores: direct
// 4-byte stores from the fragments took twice as long as the products at 4096 x 3072 x 768.

constexpr int kBM = 64 * kConsumers, kBK = 64;
constexpr uint32_t kABytes = kBM * kBK * 2, kBBytes = kTileN * kBK * 2;
constexpr uint32_t kStageBytes = kABytes + kBBytes, kOutBytes = 64 * kTileN * 2;
constexpr int kTilesN = (kN + kTileN - 1) / kTileN, kTiles = ((kM + kBM - 1) / kBM) * kTilesN;
constexpr int kKTiles = (kK + kBK - 1) / kBK;
static_assert(kK % 8 == 0, "rows of A and W are whole 16-byte pieces");
static_assert(kStages >= 3, "the loader hands a stage over one stage late");

static __device__ __forceinline__ void gf_mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void gf_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nGF_WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra GF_WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
static __device__ __forceinline__ void gf_mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// 16 bytes from global to shared memory; zeros where !valid (nothing is read then).
static __device__ __forceinline__ void gf_cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
// Piece c (16 bytes) of row r of a 128-byte-row tile, swizzled as wgmma's 128-byte mode reads
// it (the tile starts 1024-byte aligned).
static __device__ __forceinline__ uint32_t gf_swizzled(int r, int c) {
  return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
}
// A shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
static __device__ __forceinline__ uint64_t gf_smem_desc(uint32_t addr) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}

// The loader's share of one stage: rows m0.. of A and n0.. of W, elements k0..k0 + 63.
static __device__ __forceinline__ void gf_load_stage(uint32_t st, const gf_elem* a,
                                                     const gf_elem* w, int m0, int n0, int k0,
                                                     int t) {
#pragma unroll
  for (int i = 0; i < kBM * 8 / 128; ++i) {
    const int idx = t + i * 128, r = idx >> 3, c = idx & 7;
    const bool ok = m0 + r < kM && k0 + c * 8 < kK;
    gf_cp_async16(st + gf_swizzled(r, c), ok ? a + (int64_t)(m0 + r) * kK + k0 + c * 8 : a, ok);
  }
#pragma unroll
  for (int i = 0; i < kTileN * 8 / 128; ++i) {
    const int idx = t + i * 128, r = idx >> 3, c = idx & 7;
    const bool ok = n0 + r < kN && k0 + c * 8 < kK;
    gf_cp_async16(st + kABytes + gf_swizzled(r, c),
                  ok ? w + (int64_t)(n0 + r) * kK + k0 + c * 8 : w, ok);
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

static __device__ __forceinline__ float gf_elem_to_f32(gf_elem v) {
  return kBf16 ? gf_bf16_to_f32(v) : gf_f16_to_f32(v);
}
static __device__ __forceinline__ float gf_activate(float x) {
  if (kActivation == 1) return x > 0.0f ? x : 0.0f;
  if (kActivation == 2) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if (kActivation == 3)
    return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  return x;
}

extern "C" __global__ void __launch_bounds__((kConsumers + 1) * 128, 1)
    GF_NAME(void* const* buffers) {
  extern __shared__ __align__(1024) unsigned char gf_smem[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  const gf_elem* a = static_cast<const gf_elem*>(buffers[kBufA]);
  const gf_elem* w = static_cast<const gf_elem*>(buffers[kBufW]);
  const uint32_t raw = gf_smem_addr(gf_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the swizzle pattern repeats every 1024 bytes
  const int tid = threadIdx.x, group = tid >> 7;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      gf_mbar_init(gf_smem_addr(&full[s]), 128);              // every loader thread
      gf_mbar_init(gf_smem_addr(&empty[s]), kConsumers * 4);  // one lane per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (group == 0) {
    if (kTileN >= 192 && kConsumers == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 56;");
    // Stage `it` goes out, then stage it - 1 is handed over once this thread's copies of it
    // have landed: their writes are ordered before the consumers' wgmma (the async proxy).
    int it = 0;
    for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x) {
      const int m0 = tile / kTilesN * kBM, n0 = tile % kTilesN * kTileN;
      for (int kt = 0; kt < kKTiles; ++kt, ++it) {
        const int s = it % kStages;
        if (it >= kStages) gf_mbar_wait(gf_smem_addr(&empty[s]), ((it / kStages) - 1) & 1);
        gf_load_stage(base + s * kStageBytes, a, w, m0, n0, kt * kBK, tid);
        if (it > 0) {
          asm volatile("cp.async.wait_group 1;" ::: "memory");
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          gf_mbar_arrive(gf_smem_addr(&full[(it - 1) % kStages]));
        }
      }
    }
    if (it > 0) {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      gf_mbar_arrive(gf_smem_addr(&full[(it - 1) % kStages]));
    }
    return;
  }

  if (kTileN >= 192 && kConsumers == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 224;");
  const int cw = group - 1, ct = tid & 127, lane = tid & 31, warp = (tid >> 5) & 3;
  const gf_elem* bias = static_cast<const gf_elem*>(buffers[kBufBias]);
  gf_elem* c_out = static_cast<gf_elem*>(buffers[kBufC]);
  unsigned char* out = gf_smem + (base - raw) + kStages * kStageBytes + cw * kOutBytes;
  int it = 0;
  for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x) {
    const int m0 = tile / kTilesN * kBM, n0 = tile % kTilesN * kTileN;
    float acc[kTileN / 2];
#pragma unroll
    for (int i = 0; i < kTileN / 2; ++i) acc[i] = 0.0f;
    for (int kt = 0; kt < kKTiles; ++kt, ++it) {
      const int s = it % kStages;
      gf_mbar_wait(gf_smem_addr(&full[s]), (it / kStages) & 1);
      const uint32_t st = base + s * kStageBytes;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
        gf_wgmma(acc, gf_smem_desc(st + cw * 64 * 128 + kk * 32),
                 gf_smem_desc(st + kABytes + kk * 32), (kt > 0 || kk > 0) ? 1 : 0);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      // The products of the stage before are done: hand it back.
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      if (kt > 0 && lane == 0) gf_mbar_arrive(gf_smem_addr(&empty[(it - 1) % kStages]));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (lane == 0) gf_mbar_arrive(gf_smem_addr(&empty[(it - 1) % kStages]));

    // Fragment j holds rows g and g + 8 of the warp's 16, columns 8j + 2t and 8j + 2t + 1. The
    // staging buffer holds 64-column blocks of 64 rows x 128 bytes, swizzled like the stages.
    // The barrier first: this warpgroup's reads of the previous tile are done.
    asm volatile("bar.sync %0, 128;" ::"r"(1 + cw) : "memory");
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int c = j * 8 + 2 * tq, col = n0 + c;
      float b0 = 0.0f, b1 = 0.0f;
      if (kHasBias) {
        if (col < kN) b0 = gf_elem_to_f32(bias[col]);
        if (col + 1 < kN) b1 = gf_elem_to_f32(bias[col + 1]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp * 16 + g + 8 * h;
        const uint32_t pair = gf_pack2(gf_activate(acc[4 * j + 2 * h] + b0),
                                       gf_activate(acc[4 * j + 2 * h + 1] + b1));
        *reinterpret_cast<uint32_t*>(out + (c / 64) * 8192 + gf_swizzled(r, (c % 64) / 8) +
                                     (c % 8) * 2) = pair;
      }
    }
    asm volatile("bar.sync %0, 128;" ::"r"(1 + cw) : "memory");
    constexpr int kPiecesPerRow = kTileN / 8;
    for (int q = ct; q < 64 * kPiecesPerRow; q += 128) {
      const int r = q / kPiecesPerRow, p = q % kPiecesPerRow;
      const int row = m0 + cw * 64 + r, col = n0 + p * 8;
      if (row >= kM || col >= kN) continue;
      const uint4 v = *reinterpret_cast<const uint4*>(out + (p / 8) * 8192 + gf_swizzled(r, p % 8));
      gf_elem* dst = c_out + (int64_t)row * kN + col;
      if (kRowsAligned && col + 8 <= kN) {
        *reinterpret_cast<uint4*>(dst) = v;
      } else {
        const gf_elem* e = reinterpret_cast<const gf_elem*>(&v);
        for (int i = 0; i < 8 && col + i < kN; ++i) dst[i] = e[i];
      }
    }
  }
}
