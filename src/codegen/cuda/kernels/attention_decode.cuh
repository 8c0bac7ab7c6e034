// Decode attention split across the key/value length on CUDA cores (ONNX opset 23 semantics, as
// src/runtime/cpu/reference/attention.cpp), for what the tensor-core kernel does not take: f32,
// head sizes of 8 or 256. The cluster, the stages and the merges: attention_decode_common.cuh.
// Inside a warp's stage, teams of kLanesPerKey lanes take one key at a time (each lane 8 of the
// head's dims) and keep their own running state, merged by shuffles once the warp is done.
//
// Needs from the emitter: attention_common.cuh and attention_decode_common.cuh before it (and
// what they need); kD is 8 times a power of two up to 256, kRows <= 8 and kRows * kD <= 1024.
//
// Against the reference: scores are sums of f32 products in another order; softmax and the
// weighted sum differ by rounding only.

constexpr int kLanesPerKey = (int)kD / 8;           // lanes per team: 8 dims each
constexpr int kTeamsPerWarp = 32 / kLanesPerKey;
constexpr int kUnroll = 4;  // keys per team per stage, and per online-softmax update
constexpr int kStageKeys = kTeamsPerWarp * kUnroll;  // keys per warp per stage
constexpr int kStageElems = 2 * kStageKeys * (int)kD;       // K rows, then V rows
static_assert(kD >= 8 && kD <= 256 && (kLanesPerKey & (kLanesPerKey - 1)) == 0 && kD % 8 == 0,
              "head size of the decode kernel: 8 times a power of two, at most 256");
static_assert(kDecodeRows >= 1 && kDecodeRows * kD <= 1024, "rows x head size of the decode kernel");
// After its last stage a warp's ring holds its partial results: kRows maxima, sums and rows.
static_assert(kStages * kStageElems * (int)sizeof(gf_elem) >= 4 * kDecodeRows * ((int)kD + 2),
              "a warp's ring holds its partial results");

// 8 consecutive elements from `p` (global or shared memory) as floats: one 16-byte load for
// 16-bit storage when aligned.
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

  // Per warp a ring of kStages stages (dynamic shared memory), which holds the warp's partial
  // results once its keys are done.
  extern __shared__ __align__(128) uint4 gf_decode_shared[];

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int team_lane = lane % kLanesPerKey;  // this lane's dims: 8 * team_lane ...
  const int team = lane / kLanesPerKey;
  const uint32_t rank = gf_cluster_rank();
  gf_cluster_arrive_relaxed();  // waited for in gf_decode_combine, before its first remote store
  const int64_t group = blockIdx.x / kClusterBlocks;  // (batch, key/value head)
  const int64_t kv_h = group % kHkv;
  const int64_t b = group / kHkv;
  const int d0 = 8 * team_lane;
  gf_elem* const ring = reinterpret_cast<gf_elem*>(gf_decode_shared) + (int64_t)warp * kStages * kStageElems;
  const bool aligned = gf_decode_aligned(q, k, v);

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

  const gf_elem* k_head = k + b * kKStrideB + kv_h * kKStrideH;
  const gf_elem* v_head = v + b * kVStrideB + kv_h * kVStrideH;
  gf_decode_stream<kStageKeys, false>(ring, k_head, v_head, rank, warp, lane, aligned, [&](const gf_elem* sk, int64_t j0,
                                                                                         int64_t end) {
    const gf_elem* sv = sk + kStageKeys * kD;
    float kf[kUnroll][8], vf[kUnroll][8];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int key = team + u * kTeamsPerWarp;
      gf_decode_load8(kf[u], sk + key * kD + d0, true);
      gf_decode_load8(vf[u], sv + key * kD + d0, true);
    }
#pragma unroll
    for (int r = 0; r < kDecodeRows; ++r) {
      // The scores of the kUnroll keys, then one online update for all of them.
      float s[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t j = j0 + team + u * kTeamsPerWarp;
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
      // Once the row's maximum settles (most stages of a long cache) there is nothing to rescale.
      if (mx != m[r]) {
        const float rescale = exp2f(m[r] - mx);
        m[r] = mx;
        l[r] *= rescale;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] *= rescale;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const float p = exp2f(s[u] - mx);
        l[r] += p;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][e] += p * vf[u][e];
      }
    }
  });

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
  // The warp's results into its own ring: maxima, sums, then rows (no other warp touches it).
  float* const warp_m = reinterpret_cast<float*>(ring);
  if (lane < kLanesPerKey) {
#pragma unroll
    for (int r = 0; r < kDecodeRows; ++r) {
      if (lane == 0) warp_m[r] = m[r], warp_m[kDecodeRows + r] = l[r];
#pragma unroll
      for (int e = 0; e < 8; ++e) warp_m[2 * kDecodeRows + r * kD + d0 + e] = acc[r][e];
    }
  }
  gf_decode_combine(reinterpret_cast<const float*>(gf_decode_shared),
                    (int64_t)kStages * kStageElems * (int)sizeof(gf_elem) / 4, y, b, kv_h, rank);
}
