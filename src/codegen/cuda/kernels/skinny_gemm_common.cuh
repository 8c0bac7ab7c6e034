// What the skinny GEMM kernels share (skinny_gemm.cuh on CUDA cores, skinny_gemm_mma.cuh on
// tensor cores), for codegen/cuda/skinny_gemm.cpp, which writes ahead of it the prelude, GF_NAME,
// GF_DTYPE (0 f32, 1 f16, 2 bf16), GF_TRANSPOSED (W stored [n, k]), gf_t, and the spec's and
// layout's constants (kM, kN, kK, kVec, kWarps, ..., the buffer indices kBufA ... kBufWorkspace):
// conversions, 16-byte loads, the epilogue, and (W [n, k]) the row norm's statistics.
static __device__ __forceinline__ float gf_to_f32(gf_t v) {
#if GF_DTYPE == 0
  return v;
#elif GF_DTYPE == 1
  return gf_f16_to_f32(v);
#else
  return __uint_as_float(((uint32_t)v) << 16);
#endif
}
static __device__ __forceinline__ gf_t gf_from_f32(float f) {
#if GF_DTYPE == 0
  return f;
#elif GF_DTYPE == 1
  return gf_f32_to_f16(f);
#else
  return gf_f32_to_bf16(f);
#endif
}
// The kVec elements of one 16-byte piece as floats.
static __device__ __forceinline__ void gf_unpack(const uint4 v, float* out) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#if GF_DTYPE == 0
    out[i] = __uint_as_float(w[i]);
#else
    out[2 * i] = gf_to_f32((gf_t)(w[i] & 0xffffu));
    out[2 * i + 1] = gf_to_f32((gf_t)(w[i] >> 16));
#endif
  }
}
// kVec elements from p: one 16-byte load when rows are aligned, else element by element
// (only the first `valid` are read).
static __device__ __forceinline__ void gf_load_vec(const gf_t* p, float* out, int valid) {
  if (kVectorLoads) {
    gf_unpack(__ldg(reinterpret_cast<const uint4*>(p)), out);
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) out[i] = i < valid ? gf_to_f32(p[i]) : 0.0f;
  }
}
static __device__ __forceinline__ float gf_activate(float x) {
  if (kActivation == 1) return x > 0.0f ? x : 0.0f;
  if (kActivation == 2) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if (kActivation == 3) {
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  }
  if (kActivation == 4) return x / (1.0f + expf(-x));
  return x;
}
static __device__ __forceinline__ float gf_bias_at(void* const* buffers, int col) {
  return kHasBias ? gf_to_f32(static_cast<const gf_t*>(buffers[kBufBias])[col]) : 0.0f;
}
static __device__ __forceinline__ float gf_residual_at(const gf_t* residual, int m, int col) {
  return kHasResidual ? gf_to_f32(residual[(int64_t)m * kN + col]) : 0.0f;
}
static __device__ __forceinline__ float gf_residual_at(void* const* buffers, int m, int col) {
  return kHasResidual ? gf_residual_at(static_cast<const gf_t*>(buffers[kBufResidual]), m, col) : 0.0f;
}
// Pointer-table entry `i` read before gf_grid_dependency_sync(), for the entries of A and the
// residual when no binding can repoint them (kStableInputAddresses): gf_bind_in rewrites the
// entries of values bound to the caller's buffers after its own trigger, so those are read after
// the wait. A coherent load, which ptxas keeps above the wait.
static __device__ __forceinline__ const gf_t* gf_entry_before_wait(void* const* buffers, int i) {
  unsigned long long p;
  asm volatile("ld.global.u64 %0, [%1];" : "=l"(p) : "l"(buffers + i));
  return reinterpret_cast<const gf_t*>(p);
}
// This block's share of `bytes` of constant data at p towards L2: the whole 16-byte pieces in
// it, split into gridDim.x runs, one bulk prefetch per block.
static __device__ __forceinline__ void gf_prefetch_share_l2(const void* p,
                                                            unsigned long long bytes) {
  const unsigned long long begin = ((unsigned long long)p + 15ull) & ~15ull;
  const unsigned long long end = ((unsigned long long)p + bytes) & ~15ull;
  if (end <= begin) return;
  const unsigned long long pieces = (end - begin) / 16ull;
  const unsigned long long per_block = (pieces + gridDim.x - 1ull) / gridDim.x;
  const unsigned long long first = blockIdx.x * per_block;
  if (first >= pieces) return;
  const unsigned long long count = pieces - first < per_block ? pieces - first : per_block;
  gf_prefetch_l2(reinterpret_cast<const void*>(begin + 16ull * first),
                 (unsigned int)(16ull * count));
}
// The next kernel's weights (SkinnyGemmSpec::next_w_bytes) towards L2, by one thread per block,
// before the wait: they are constants.
static __device__ __forceinline__ void gf_prefetch_next_weights(void* const* buffers) {
  if (kNextWBytes + kNextWUpBytes == 0 || threadIdx.x != 0) return;
  if (kNextWBytes > 0) gf_prefetch_share_l2(gf_entry_before_wait(buffers, kBufNextW), kNextWBytes);
  if (kNextWUpBytes > 0)
    gf_prefetch_share_l2(gf_entry_before_wait(buffers, kBufNextWUp), kNextWUpBytes);
}
// c[m, col] = the epilogue of the sum v (and of the up product's sum when gated), with the bias
// and residual element already read. The W [n, k] kernels read C's address right after their
// wait, so that no dependent load of it is left between the sums and the store.
static __device__ __forceinline__ void gf_store_to(gf_t* c, int m, int col, float v, float up, float bias,
                                                   float residual) {
  if (kHasBias) v += bias;
  v = kGated ? (v / (1.0f + expf(-v))) * up : gf_activate(v);
  if (kHasResidual) v += residual;
  c[(int64_t)m * kN + col] = gf_from_f32(v);
}
static __device__ __forceinline__ void gf_store_with(void* const* buffers, int m, int col, float v, float up,
                                                     float bias, float residual) {
  gf_store_to(static_cast<gf_t*>(buffers[kBufC]), m, col, v, up, bias, residual);
}
static __device__ __forceinline__ void gf_store(void* const* buffers, int m, int col, float v, float up) {
  gf_store_with(buffers, m, col, v, up, gf_bias_at(buffers, col), gf_residual_at(buffers, m, col));
}

#if GF_TRANSPOSED
// The row norm's statistics (kRowNorm), one pair per row of A, computed once per block.
__shared__ float gf_row_mean[kM], gf_row_rstd[kM];

static __device__ __forceinline__ float gf_warp_sum(float v) {
#pragma unroll
  for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(0xffffffffu, v, mask);
  return v;
}

// The sum of f(x) over a row of A: lanes take 16-byte pieces, four pieces
// per round all in flight at once (a load per element in turn would wait out the cache's
// latency each time).
constexpr int kRowPieces = (kK + 32 * kVec - 1) / (32 * kVec);
template <class F>
static __device__ __forceinline__ float gf_row_sum(const gf_t* row, F f) {
  const int lane = threadIdx.x & 31;
  float s = 0.0f;
  for (int p0 = 0; p0 < kRowPieces; p0 += 4) {
    float v[4][kVec];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int k0 = ((p0 + p) * 32 + lane) * kVec;
      const int valid = k0 >= kK ? 0 : kK - k0 < kVec ? kK - k0 : kVec;
      if (valid > 0) gf_load_vec(row + k0, v[p], valid);
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[p][i] = i < valid ? v[p][i] : 0.0f;
    }
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int k0 = ((p0 + p) * 32 + lane) * kVec;
#pragma unroll
      for (int i = 0; i < kVec; ++i) s += k0 + i < kK ? f(v[p][i]) : 0.0f;
    }
  }
  return gf_warp_sum(s);
}

// Warp w takes rows w, w + kWarps, ...: mean (LayerNorm) and 1 / sqrt(mean square + eps), the
// squares taken about the mean, as the norm kernels do.
static __device__ __forceinline__ void gf_row_statistics(const gf_t* x) {
  for (int m = threadIdx.x >> 5; m < kM; m += kWarps) {
    const gf_t* row = x + (int64_t)m * kK;
    const float mean = kRowNorm == 1 ? gf_row_sum(row, [](float v) { return v; }) / (float)kK : 0.0f;
    const float q = gf_row_sum(row, [mean](float v) { return (v - mean) * (v - mean); });
    if ((threadIdx.x & 31) == 0) {
      gf_row_mean[m] = mean;
      gf_row_rstd[m] = 1.0f / sqrtf(q / (float)kK + kRowNormEpsilon);
    }
  }
  __syncthreads();
}

// The row norm's scale and bias (zeros without one) from element k0 on.
static __device__ __forceinline__ void gf_load_norm(void* const* buffers, int k0, int valid, float* sv, float* bv) {
#pragma unroll
  for (int i = 0; i < kVec; ++i) sv[i] = 1.0f, bv[i] = 0.0f;
  if (kRowNorm == 0) return;
  gf_load_vec(static_cast<const gf_t*>(buffers[kBufNormScale]) + k0, sv, valid);
  if (kRowNormBias) gf_load_vec(static_cast<const gf_t*>(buffers[kBufNormBias]) + k0, bv, valid);
}

#endif  // GF_TRANSPOSED
