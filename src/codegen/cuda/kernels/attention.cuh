// Flash-style attention (ONNX opset 23 semantics, as src/runtime/cpu/reference/attention.cpp):
// one block per (batch, query head, tile of kWarps query rows), one warp per query row. K/V
// tiles of kTileKeys keys pass through shared memory in float; each lane scores one key of the
// tile, the warp keeps a running max and sum (online softmax in f32) and each lane accumulates
// the output columns lane, lane + 32, ...; nothing of size Sq x Skv reaches global memory.
//
// Needs from the emitter: attention_common.cuh before it, gf_elem / gf_load / gf_store (Q, K, V,
// Y storage), gf_mask_elem, and the constants kThreads, kWarps, kTileKeys, kKStride, kB, kHq,
// kGroup, kSq, kSkv, kD, kDv, kQ/kK/kV/kY strides (batch, head, position; the head_dim stride is
// 1), kRootScale, kSoftcap, kCausal, kHasMask, kMaskIsBool, kMaskColumns and the kMask strides.
//
// Scores round like the reference's: (q * sqrt(scale)) and (k * sqrt(scale)) rounded to float,
// their products summed in order over head_dim (NVRTC runs with -fmad=false). The softmax and
// the weighted sum differ from the reference's two-pass order by rounding only.
// Under is_causal the keys after the block's last query row are never loaded: their weight is
// exactly 0 for finite scores (only a NaN or Inf in an invisible key would differ).

// Divisors kept nonzero: with no query rows or heads the kernel is not launched at all.
constexpr int64_t kQTiles = kSq > 0 ? (kSq + kWarps - 1) / kWarps : 1;
constexpr int64_t kHqDivisor = kHq > 0 ? kHq : 1;
constexpr int kDvPerLane = kDv > 0 ? (kDv + 31) / 32 : 1;
constexpr int kDPadded = kD > 0 ? kD : 1;
constexpr int kDvPadded = kDv > 0 ? kDv : 1;
constexpr float kSoftcapDivisor = kSoftcap > 0.0f ? kSoftcap : 1.0f;  // used only when > 0

static __device__ __forceinline__ void gf_attention(void* const* buffers) {
  const gf_elem* q = (const gf_elem*)buffers[0] + kQOffset;
  const gf_elem* k = (const gf_elem*)buffers[1] + kKOffset;
  const gf_elem* v = (const gf_elem*)buffers[2] + kVOffset;
  const void* mask = kHasMask ? buffers[3] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasMask ? 4 : 3] + kYOffset;

  __shared__ float gf_q[kWarps][kDPadded];
  // An odd row stride: the 32 lanes read one column of 32 different K rows without bank
  // conflicts.
  __shared__ float gf_k[kTileKeys * kKStride];
  __shared__ float gf_v[kTileKeys * kDvPadded];

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  int64_t block = blockIdx.x;
  const int64_t tile = block % kQTiles;
  block /= kQTiles;
  const int64_t h = block % kHqDivisor;
  const int64_t b = block / kHqDivisor;
  const int64_t kv_h = h / kGroup;
  const int64_t first_row = tile * kWarps;
  const int64_t i = first_row + warp;
  // A warp past the last row still loads tiles and meets every barrier; it only stores nothing.
  const bool row_valid = i < kSq;
  const int64_t row = row_valid ? i : kSq - 1;

  for (int d = lane; d < kD; d += 32) {
    gf_q[warp][d] = gf_load(q[b * kQStrideB + h * kQStrideH + row * kQStrideS + d]) * kRootScale;
  }
  const int64_t last_row = (first_row + kWarps < kSq ? first_row + kWarps : kSq) - 1;
  const int64_t kv_end = kCausal ? (last_row + 1 < kSkv ? last_row + 1 : kSkv) : kSkv;

  float run_max = gf_neg_inf();  // over the keys seen so far, NaN-propagating
  float run_sum = 0.0f;          // of exp(score - shift) over those keys
  float acc[kDvPerLane];
#pragma unroll
  for (int r = 0; r < kDvPerLane; ++r) acc[r] = 0.0f;

  for (int64_t j0 = 0; j0 < kv_end; j0 += kTileKeys) {
    __syncthreads();  // the previous tile is no longer read (first pass: Q is written)
    for (int at = threadIdx.x; at < kTileKeys * kD; at += kThreads) {
      const int jj = at / kDPadded, d = at % kDPadded;
      const int64_t j = j0 + jj;
      gf_k[jj * kKStride + d] =
          j < kv_end ? gf_load(k[b * kKStrideB + kv_h * kKStrideH + j * kKStrideS + d]) * kRootScale
                     : 0.0f;
    }
    for (int at = threadIdx.x; at < kTileKeys * kDv; at += kThreads) {
      const int jj = at / kDvPadded, d = at % kDvPadded;
      const int64_t j = j0 + jj;
      gf_v[jj * kDvPadded + d] =
          j < kv_end ? gf_load(v[b * kVStrideB + kv_h * kVStrideH + j * kVStrideS + d]) : 0.0f;
    }
    __syncthreads();

    // This lane's key: its score, softcapped before the bias so a masked -inf stays -inf.
    const int64_t j = j0 + lane;
    float s = gf_neg_inf();
    if (lane < kTileKeys && j < kv_end) {
      const float* k_row = gf_k + lane * kKStride;
      float dot = 0.0f;
      for (int d = 0; d < kD; ++d) dot += gf_q[warp][d] * k_row[d];
      if constexpr (kSoftcap > 0.0f) dot = kSoftcap * tanhf(dot / kSoftcapDivisor);
      s = dot + gf_attention_bias(mask, b, h, row, j);
    }
    const float new_max = gf_nan_max(run_max, gf_warp_nan_max(s));
    // Every score so far -inf: shift by 0, so the weights are exp(-inf) = 0 and not NaN.
    const float shift = new_max == gf_neg_inf() ? 0.0f : new_max;
    const float rescale = expf(run_max - shift);
    const float p = expf(s - shift);
    run_sum = run_sum * rescale + gf_warp_sum(p);
    run_max = new_max;
#pragma unroll
    for (int r = 0; r < kDvPerLane; ++r) acc[r] *= rescale;
    for (int jj = 0; jj < kTileKeys; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
      const float* v_row = gf_v + jj * kDvPadded;
#pragma unroll
      for (int r = 0; r < kDvPerLane; ++r) {
        const int d = lane + 32 * r;
        if (d < kDv) acc[r] += pj * v_row[d];
      }
    }
  }

  if (!row_valid) return;
  // No key with a finite bias (or no keys): a zero row, as the reference's sum 0 -> 1.
  const float denom = run_sum == 0.0f ? 1.0f : run_sum;
  gf_elem* y_row = y + b * kYStrideB + h * kYStrideH + i * kYStrideS;
#pragma unroll
  for (int r = 0; r < kDvPerLane; ++r) {
    const int d = lane + 32 * r;
    if (d < kDv) y_row[d] = gf_store(acc[r] / denom);
  }
}
