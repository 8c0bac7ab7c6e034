// The sm_90 tensor-core GEMM: C[m, n] = act(A[m, k] W[n, k]^T + bias[n]), f16/bf16 with f32
// accumulation, after the prelude, mma_fragments.cuh and wgmma_common.cuh. The emitter
// (codegen/cuda/tensor_core_gemm.cpp) writes ahead of it GF_NAME, gf_elem, kBf16, the shape (kM,
// kN, kK), the tile (kConsumers warpgroups of 64 rows, kTileN columns, kStages, kPingPong), the
// epilogue (kHasBias, kActivation), kRowsAligned (n a multiple of 8: rows of C are 16-byte
// aligned), the buffer indices (kBufA, kBufW, kBufBias, kBufC, kBufMaps) and gf_wgmma(), one m64
// x kTileN x k16 product.
//
// One block per SM walks the output tiles (persistent). One thread of warpgroup 0 loads: each
// stage's A and W tiles (64 k-elements per row, 128 bytes) arrive by TMA in the 128-byte
// swizzled layout wgmma reads, and complete the stage's mbarrier as they land. The other
// warpgroups each multiply 64 rows of the tile by all of its columns (wgmma, operands in shared
// memory) and hand the stage back. The loader runs ahead across tiles, so the next tile's loads
// overlap this tile's epilogue. The epilogue goes through shared memory (swizzled, so the
// fragment writes meet no bank conflicts) and leaves as 16-byte row-contiguous stores: direct
// 4-byte stores from the fragments took twice as long as the products at 4096 x 3072 x 768.
//
// TMA reads through tensor maps, which hold the operands' addresses, while the kernel gets its
// addresses from the pointer table (a rebinding may change them between launches). The private
// buffer kBufMaps holds the host-encoded templates of both maps, then a slot per block with maps
// of the addresses last seen; a block whose slot is stale rewrites it from the templates
// (tensormap.replace in shared memory, then a proxy-fenced copy out). cp.async loads from 128
// threads took twice as long at 4096 x 3072 x 768.

// Ping-pong: each consumer multiplies whole tiles (both 64-row groups), the two taking the
// block's tiles in turn, so that one's epilogue runs while the other's products do.
constexpr int kBM = 64 * kConsumers, kBK = 64;
constexpr int kGroups = kPingPong ? kConsumers : 1;      // row groups a consumer multiplies
constexpr int kStageUsers = kPingPong ? 1 : kConsumers;  // consumers that read each stage
constexpr int kTileStep = kPingPong ? kConsumers : 1;    // a consumer's tiles, in block tiles
// Registers move from the loader to the consumers where their accumulators need it.
constexpr bool kShiftRegisters = kConsumers == 2 && kGroups * kTileN >= 192;
constexpr uint32_t kABytes = kBM * kBK * 2, kBBytes = kTileN * kBK * 2;
constexpr uint32_t kStageBytes = kABytes + kBBytes, kOutBytes = kGroups * 64 * kTileN * 2;
constexpr int kTilesN = (kN + kTileN - 1) / kTileN, kTiles = ((kM + kBM - 1) / kBM) * kTilesN;
constexpr int kKTiles = (kK + kBK - 1) / kBK;
static_assert(kK % 8 == 0, "rows of A and W are whole 16-byte pieces");
static_assert(kStages >= 2, "one stage loads while another is multiplied");

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
static __device__ __forceinline__ void gf_mbar_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
// The box of `map` at (k0, row0) into shared memory at dst, completing `bar` by its bytes.
static __device__ __forceinline__ void gf_tma_load(uint32_t dst, const void* map, int k0, int row0,
                                                   uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(map), "r"(k0), "r"(row0), "r"(bar)
      : "memory");
}
// Run by the loader's first warp: makes this block's slot hold maps of A and W at their current
// addresses, and orders the slot before the TMA reads through it.
static __device__ __forceinline__ void gf_bind_maps(unsigned char* maps, const void* a,
                                                    const void* w, int lane) {
  __shared__ __align__(128) uint64_t fresh[2 * kMapBytes / 8];
  unsigned char* slot = maps + 2 * kMapBytes + (int64_t)blockIdx.x * kSlotBytes;
  uint64_t* seen = reinterpret_cast<uint64_t*>(slot + 2 * kMapBytes);
  if (seen[0] != (uint64_t)a || seen[1] != (uint64_t)w) {  // the same answer in every lane
    fresh[lane] = reinterpret_cast<const uint64_t*>(maps)[lane];
    __syncwarp();
    if (lane == 0) {
      asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(
                       gf_smem_addr(fresh)),
                   "l"(a)
                   : "memory");
      asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" ::"r"(
                       gf_smem_addr(fresh + kMapBytes / 8)),
                   "l"(w)
                   : "memory");
    }
    __syncwarp();
    asm volatile(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
        "[%0], [%1], 128;" ::"l"(slot),
        "r"(gf_smem_addr(fresh))
        : "memory");
    asm volatile(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
        "[%0], [%1], 128;" ::"l"(slot + kMapBytes),
        "r"(gf_smem_addr(fresh + kMapBytes / 8))
        : "memory");
    if (lane == 0) seen[0] = (uint64_t)a, seen[1] = (uint64_t)w;
  }
  if (lane == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(slot) : "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(slot + kMapBytes)
                 : "memory");
  }
}

static __device__ __forceinline__ float gf_elem_to_f32(gf_elem v) {
  return kBf16 ? gf_bf16_to_f32(v) : gf_f16_to_f32(v);
}
// Bias elements col and col + 1 (col even) as one 32-bit pair, col in the lower half, zero past
// kN (the buffer is 16-byte aligned).
static __device__ __forceinline__ uint32_t gf_bias_pair(const gf_elem* bias, int col) {
  if (col + 1 < kN) return *reinterpret_cast<const uint32_t*>(bias + col);
  return col < kN ? bias[col] : 0u;
}
static __device__ __forceinline__ float gf_activate(float x) {
  if (kActivation == 1) return x > 0.0f ? x : 0.0f;
  // The result is rounded to 16 bits right after: the prelude's 16-bit Gelu forms.
  if (kActivation == 2) return gf_gelu_erf_16bit(x, !kBf16);
  if (kActivation == 3) return gf_gelu_tanh_16bit(x, !kBf16);
  return x;
}

extern "C" __global__ void __launch_bounds__((kConsumers + 1) * 128, 1)
    GF_NAME(void* const* buffers) {
  extern __shared__ __align__(1024) unsigned char gf_smem[];
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  __shared__ float zero;  // -0, x + -0 = x for every x: see the epilogue
  const uint32_t raw = gf_smem_addr(gf_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the swizzle pattern repeats every 1024 bytes
  const int tid = threadIdx.x, group = tid >> 7;
  if (tid == 0) {
    zero = -0.0f;
    for (int s = 0; s < kStages; ++s) {
      gf_mbar_init(gf_smem_addr(&full[s]), 1);                // the loader's expected bytes
      gf_mbar_init(gf_smem_addr(&empty[s]), kStageUsers * 4);  // one lane per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (group == 0) {
    if (kShiftRegisters) asm volatile("setmaxnreg.dec.sync.aligned.u32 56;");
    if (tid >= 32) return;
    unsigned char* maps = static_cast<unsigned char*>(buffers[kBufMaps]);
    gf_bind_maps(maps, buffers[kBufA], buffers[kBufW], tid);
    if (tid != 0) return;
    const unsigned char* slot = maps + 2 * kMapBytes + (int64_t)blockIdx.x * kSlotBytes;
    int it = 0;
    for (int tile = blockIdx.x; tile < kTiles; tile += gridDim.x) {
      const int m0 = tile / kTilesN * kBM, n0 = tile % kTilesN * kTileN;
      for (int kt = 0; kt < kKTiles; ++kt, ++it) {
        const int s = it % kStages;
        if (it >= kStages) gf_mbar_wait(gf_smem_addr(&empty[s]), ((it / kStages) - 1) & 1);
        const uint32_t bar = gf_smem_addr(&full[s]), st = base + s * kStageBytes;
        gf_mbar_expect_bytes(bar, kStageBytes);  // a box's bytes count in full, zeros included
        gf_tma_load(st, slot, kt * kBK, m0, bar);
        gf_tma_load(st + kABytes, slot + kMapBytes, kt * kBK, n0, bar);
      }
    }
    return;
  }

  if (kShiftRegisters) asm volatile("setmaxnreg.inc.sync.aligned.u32 224;");
  const int cw = group - 1, ct = tid & 127, lane = tid & 31, warp = (tid >> 5) & 3;
  const gf_elem* bias = static_cast<const gf_elem*>(buffers[kBufBias]);
  gf_elem* c_out = static_cast<gf_elem*>(buffers[kBufC]);
  unsigned char* out = gf_smem + (base - raw) + kStages * kStageBytes + cw * kOutBytes;
  // Cooperative: every tile of the block, rows cw * 64 of it. Ping-pong: every other tile
  // (this consumer's), all of its rows.
  const int row0 = kPingPong ? 0 : cw * 64;
  for (int li = kPingPong ? cw : 0; blockIdx.x + li * gridDim.x < kTiles; li += kTileStep) {
    const int tile = blockIdx.x + li * gridDim.x;
    const int m0 = tile / kTilesN * kBM, n0 = tile % kTilesN * kTileN;
    // The tile's bias, as the pairs of columns this thread's fragments hold, loaded before the
    // products so that their latency hides behind them: loaded in the epilogue, after its shared
    // memory stores (which the compiler cannot tell apart from the bias), each pair waited for
    // one round trip in turn.
    uint32_t bias_pairs[kTileN / 8];
    if (kHasBias) {
#pragma unroll
      for (int j = 0; j < kTileN / 8; ++j)
        bias_pairs[j] = gf_bias_pair(bias, n0 + j * 8 + 2 * (lane & 3));
    }
    float acc[kGroups][kTileN / 2];
#pragma unroll
    for (int gr = 0; gr < kGroups; ++gr)
#pragma unroll
      for (int i = 0; i < kTileN / 2; ++i) acc[gr][i] = 0.0f;
    // Ping-pong: this consumer's products start once the other's for the tile before are done.
    // Besides the turns this gives, it keeps every stage barrier at most one phase ahead of a
    // consumer waiting on it, which its parity wait needs.
    if (kPingPong && li > 0) asm volatile("bar.sync %0, 256;" ::"r"(4 + cw) : "memory");
    int it = li * kKTiles;  // the loader's count of stages at this tile's first
    for (int kt = 0; kt < kKTiles; ++kt, ++it) {
      const int s = it % kStages;
      gf_mbar_wait(gf_smem_addr(&full[s]), (it / kStages) & 1);
      const uint32_t st = base + s * kStageBytes;
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk)
#pragma unroll
        for (int gr = 0; gr < kGroups; ++gr)
          gf_wgmma(acc[gr], gf_smem_desc(st + (row0 + gr * 64) * 128 + kk * 32),
                   gf_smem_desc(st + kABytes + kk * 32), (kt > 0 || kk > 0) ? 1 : 0);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      // The products of the stage before are done: hand it back.
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      if (kt > 0 && lane == 0) gf_mbar_arrive(gf_smem_addr(&empty[(it - 1) % kStages]));
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (lane == 0) gf_mbar_arrive(gf_smem_addr(&empty[(it - 1) % kStages]));
    // The other consumer's turn, where it has a next tile (barrier 4 + its index).
    if (kPingPong && blockIdx.x + (li + 1) * gridDim.x < kTiles)
      asm volatile("bar.arrive %0, 256;" ::"r"(4 + (1 - cw)) : "memory");

    // Fragment j holds rows g and g + 8 of the warp's 16, columns 8j + 2t and 8j + 2t + 1. The
    // staging buffer holds 64-column blocks of 64 rows x 128 bytes, swizzled like the stages,
    // row group after row group. The barrier first: this warpgroup's reads of its previous tile
    // are done.
    asm volatile("bar.sync %0, 128;" ::"r"(1 + cw) : "memory");
    // Ping-pong: the epilogue's arithmetic must follow the bar.arrive above, or the other
    // consumer's products wait for all of it. ptxas moves register-only math across barriers (it
    // had put the whole GELU ahead of the arrive); a zero read from shared memory after the
    // barrier, added to the bias (or to each value), keeps the math below it. -0 is the sum's
    // identity (and a constant -0 folds away).
    float z = -0.0f;
    if (kPingPong)
      asm volatile("ld.shared.f32 %0, [%1];" : "=f"(z) : "r"(gf_smem_addr(&zero)) : "memory");
    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int j = 0; j < kTileN / 8; ++j) {
      const int c = j * 8 + 2 * tq;
      float b0 = z, b1 = z;
      if (kHasBias) {
        b0 = gf_elem_to_f32((gf_elem)(bias_pairs[j] & 0xffffu)) + z;
        b1 = gf_elem_to_f32((gf_elem)(bias_pairs[j] >> 16)) + z;
      }
#pragma unroll
      for (int gr = 0; gr < kGroups; ++gr)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp * 16 + g + 8 * h;
          // Without a bias, no addition of zero (which would still cost an instruction: -0 + 0),
          // but in ping-pong.
          constexpr bool kAdd = kHasBias || kPingPong;
          const float v0 = kAdd ? acc[gr][4 * j + 2 * h] + b0 : acc[gr][4 * j + 2 * h];
          const float v1 = kAdd ? acc[gr][4 * j + 2 * h + 1] + b1 : acc[gr][4 * j + 2 * h + 1];
          const uint32_t pair = gf_pack2(gf_activate(v0), gf_activate(v1));
          *reinterpret_cast<uint32_t*>(out + (gr * (kTileN / 64) + c / 64) * 8192 +
                                       gf_swizzled(r, (c % 64) / 8) + (c % 8) * 2) = pair;
        }
    }
    asm volatile("bar.sync %0, 128;" ::"r"(1 + cw) : "memory");
    constexpr int kPiecesPerRow = kTileN / 8;
    for (int q = ct; q < kGroups * 64 * kPiecesPerRow; q += 128) {
      const int r = q / kPiecesPerRow, p = q % kPiecesPerRow;
      const int row = m0 + row0 + r, col = n0 + p * 8;
      if (row >= kM || col >= kN) continue;
      const uint4 v = *reinterpret_cast<const uint4*>(
          out + ((r / 64) * (kTileN / 64) + p / 8) * 8192 + gf_swizzled(r % 64, p % 8));
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
