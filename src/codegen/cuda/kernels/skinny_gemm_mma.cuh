// The skinny GEMM kernel on tensor cores: W [n, k] in f16/bf16, k a multiple of 8, after
// skinny_gemm_common.cuh, mma_fragments.cuh and cluster.cuh. The emitter adds kClusterBlocks
// (also as GF_CLUSTER_BLOCKS), kN8 (MMA column groups per block), kChunksPerWarp, kPreloadChunks,
// and GF_CLUSTER (the entry's __cluster_dims__, or nothing).
//
// A's rows (up to 16) are the 16 rows of an mma.sync m16n8k16 A operand and 8 rows of W its 8
// columns (W [n, k] row-major is the column-major B operand): the tensor cores do the m
// multiply-adds per weight that a CUDA-core lane would do one by one. Block b of the grid takes
// the 8 kN8 output columns of tile b / kClusterBlocks; the warps of its cluster split k into runs
// of kChunksPerWarp chunks of 32. In a chunk, lane (g, t) = (lane / 4, lane % 4) loads 16 bytes
// (elements 8t .. 8t + 7) of W's rows g + 8j and of A's rows g and g + 8: a permutation of k that both
// operands share, so each lane loads whole 16-byte pieces straight into fragment registers, with
// no shuffle or shared memory on the way in. The lane's pieces of W (a constant) are loaded
// before the wait, as the CUDA-core kernel does. The warps' m x 8 sums meet in shared memory, the
// cluster's blocks in block 0 (distributed shared memory), both in a fixed order: results are
// bitwise repeatable. A's pieces are read once per warp for all kN8 groups: blocks of more
// columns read A from L2 fewer times over.
#if !GF_TRANSPOSED || GF_DTYPE == 0
#error "the tensor-core skinny GEMM takes W [n, k] in f16 or bf16"
#endif

constexpr int kChunk = 32;    // k elements per chunk: 4 lanes x 8
constexpr int kTileCols = 8 * kN8;  // output columns per block
constexpr int kUps = kGated ? 2 : 1;  // W, then W_up
constexpr int kThreads = kWarps * 32;
constexpr int kOutPerThread = (kM * kTileCols + kThreads - 1) / kThreads;
static_assert(kK % 8 == 0, "rows of W and A are whole 16-byte pieces");

__shared__ float gf_warp_sums[kWarps][kUps][16][kTileCols];
__shared__ float gf_block_sums[kUps][kM][kTileCols];

// The 8 elements of A's row m from k0 on, as an MMA operand piece (zeros past the rows); with a
// row norm, normalized with the norm's pieces s and b and rounded as the norm's output would be.
static __device__ __forceinline__ uint4 gf_a_piece(const gf_t* a, int m, int k0, bool valid, void* const* buffers) {
  if (!valid || m >= kM) return make_uint4(0u, 0u, 0u, 0u);
  const uint4 x = __ldg(reinterpret_cast<const uint4*>(a + (int64_t)m * kK + k0));
  if (kRowNorm == 0) return x;
  float v[8], s[8], b[8];
  gf_unpack(x, v);
  gf_load_norm(buffers, k0, 8, s, b);
  uint32_t r[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    r[i] = gf_pack2((v[2 * i] - gf_row_mean[m]) * gf_row_rstd[m] * s[2 * i] + b[2 * i],
                    (v[2 * i + 1] - gf_row_mean[m]) * gf_row_rstd[m] * s[2 * i + 1] + b[2 * i + 1]);
  }
  return make_uint4(r[0], r[1], r[2], r[3]);
}

// acc[u][j] += the chunk's products: x[h] is A's piece of row g + 8h, w[u][j] W(u)'s of row
// g + 8j. Step s takes words 2s and 2s + 1 of each piece (elements 4s .. 4s + 3).
static __device__ __forceinline__ void gf_chunk_mma(float (*acc)[kN8][4], const uint4 (*w)[kN8], const uint4* x) {
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const uint32_t frag[4] = {s ? x[0].z : x[0].x, s ? x[1].z : x[1].x, s ? x[0].w : x[0].y, s ? x[1].w : x[1].y};
#pragma unroll
    for (int u = 0; u < kUps; ++u)
#pragma unroll
      for (int j = 0; j < kN8; ++j) gf_mma(acc[u][j], frag, s ? w[u][j].z : w[u][j].x, s ? w[u][j].w : w[u][j].y);
  }
}

extern "C" __global__ void GF_CLUSTER __launch_bounds__(kThreads) GF_NAME(void* const* buffers) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
#if GF_CLUSTER_BLOCKS > 1
  const uint32_t rank = gf_cluster_rank();
#else
  const uint32_t rank = 0;
#endif
  const int n0 = (int)(blockIdx.x / kClusterBlocks) * kTileCols;
  const int first_chunk = ((int)rank * kWarps + warp) * kChunksPerWarp;
  const gf_t* w[2] = {static_cast<const gf_t*>(buffers[kBufW]) + (int64_t)(n0 + g) * kK,
                      static_cast<const gf_t*>(buffers[kBufWUp]) + (int64_t)(n0 + g) * kK};
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  // W(u)'s piece of row n0 + g + 8j at element k0, zeros past the rows and k.
  const auto w_ok = [&](int j, int k0) { return k0 < kK && n0 + g + 8 * j < kN; };

  // The lane's pieces of W (constant) in flight before the wait.
  if (kPreloadChunks > 0) gf_launch_dependents_now();
  uint4 wq[kPreloadChunks > 0 ? kPreloadChunks : 1][kUps][kN8];
#pragma unroll
  for (int c = 0; c < kPreloadChunks; ++c) {
    const int k0 = (first_chunk + c) * kChunk + 8 * t;
#pragma unroll
    for (int u = 0; u < kUps; ++u)
#pragma unroll
      for (int j = 0; j < kN8; ++j)
        wq[c][u][j] = w_ok(j, k0) ? gf_load_before_wait(w[u] + (int64_t)8 * j * kK + k0) : zero;
  }
  gf_prefetch_next_weights(buffers);
  // Each thread's column in the epilogue is threadIdx.x % kTileCols (kThreads is a multiple).
  const int col = n0 + (int)(threadIdx.x & (kTileCols - 1));
  float bias = 0.0f;
  if (kHasBias && kConstantEpilogue && rank == 0 && col < kN) bias = gf_bias_at(buffers, col);
  const gf_t* a_early = kStableInputAddresses ? gf_entry_before_wait(buffers, kBufA) : nullptr;
  const gf_t* residual_early =
      kStableInputAddresses && kHasResidual ? gf_entry_before_wait(buffers, kBufResidual) : nullptr;
  gf_grid_dependency_sync();
  const gf_t* a = kStableInputAddresses ? a_early : static_cast<const gf_t*>(buffers[kBufA]);
  gf_t* const c_out = static_cast<gf_t*>(buffers[kBufC]);
  // The residual's and (when not constant) the bias's loads go out before the sums.
  float residual[kOutPerThread];
#pragma unroll
  for (int o = 0; o < kOutPerThread; ++o) {
    const int m = (int)(threadIdx.x + o * kThreads) / kTileCols;
    residual[o] = 0.0f;
    if (rank == 0 && m < kM && col < kN)
      residual[o] = kStableInputAddresses ? gf_residual_at(residual_early, m, col) : gf_residual_at(buffers, m, col);
  }
  if (kHasBias && !kConstantEpilogue && rank == 0 && col < kN) bias = gf_bias_at(buffers, col);
  if (kRowNorm != 0) gf_row_statistics(a);

  float acc[kUps][kN8][4];
#pragma unroll
  for (int u = 0; u < kUps; ++u)
#pragma unroll
    for (int j = 0; j < kN8; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[u][j][i] = 0.0f;
#pragma unroll
  for (int c = 0; c < kPreloadChunks; ++c) {
    const int k0 = (first_chunk + c) * kChunk + 8 * t;
    const uint4 x[2] = {gf_a_piece(a, g, k0, k0 < kK, buffers), gf_a_piece(a, g + 8, k0, k0 < kK, buffers)};
    gf_chunk_mma(acc, wq[c], x);
  }
#pragma unroll 4
  for (int c = kPreloadChunks; c < kChunksPerWarp; ++c) {
    const int k0 = (first_chunk + c) * kChunk + 8 * t;
    uint4 wv[kUps][kN8];
#pragma unroll
    for (int u = 0; u < kUps; ++u)
#pragma unroll
      for (int j = 0; j < kN8; ++j)
        wv[u][j] = w_ok(j, k0) ? __ldg(reinterpret_cast<const uint4*>(w[u] + (int64_t)8 * j * kK + k0)) : zero;
    const uint4 x[2] = {gf_a_piece(a, g, k0, k0 < kK, buffers), gf_a_piece(a, g + 8, k0, k0 < kK, buffers)};
    gf_chunk_mma(acc, wv, x);
  }

  // Fragment element i of group j: row of A g + 8 (i / 2), output column n0 + 8j + 2t + i % 2.
#pragma unroll
  for (int u = 0; u < kUps; ++u)
#pragma unroll
    for (int j = 0; j < kN8; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) gf_warp_sums[warp][u][g + 8 * (i >> 1)][8 * j + 2 * t + (i & 1)] = acc[u][j][i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < kUps * kM * kTileCols; idx += kThreads) {
    const int u = idx / (kM * kTileCols), m = idx / kTileCols % kM, c = idx % kTileCols;
    float s = 0.0f;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) s += gf_warp_sums[x][u][m][c];
    gf_block_sums[u][m][c] = s;
  }
#if GF_CLUSTER_BLOCKS > 1
  gf_cluster_sync();  // every block's sums are in place
  if (rank == 0) {
#pragma unroll
    for (int o = 0; o < kOutPerThread; ++o) {
      const int m = (int)(threadIdx.x + o * kThreads) / kTileCols, c = (int)(threadIdx.x & (kTileCols - 1));
      if (m >= kM || n0 + c >= kN) continue;
      float v = 0.0f, up = 0.0f;
      for (uint32_t r = 0; r < (uint32_t)kClusterBlocks; ++r) {
        v += gf_cluster_load(&gf_block_sums[0][m][c], r);
        if (kGated) up += gf_cluster_load(&gf_block_sums[kUps - 1][m][c], r);
      }
      gf_store_to(c_out, m, n0 + c, v, up, bias, residual[o]);
    }
  }
  gf_cluster_sync();  // block 0 has read the others' sums before they exit
#else
  __syncthreads();
#pragma unroll
  for (int o = 0; o < kOutPerThread; ++o) {
    const int m = (int)(threadIdx.x + o * kThreads) / kTileCols, c = (int)(threadIdx.x & (kTileCols - 1));
    if (m < kM && n0 + c < kN)
      gf_store_to(c_out, m, n0 + c, gf_block_sums[0][m][c], gf_block_sums[kUps - 1][m][c], bias, residual[o]);
  }
#endif
}
