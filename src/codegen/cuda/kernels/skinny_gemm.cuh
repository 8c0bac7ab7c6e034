// The skinny GEMM kernels on CUDA cores (C = epilogue(A x W), A of 1..16 rows), after
// skinny_gemm_common.cuh. The two layouts are described in codegen/cuda/skinny_gemm.cpp.
#if GF_TRANSPOSED
// acc[m] (and acc_up[m]) += the kVec products of row m of A, from element k0 on, with wv (and
// uv); with a row norm, A's elements are normalized with scale sv and bias bv (and rounded)
// first.
static __device__ __forceinline__ void gf_accumulate_rows(const gf_t* a, int k0, const float* wv,
                                                          const float* uv, const float* sv,
                                                          const float* bv, int valid, float* acc,
                                                          float* acc_up) {
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    float av[kVec];
    gf_load_vec(a + (int64_t)m * kK + k0, av, valid);
    if (kRowNorm != 0) {
#pragma unroll
      for (int i = 0; i < kVec; ++i)
        av[i] = gf_to_f32(gf_from_f32((av[i] - gf_row_mean[m]) * gf_row_rstd[m] * sv[i] + bv[i]));
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      acc[m] = __fmaf_rn(av[i], wv[i], acc[m]);
      if (kGated) acc_up[m] = __fmaf_rn(av[i], uv[i], acc_up[m]);
    }
  }
}

// W is [n, k]: warp w of the grid computes column w.
extern "C" __global__ void __launch_bounds__(256) GF_NAME(void* const* buffers) {
  const gf_t* w = static_cast<const gf_t*>(buffers[kBufW]);
  const gf_t* wu = static_cast<const gf_t*>(buffers[kBufWUp]);
  const int lane = threadIdx.x & 31;
  const int col = blockIdx.x * kWarps + (threadIdx.x >> 5);
  const gf_t* wrow = w + (int64_t)col * kK;
  const gf_t* wurow = wu + (int64_t)col * kK;
  if (kPreloadPieces > 0) gf_launch_dependents_now();  // measured slower with the L2 prefetch alone
  if (kPrefetchWeights && lane == 0 && col < kN) {
    gf_prefetch_l2(wrow, kK * sizeof(gf_t));
    if (kGated) gf_prefetch_l2(wurow, kK * sizeof(gf_t));
  }
  // The lane's pieces of W (constant) in flight before the wait; piece p starts at element
  // (p * 32 + lane) * kVec of the row. With kPreloadNorm, the norm's pieces too.
  constexpr int kPieces = kPreloadPieces > 0 ? kPreloadPieces : 1;
  constexpr int kNormPieces = kPreloadNorm ? kPieces : 1;
  uint4 wq[kPieces], uq[kGated ? kPieces : 1], sq[kNormPieces], bq[kPreloadNorm && kRowNormBias ? kPieces : 1];
#pragma unroll
  for (int p = 0; p < kPreloadPieces; ++p) {
    const int k0 = (p * 32 + lane) * kVec;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    wq[p] = uq[kGated ? p : 0] = sq[kPreloadNorm ? p : 0] = bq[kPreloadNorm && kRowNormBias ? p : 0] = zero;
    if (col < kN && k0 < kK) {
      wq[p] = gf_load_before_wait(wrow + k0);
      if (kGated) uq[kGated ? p : 0] = gf_load_before_wait(wurow + k0);
    }
    if (kPreloadNorm && k0 < kK) {
      sq[kPreloadNorm ? p : 0] = gf_load_before_wait(static_cast<const gf_t*>(buffers[kBufNormScale]) + k0);
      if (kRowNormBias)
        bq[kPreloadNorm && kRowNormBias ? p : 0] =
            gf_load_before_wait(static_cast<const gf_t*>(buffers[kBufNormBias]) + k0);
    }
  }
  gf_prefetch_next_weights(buffers);
  // The lane that stores reads its bias now when it is a constant, else right after the wait.
  float bias = 0.0f;
  if (kHasBias && kConstantEpilogue && lane == 0 && col < kN) bias = gf_bias_at(buffers, col);
  // A and the residual are what the kernels before this one wrote; their addresses are read
  // before the wait where no binding repoints them, else after it. The residual's loads go out
  // before the sums.
  const gf_t* a_early = kStableInputAddresses ? gf_entry_before_wait(buffers, kBufA) : nullptr;
  const gf_t* residual_early =
      kStableInputAddresses && kHasResidual ? gf_entry_before_wait(buffers, kBufResidual) : nullptr;
  gf_grid_dependency_sync();
  const gf_t* a = kStableInputAddresses ? a_early : static_cast<const gf_t*>(buffers[kBufA]);
  gf_t* const c = static_cast<gf_t*>(buffers[kBufC]);
  float residual[kM];
#pragma unroll
  for (int m = 0; m < kM; ++m) residual[m] = 0.0f;
  if (lane == 0 && col < kN) {
    if (kHasBias && !kConstantEpilogue) bias = gf_bias_at(buffers, col);
#pragma unroll
    for (int m = 0; m < kM; ++m)
      residual[m] = kStableInputAddresses ? gf_residual_at(residual_early, m, col) : gf_residual_at(buffers, m, col);
  }
  if (kRowNorm != 0) gf_row_statistics(a);
  if (col >= kN) return;
  float acc[kM], acc_up[kM];
#pragma unroll
  for (int m = 0; m < kM; ++m) acc[m] = acc_up[m] = 0.0f;
#pragma unroll
  for (int p = 0; p < kPreloadPieces; ++p) {
    const int k0 = (p * 32 + lane) * kVec;
    if (k0 >= kK) break;
    float wv[kVec], uv[kVec], sv[kVec], bv[kVec];
    gf_unpack(wq[p], wv);
    if (kGated) gf_unpack(uq[kGated ? p : 0], uv);
    if (kPreloadNorm) {
      gf_unpack(sq[kPreloadNorm ? p : 0], sv);
#pragma unroll
      for (int i = 0; i < kVec; ++i) bv[i] = 0.0f;
      if (kRowNormBias) gf_unpack(bq[kPreloadNorm && kRowNormBias ? p : 0], bv);
    } else {
      gf_load_norm(buffers, k0, kVec, sv, bv);
    }
    gf_accumulate_rows(a, k0, wv, uv, sv, bv, kVec, acc, acc_up);
  }
#pragma unroll 4
  for (int k0 = (kPreloadPieces * 32 + lane) * kVec; k0 < kK; k0 += 32 * kVec) {
    const int valid = kK - k0 < kVec ? kK - k0 : kVec;
    float wv[kVec], uv[kVec], sv[kVec], bv[kVec];
    gf_load_vec(wrow + k0, wv, valid);
    if (kGated) gf_load_vec(wurow + k0, uv, valid);
    gf_load_norm(buffers, k0, valid, sv, bv);
    gf_accumulate_rows(a, k0, wv, uv, sv, bv, valid, acc, acc_up);
  }
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) {
      acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], mask);
      if (kGated) acc_up[m] += __shfl_xor_sync(0xffffffffu, acc_up[m], mask);
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int m = 0; m < kM; ++m) gf_store_to(c, m, col, acc[m], acc_up[m], bias, residual[m]);
  }
}
#else
// W is [k, n]: block b is column tile b % kTiles of k split b / kTiles.
constexpr int kTileCols = 32 * kVec;
extern "C" __global__ void __launch_bounds__(256) GF_NAME(void* const* buffers) {
  // A's address: before the wait only where no binding repoints it (see gf_entry_before_wait).
  const gf_t* a_early = kStableInputAddresses ? gf_entry_before_wait(buffers, kBufA) : nullptr;
  const gf_t* w = static_cast<const gf_t*>(buffers[kBufW]);
  const gf_t* wu = static_cast<const gf_t*>(buffers[kBufWUp]);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int tile = blockIdx.x % kTiles;
  const int split = blockIdx.x / kTiles;
  const int tile_col0 = tile * kTileCols;
  const int col0 = tile_col0 + lane * kVec;
  const int valid = kN - col0 < kVec ? kN - col0 : kVec;
  const int k_begin = split * kKPerSplit;
  const int k_end = k_begin + kKPerSplit < kK ? k_begin + kKPerSplit : kK;
  if (kPrefetchWeights) {
    const unsigned int bytes = (kN - tile_col0 < kTileCols ? kN - tile_col0 : kTileCols) * sizeof(gf_t);
    for (int k = k_begin + (int)threadIdx.x; k < k_end; k += (int)blockDim.x) {
      gf_prefetch_l2(w + (int64_t)k * kN + tile_col0, bytes);
      if (kGated) gf_prefetch_l2(wu + (int64_t)k * kN + tile_col0, bytes);
    }
  }
  gf_prefetch_next_weights(buffers);
  gf_grid_dependency_sync();
  const gf_t* a = kStableInputAddresses ? a_early : static_cast<const gf_t*>(buffers[kBufA]);

  float acc[kM][kVec], acc_up[kGated ? kM : 1][kVec];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[m][i] = 0.0f;
#pragma unroll
  for (int m = 0; m < (kGated ? kM : 1); ++m)
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc_up[m][i] = 0.0f;
  if (valid > 0) {
#pragma unroll 4
    for (int k = k_begin + warp; k < k_end; k += kWarps) {
      float wv[kVec], uv[kVec];
      gf_load_vec(w + (int64_t)k * kN + col0, wv, valid);
      if (kGated) gf_load_vec(wu + (int64_t)k * kN + col0, uv, valid);
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        const float av = gf_to_f32(a[(int64_t)m * kK + k]);
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          acc[m][i] = __fmaf_rn(av, wv[i], acc[m][i]);
          if (kGated) acc_up[kGated ? m : 0][i] = __fmaf_rn(av, uv[i], acc_up[kGated ? m : 0][i]);
        }
      }
    }
  }

  // The block's warps summed per row m, in warp order.
  __shared__ float gf_red[kWarps][kTileCols];
  __shared__ float gf_tile[kM][kTileCols];
  __shared__ float gf_tile_up[kGated ? kM : 1][kGated ? kTileCols : 1];
  for (int pass = 0; pass < (kGated ? 2 : 1); ++pass) {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) gf_red[warp][lane * kVec + i] = pass ? acc_up[kGated ? m : 0][i] : acc[m][i];
      __syncthreads();
      for (int c = threadIdx.x; c < kTileCols; c += blockDim.x) {
        float s = 0.0f;
#pragma unroll
        for (int x = 0; x < kWarps; ++x) s += gf_red[x][c];
        if (pass) gf_tile_up[kGated ? m : 0][kGated ? c : 0] = s; else gf_tile[m][c] = s;
      }
      __syncthreads();
    }
  }

  if (kSplits == 1) {
    for (int idx = threadIdx.x; idx < kM * kTileCols; idx += blockDim.x) {
      const int m = idx / kTileCols, c = idx % kTileCols;
      if (tile_col0 + c < kN) gf_store(buffers, m, tile_col0 + c, gf_tile[m][c], kGated ? gf_tile_up[kGated ? m : 0][kGated ? c : 0] : 0.0f);
    }
    return;
  }
  // Splits: partials to the workspace; the last block of the tile to arrive sums them in split
  // order and resets the tile's counter for the next launch.
  unsigned int* counters = static_cast<unsigned int*>(buffers[kBufWorkspace]);
  float* partials = reinterpret_cast<float*>(static_cast<char*>(buffers[kBufWorkspace]) + kCounterBytes);
  float* partials_up = partials + (int64_t)kSplits * kM * kN;
  for (int idx = threadIdx.x; idx < kM * kTileCols; idx += blockDim.x) {
    const int m = idx / kTileCols, c = idx % kTileCols;
    if (tile_col0 + c >= kN) continue;
    const int64_t at = ((int64_t)split * kM + m) * kN + tile_col0 + c;
    __stcg(partials + at, gf_tile[m][c]);
    if (kGated) __stcg(partials_up + at, gf_tile_up[kGated ? m : 0][kGated ? c : 0]);
  }
  __threadfence();
  __syncthreads();
  __shared__ bool gf_last;
  if (threadIdx.x == 0) gf_last = atomicAdd(counters + tile, 1u) == (unsigned int)(kSplits - 1);
  __syncthreads();
  if (!gf_last) return;
  __threadfence();
  for (int idx = threadIdx.x; idx < kM * kTileCols; idx += blockDim.x) {
    const int m = idx / kTileCols, c = idx % kTileCols;
    const int col = tile_col0 + c;
    if (col >= kN) continue;
    float s = 0.0f, su = 0.0f;
    for (int sp = 0; sp < kSplits; ++sp) {
      const int64_t at = ((int64_t)sp * kM + m) * kN + col;
      s += __ldcg(partials + at);
      if (kGated) su += __ldcg(partials_up + at);
    }
    gf_store(buffers, m, col, s, su);
  }
  if (threadIdx.x == 0) counters[tile] = 0u;
}
#endif
