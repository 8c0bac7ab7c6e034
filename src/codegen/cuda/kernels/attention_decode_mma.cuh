// Decode attention split across the key/value length on tensor cores (ONNX opset 23 semantics,
// as src/runtime/cpu/reference/attention.cpp) for f16/bf16 and head sizes 16 to 128. The
// cluster, the stages and the merges: attention_decode_common.cuh. The query rows (kRows <= 16,
// zero rows after them) are the A operand of mma.sync m16n8k16, kept in registers; per stage of
// 16 keys a warp computes their scores against K (ldmatrix from its ring, whose pieces are
// swizzled so that the reads have no bank conflicts), updates its rows' online softmax in f32,
// rounds the weights to the input format and adds weights x V (ldmatrix.trans) into f32
// accumulators, as the prefill kernel (attention_mma.cuh) does for 16 rows of one head. On CUDA
// cores the dot products and their shuffles bound the kernel well below the memory's speed.
//
// Needs from the emitter: attention_common.cuh, mma_fragments.cuh and attention_decode_common.cuh
// before it (and what they need), 16-bit gf_elem, kBf16 (the MMA input format); kD is 16, 32, 64
// or 128.
//
// Against the reference: the scores are exact products of the 16-bit inputs summed in f32 (in
// another order), then scaled; the weights are rounded to the input format before the weighted
// sum, which the results differ from the reference's by, within the format's tolerance.

constexpr int kStageKeys = 16;                        // keys per warp per stage: one k16 step of weights x V
constexpr int kStageElems = 2 * kStageKeys * (int)kD;  // K rows, then V rows
constexpr int kKSteps = (int)kD / 16;                  // k16 steps of the scores
constexpr int kOTiles = (int)kD / 8;                   // n8 tiles of the output
constexpr bool kUpperRows = kDecodeRows > 8;           // fragment rows g + 8 hold query rows
constexpr float kScaleLog2 = kScale * kDecodeLog2e;
static_assert(sizeof(gf_elem) == 2, "the tensor-core decode kernel takes 16-bit inputs");
static_assert(kD == 16 || kD == 32 || kD == 64 || kD == 128, "head size of the tensor-core decode kernel");
static_assert(kDecodeRows >= 1 && kDecodeRows <= 16, "query rows of the tensor-core decode kernel");
// After its last stage a warp's ring holds its results: kRows maxima, sums and rows.
static_assert(kStages * kStageElems * 2 >= 4 * kDecodeRows * ((int)kD + 2), "a warp's ring holds its results");

static __device__ __forceinline__ void gf_attention_decode_mma(void* const* buffers) {
  const gf_elem* q = (const gf_elem*)buffers[0] + kQOffset;
  const gf_elem* k = (const gf_elem*)buffers[1] + kKOffset;
  const gf_elem* v = (const gf_elem*)buffers[2] + kVOffset;
  const void* mask = kHasMask ? buffers[3] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasMask ? 4 : 3] + kYOffset;

  // Per warp a ring of kStages stages (dynamic shared memory), which holds the warp's results
  // once its keys are done.
  extern __shared__ __align__(128) uint4 gf_decode_shared[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragment row (and row + 8) and column pair
  const uint32_t rank = gf_cluster_rank();
  gf_cluster_arrive_relaxed();  // waited for in gf_decode_combine, before its first remote store
  const int64_t group = blockIdx.x / kClusterBlocks;  // (batch, key/value head)
  const int64_t kv_h = group % kHkv;
  const int64_t b = group / kHkv;
  gf_elem* const ring = reinterpret_cast<gf_elem*>(gf_decode_shared) + (int64_t)warp * kStages * kStageElems;
  const bool aligned = gf_decode_aligned(q, k, v);

  // The query rows as A fragments: row r is query head kv_h * kGroup + r / kSq, position r % kSq.
  const auto q_pair = [&](int row, int col) -> uint32_t {
    if (row >= kDecodeRows) return 0u;
    const gf_elem* p = q + b * kQStrideB + (kv_h * kGroup + row / kSq) * kQStrideH + (row % kSq) * kQStrideS + col;
    return aligned ? *reinterpret_cast<const uint32_t*>(p) : (uint32_t)p[0] | ((uint32_t)p[1] << 16);
  };
  uint32_t qa[kKSteps][4];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ++ks) {
    qa[ks][0] = q_pair(g, 16 * ks + 2 * t);
    qa[ks][1] = q_pair(g + 8, 16 * ks + 2 * t);
    qa[ks][2] = q_pair(g, 16 * ks + 8 + 2 * t);
    qa[ks][3] = q_pair(g + 8, 16 * ks + 8 + 2 * t);
  }

  float o[kOTiles][4];
#pragma unroll
  for (int d = 0; d < kOTiles; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  // Rows g (half 0) and g + 8 (half 1): max in log2 units; sum: this thread's part.
  float row_max[2] = {gf_neg_inf(), gf_neg_inf()}, row_sum[2] = {0.0f, 0.0f};
  constexpr int kHalves = kUpperRows ? 2 : 1;

  const gf_elem* k_head = k + b * kKStrideB + kv_h * kKStrideH;
  const gf_elem* v_head = v + b * kVStrideB + kv_h * kVStrideH;
  gf_decode_stream<kStageKeys, true>(ring, k_head, v_head, rank, warp, lane, aligned, [&](const gf_elem* sk, int64_t j0,
                                                                                         int64_t end) {
    const gf_elem* sv = sk + kStageKeys * kD;

    // Scores of the rows against the stage's 16 keys (two n8 tiles).
    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t kb[4];
      gf_ldmatrix_x4(kb, sk + gf_decode_piece_at<true>((lane & 7) + ((lane >> 4) << 3), 2 * ks + ((lane >> 3) & 1)) *
                             kElemsPerPiece);
      gf_mma(s[0], qa[ks], kb[0], kb[1]);
      gf_mma(s[1], qa[ks], kb[2], kb[3]);
    }

    // Without a mask or softcap (and with a positive scale) scores keep their raw products: the
    // scale to log2 units joins the exponent's FMA below, and only keys past the slice's end
    // become -inf. Otherwise: scale, softcap (before the bias, so a masked -inf stays -inf),
    // bias; in log2 units. Rows past kRows are zeros and take no mask.
    constexpr bool kRawScores = !kHasMask && !(kSoftcap > 0.0f) && kScaleLog2 > 0.0f;
    const float to_log2 = kRawScores ? kScaleLog2 : 1.0f;
    if (!kRawScores || j0 + kStageKeys > end) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int e = 0; e < 2 * kHalves; ++e) {
          const int64_t j = j0 + nt * 8 + 2 * t + (e & 1);
          const int row = g + 8 * (e >> 1);
          if constexpr (kRawScores) {
            if (j >= end) s[nt][e] = gf_neg_inf();
            continue;
          }
          float x = s[nt][e] * kScale;
          if constexpr (kSoftcap > 0.0f) x = kSoftcap * tanhf(x / kDecodeSoftcapDivisor);
          if (j >= end) {
            x = gf_neg_inf();
          } else if constexpr (kHasMask) {
            if (row < kDecodeRows) {
              x = x + gf_attention_mask_bias(mask, b, kv_h * kGroup + row / kSq, row % kSq, j);
            }
          }
          s[nt][e] = x * kDecodeLog2e;
        }
      }
    }

    // Online softmax: each row's new maximum (over the 4 threads of a row), the rescale of
    // what was summed so far, and the weights. Once the maxima settle (most stages of a long
    // cache), a stage moves none of the rows and the accumulators are left as they are.
    float rescale[2] = {1.0f, 1.0f};
    bool unmoved = true;
#pragma unroll
    for (int hf = 0; hf < kHalves; ++hf) {
      const int c = 2 * hf;
      float mx = fmaxf(fmaxf(s[0][c], s[0][c + 1]), fmaxf(s[1][c], s[1][c + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(row_max[hf], mx * to_log2);
      // Every score so far -inf: shift by 0, so the weights are exp(-inf) = 0 and not NaN.
      const float shift = mx == gf_neg_inf() ? 0.0f : mx;
      rescale[hf] = gf_exp2(row_max[hf] - shift);
      unmoved = unmoved && mx == row_max[hf];
      row_max[hf] = mx;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        s[nt][c] = gf_exp2(fmaf(s[nt][c], to_log2, -shift));
        s[nt][c + 1] = gf_exp2(fmaf(s[nt][c + 1], to_log2, -shift));
      }
      row_sum[hf] = row_sum[hf] * rescale[hf] + ((s[0][c] + s[0][c + 1]) + (s[1][c] + s[1][c + 1]));
    }
    if (!__all_sync(0xffffffffu, unmoved)) {
#pragma unroll
      for (int d = 0; d < kOTiles; ++d) {
#pragma unroll
        for (int e = 0; e < 2 * kHalves; ++e) o[d][e] *= rescale[e >> 1];
      }
    }

    // Weights x V: the score accumulators of the two n8 tiles are the A fragment of one k16
    // step (rows g + 8 stay zero when no query row is there).
    uint32_t a[4];
    a[0] = gf_pack2(s[0][0], s[0][1]);
    a[1] = kUpperRows ? gf_pack2(s[0][2], s[0][3]) : 0u;
    a[2] = gf_pack2(s[1][0], s[1][1]);
    a[3] = kUpperRows ? gf_pack2(s[1][2], s[1][3]) : 0u;
#pragma unroll
    for (int dp = 0; dp < kOTiles / 2; ++dp) {
      uint32_t vb[4];
      gf_ldmatrix_x4_trans(vb, sv + gf_decode_piece_at<true>(lane & 15, 2 * dp + (lane >> 4)) * kElemsPerPiece);
      gf_mma(o[2 * dp], a, vb[0], vb[1]);
      gf_mma(o[2 * dp + 1], a, vb[2], vb[3]);
    }
  });

  // The warp's results into its own ring: maxima, sums, then rows (no other warp touches it).
  float* const results = reinterpret_cast<float*>(ring);
#pragma unroll
  for (int hf = 0; hf < kHalves; ++hf) {
    float sum = row_sum[hf];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = g + 8 * hf;
    if (row >= kDecodeRows) continue;
    if (t == 0) results[row] = row_max[hf], results[kDecodeRows + row] = sum;
#pragma unroll
    for (int d = 0; d < kOTiles; ++d) {
      results[2 * kDecodeRows + row * kD + 8 * d + 2 * t] = o[d][2 * hf];
      results[2 * kDecodeRows + row * kD + 8 * d + 2 * t + 1] = o[d][2 * hf + 1];
    }
  }
  gf_decode_combine(reinterpret_cast<const float*>(gf_decode_shared),
                    (int64_t)kStages * kStageElems / 2, y, b, kv_h, rank);
}
