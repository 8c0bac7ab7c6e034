// Decode attention split across the key/value length (ONNX opset 23 semantics, as
// src/runtime/cpu/reference/attention.cpp) for a few query rows against a long key/value cache.
// One thread-block cluster of kClusterBlocks blocks per (batch, key/value head): its query rows
// are the kGroup query heads that share that key/value head times the kSq query positions
// (kRows <= 8), so K and V are read once for all of them. Block `rank` of the cluster takes
// the rank-th slice of the keys; inside it, teams of kLanesPerKey lanes take one key at a time
// (each lane 8 of the head's dims), teams of all warps walking the slice together so that
// neighbouring teams read neighbouring keys. Every team keeps a running max, sum and weighted
// sum of V per row (online softmax in f32, log2 units); the teams of a warp are merged by
// shuffles, the warps of a block through shared memory, and the blocks of the cluster by block
// 0, which reads the others' partial results from their shared memory (distributed shared
// memory, sm_90) and writes Y. No workspace and one launch.
//
// Needs from the emitter: attention_common.cuh before it, gf_elem / gf_load / gf_store,
// gf_mask_elem, the constants of attention_common.cuh and kB, kHq, kGroup, kSq, kSkv, kD (= kDv,
// 8 times a power of two up to 256), the kQ/kK/kV/kY strides, kScale, kSoftcap, and kWarps, kClusterBlocks, kRows
// (= kGroup * kSq). The entry point carries __cluster_dims__(kClusterBlocks, 1, 1). Not for
// is_causal (the emitter does not choose it then).
//
// Against the reference: scores are sums of f32 products in another order; softmax and the
// weighted sum differ by rounding only.

constexpr int kDecodeThreads = 32 * (int)kWarps;
constexpr int kLanesPerKey = (int)kD / 8;           // lanes per team: 8 dims each
constexpr int kTeamsPerWarp = 32 / kLanesPerKey;
constexpr int kTeams = kTeamsPerWarp * (int)kWarps;  // teams per block
constexpr int kDecodeRows = (int)kRows;
constexpr int kUnroll = 4;  // keys per team in flight, and per online-softmax update
constexpr int64_t kHkv = kHq / (kGroup > 0 ? kGroup : 1);
constexpr float kDecodeLog2e = 1.4426950408889634f;
constexpr float kDecodeSoftcapDivisor = kSoftcap > 0.0f ? kSoftcap : 1.0f;  // used only when > 0
static_assert(kD >= 8 && kD <= 256 && (kLanesPerKey & (kLanesPerKey - 1)) == 0 && kD % 8 == 0,
              "head size of the decode kernel: 8 times a power of two, at most 256");
static_assert(kDecodeRows >= 1 && kDecodeRows * kD <= 1024, "rows x head size of the decode kernel");

static __device__ __forceinline__ uint32_t gf_decode_smem_addr(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// A float at `local` (this block's shared memory) in the shared memory of cluster block `rank`.
static __device__ __forceinline__ float gf_cluster_load(const float* local, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(gf_decode_smem_addr(local)), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}

static __device__ __forceinline__ void gf_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

static __device__ __forceinline__ uint32_t gf_cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// 8 consecutive elements from `p` as floats: one 16-byte load for 16-bit storage when aligned.
static __device__ __forceinline__ void gf_decode_load8(float* out, const gf_elem* p, bool aligned) {
  if constexpr (sizeof(gf_elem) == 2) {
    if (aligned) {
      const uint4 raw = *reinterpret_cast<const uint4*>(p);
      const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        out[2 * e] = gf_load((gf_elem)(words[e] & 0xffffu));
        out[2 * e + 1] = gf_load((gf_elem)(words[e] >> 16));
      }
      return;
    }
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = gf_load(p[e]);
}

// Merges running state (m2, l2, acc2) into (m, l, acc): maxima in log2 units, -inf for none.
static __device__ __forceinline__ void gf_decode_merge(float& m, float& l, float* acc, float m2, float l2,
                                                       const float* acc2) {
  const float mx = fmaxf(m, m2);
  const float f1 = m == gf_neg_inf() ? 0.0f : exp2f(m - mx);
  const float f2 = m2 == gf_neg_inf() ? 0.0f : exp2f(m2 - mx);
  m = mx;
  l = l * f1 + l2 * f2;
#pragma unroll
  for (int e = 0; e < 8; ++e) acc[e] = acc[e] * f1 + acc2[e] * f2;
}

static __device__ __forceinline__ void gf_attention_decode(void* const* buffers) {
  const gf_elem* q = (const gf_elem*)buffers[0] + kQOffset;
  const gf_elem* k = (const gf_elem*)buffers[1] + kKOffset;
  const gf_elem* v = (const gf_elem*)buffers[2] + kVOffset;
  const void* mask = kHasMask ? buffers[3] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasMask ? 4 : 3] + kYOffset;

  // Per warp: each row's max, sum and weighted sum; then the block's, read by block 0.
  __shared__ float gf_warp_m[kWarps][kDecodeRows], gf_warp_l[kWarps][kDecodeRows];
  __shared__ float gf_warp_acc[kWarps][kDecodeRows * kD];
  __shared__ float gf_block_m[kDecodeRows], gf_block_l[kDecodeRows];
  __shared__ float gf_block_acc[kDecodeRows * kD];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int team_lane = lane % kLanesPerKey;  // this lane's dims: 8 * team_lane ...
  const uint32_t rank = gf_cluster_rank();
  const int64_t group = blockIdx.x / kClusterBlocks;  // (batch, key/value head)
  const int64_t kv_h = group % kHkv;
  const int64_t b = group / kHkv;
  const int d0 = 8 * team_lane;
  const bool aligned = (((uint64_t)q | (uint64_t)k | (uint64_t)v) & 15) == 0 &&
                       kQStrideS % 8 == 0 && kQStrideH % 8 == 0 && kQStrideB % 8 == 0 &&
                       kKStrideS % 8 == 0 && kKStrideH % 8 == 0 && kKStrideB % 8 == 0 &&
                       kVStrideS % 8 == 0 && kVStrideH % 8 == 0 && kVStrideB % 8 == 0;

  // This lane's dims of every query row, scaled (log2 units: scores come out as log2 weights).
  constexpr float kQScale = kSoftcap > 0.0f ? 1.0f : kScale * kDecodeLog2e;
  float qf[kDecodeRows][8];
#pragma unroll
  for (int r = 0; r < kDecodeRows; ++r) {
    const int64_t h = kv_h * kGroup + r / kSq, i = r % kSq;
    gf_decode_load8(qf[r], q + b * kQStrideB + h * kQStrideH + i * kQStrideS + d0, aligned);
#pragma unroll
    for (int e = 0; e < 8; ++e) qf[r][e] *= kQScale;
  }

  float m[kDecodeRows], l[kDecodeRows], acc[kDecodeRows][8];
#pragma unroll
  for (int r = 0; r < kDecodeRows; ++r) {
    m[r] = gf_neg_inf();
    l[r] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[r][e] = 0.0f;
  }

  // This block's slice of the keys.
  constexpr int64_t kSlice = (kSkv + kClusterBlocks - 1) / kClusterBlocks;
  const int64_t first = rank * kSlice;
  const int64_t end = first + kSlice < kSkv ? first + kSlice : kSkv;
  const gf_elem* k_head = k + b * kKStrideB + kv_h * kKStrideH + d0;
  const gf_elem* v_head = v + b * kVStrideB + kv_h * kVStrideH + d0;

  // The loop's bound is per warp, not per team: every lane of a warp takes part in the shuffles
  // of each pass (keys past the slice get weight 0).
  const int64_t warp_first = first + (int64_t)warp * kTeamsPerWarp;
  const int64_t team_offset = lane / kLanesPerKey;
  for (int64_t base = warp_first; base < end; base += (int64_t)kTeams * kUnroll) {
    float kf[kUnroll][8], vf[kUnroll][8];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {  // every load first: kUnroll keys in flight
      const int64_t j = base + team_offset + (int64_t)u * kTeams;
      const int64_t jc = j < end ? j : first;  // a key that exists; its weight is forced to 0
      gf_decode_load8(kf[u], k_head + jc * kKStrideS, aligned);
      gf_decode_load8(vf[u], v_head + jc * kVStrideS, aligned);
    }
#pragma unroll
    for (int r = 0; r < kDecodeRows; ++r) {
      // The scores of the kUnroll keys, then one online update for all of them.
      float s[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t j = base + team_offset + (int64_t)u * kTeams;
        float dot = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot += qf[r][e] * kf[u][e];
#pragma unroll
        for (int off = kLanesPerKey / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if constexpr (kSoftcap > 0.0f) {
          dot = dot * kScale;
          dot = kSoftcap * tanhf(dot / kDecodeSoftcapDivisor);
        }
        if (j >= end) {
          dot = gf_neg_inf();
        } else if constexpr (kHasMask) {
          const int64_t h = kv_h * kGroup + r / kSq, i = r % kSq;
          const float bias = gf_attention_mask_bias(mask, b, h, i, j);
          dot = kSoftcap > 0.0f ? dot + bias : dot + bias * kDecodeLog2e;
        }
        if constexpr (kSoftcap > 0.0f) dot = dot * kDecodeLog2e;
        s[u] = dot;
      }
      float mx = m[r];
      bool any_nan = false;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        mx = fmaxf(mx, s[u]);
        any_nan = any_nan || s[u] != s[u];
      }
      // Nothing visible yet: the state stays empty (a NaN score goes on, and makes the row NaN).
      if (mx == gf_neg_inf() && !any_nan) continue;
      const float rescale = exp2f(m[r] - mx);
      m[r] = mx;
      l[r] *= rescale;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] *= rescale;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const float p = exp2f(s[u] - mx);
        l[r] += p;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] += p * vf[u][e];
      }
    }
  }

  // The teams of this warp, merged by shuffles (lanes of the same dims in other teams).
#pragma unroll
  for (int off = kLanesPerKey; off < 32; off *= 2) {
#pragma unroll
    for (int r = 0; r < kDecodeRows; ++r) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m[r], off);
      const float l2 = __shfl_xor_sync(0xffffffffu, l[r], off);
      float acc2[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc2[e] = __shfl_xor_sync(0xffffffffu, acc[r][e], off);
      gf_decode_merge(m[r], l[r], acc[r], m2, l2, acc2);
    }
  }
  if (lane < kLanesPerKey) {
#pragma unroll
    for (int r = 0; r < kDecodeRows; ++r) {
      if (lane == 0) gf_warp_m[warp][r] = m[r], gf_warp_l[warp][r] = l[r];
#pragma unroll
      for (int e = 0; e < 8; ++e) gf_warp_acc[warp][r * kD + d0 + e] = acc[r][e];
    }
  }
  __syncthreads();

  // The warps of this block: one thread per (row, dim), the row's max and sum alongside.
  for (int at = threadIdx.x; at < kDecodeRows * kD; at += kDecodeThreads) {
    const int r = at / kD;
    float mx = gf_neg_inf();
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, gf_warp_m[w][r]);
    float sum = 0.0f, weighted = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float f = gf_warp_m[w][r] == gf_neg_inf() ? 0.0f : exp2f(gf_warp_m[w][r] - mx);
      sum += gf_warp_l[w][r] * f;
      weighted += gf_warp_acc[w][at] * f;
    }
    gf_block_acc[at] = weighted;
    if (at % kD == 0) gf_block_m[r] = mx, gf_block_l[r] = sum;
  }

  // The blocks of the cluster, by block 0 (the others' shared memory stays until it is done).
  gf_cluster_sync();
  if (rank == 0) {
    for (int at = threadIdx.x; at < kDecodeRows * kD; at += kDecodeThreads) {
      const int r = at / kD, d = at % kD;
      float mx = gf_neg_inf();
      for (uint32_t c = 0; c < kClusterBlocks; ++c) mx = fmaxf(mx, gf_cluster_load(&gf_block_m[r], c));
      float sum = 0.0f, weighted = 0.0f;
      for (uint32_t c = 0; c < kClusterBlocks; ++c) {
        const float mc = gf_cluster_load(&gf_block_m[r], c);
        const float f = mc == gf_neg_inf() ? 0.0f : exp2f(mc - mx);
        sum += gf_cluster_load(&gf_block_l[r], c) * f;
        weighted += gf_cluster_load(&gf_block_acc[at], c) * f;
      }
      // No key with a finite bias (or no keys): a zero row, as the reference's sum 0 -> 1.
      const int64_t h = kv_h * kGroup + r / kSq, i = r % kSq;
      y[b * kYStrideB + h * kYStrideH + i * kYStrideS + d] = gf_store(weighted / (sum == 0.0f ? 1.0f : sum));
    }
  }
  gf_cluster_sync();
}
