// What the flash attention kernels (attention_mma.cuh, attention_wgmma.cuh) share: which query
// tile of which head a block works on, whether its tensors take 16-byte copies, and the work on
// one warp's 16-row group of score and output accumulators between the MMAs (the m16n8
// fragment layout of mma.sync, which wgmma's accumulators have per warp: n8 fragment n holds
// columns 8n + 2t and 8n + 2t + 1 of rows g (elements 0-1) and g + 8 (elements 2-3)).
//
// Needs from the emitter: mma_fragments.cuh before it, gf_elem, gf_attention_mask_bias
// (attention_common.cuh), the constants kB, kHq, kGroup, kSq, kSkv, kCausal, kScale,
// kSoftcap, kHasMask and the kQ/kK/kV/kY strides (batch, head, position).

constexpr float kFlashLog2e = 1.4426950408889634f;
constexpr float kFlashScaleLog2 = kScale * kFlashLog2e;
constexpr float kFlashSoftcapDivisor = kSoftcap > 0.0f ? kSoftcap : 1.0f;  // used only when > 0
// Without a mask or softcap (and with a positive scale) scores keep their raw products: the
// scale to log2 units joins the exponent's FMA (gf_flash_softmax's to_log2), and only the keys
// past the sequence's end or the causal diagonal become -inf.
constexpr bool kFlashRawScores = !kHasMask && !(kSoftcap > 0.0f) && kFlashScaleLog2 > 0.0f;

struct GfFlashTile {
  int64_t b, h, kv_h;  // batch, query head, key/value head
  int64_t first_row;   // the tile's first query row
  int q_rows;          // its rows (the last tile may be short)
  int64_t kv_end;      // the keys it reads: all, or under is_causal those up to its last row
};

// Block order: the tiles of one head next to each other (they share its K and V in L2); under
// is_causal the tile is the slowest index instead, last tiles first: the blocks that see the
// most keys start first, and the grid ends with short ones.
template <int kRows>
__device__ __forceinline__ GfFlashTile gf_flash_tile(int64_t block) {
  constexpr int64_t q_tiles = kSq > 0 ? (kSq + kRows - 1) / kRows : 1;
  constexpr int64_t hq = kHq > 0 ? kHq : 1;
  constexpr int64_t heads = kB * kHq > 0 ? kB * kHq : 1;  // nonzero: not launched without heads
  const int64_t tile = kCausal ? q_tiles - 1 - block / heads : block % q_tiles;
  const int64_t head = kCausal ? block % heads : block / q_tiles;
  GfFlashTile f;
  f.h = head % hq;
  f.b = head / hq;
  f.kv_h = f.h / kGroup;
  f.first_row = tile * kRows;
  f.q_rows = (int)(kSq - f.first_row < kRows ? kSq - f.first_row : kRows);
  const int64_t last = f.first_row + f.q_rows;
  f.kv_end = kCausal ? (last < kSkv ? last : kSkv) : kSkv;
  return f;
}

// 16-byte pieces: the pointers and every row's start (strides in whole 8-element pieces).
__device__ __forceinline__ bool gf_flash_aligned(const void* q, const void* k, const void* v,
                                                 const void* y) {
  constexpr bool strides =
      ((kQStrideB | kQStrideH | kQStrideS | kKStrideB | kKStrideH | kKStrideS | kVStrideB |
        kVStrideH | kVStrideS | kYStrideB | kYStrideH | kYStrideS) %
       8) == 0;
  return strides && (((uint64_t)q | (uint64_t)k | (uint64_t)v | (uint64_t)y) & 15) == 0;
}

// A 16-row group's scores against keys j0.. of a tile (kTiles n8 fragments; keys from `valid`
// on are past the end), for the thread whose first row is `row0` (its second is row0 + 8):
// raw products past the end or the causal diagonal become -inf; without kFlashRawScores every
// score is scaled, softcapped (before the bias, so a masked -inf stays -inf) and biased, in
// log2 units.
template <int kTiles>
__device__ __forceinline__ void gf_flash_mask_scores(float* s, const void* mask, int64_t b,
                                                     int64_t h, int64_t row0, int t, int64_t j0,
                                                     int valid) {
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int jj = n * 8 + 2 * t + (e & 1);
      const int64_t row = row0 + 8 * (e >> 1);
      const bool cut = jj >= valid || (kCausal && j0 + jj > row);
      if constexpr (kFlashRawScores) {
        if (cut) s[4 * n + e] = gf_neg_inf();
        continue;
      }
      float x = s[4 * n + e] * kScale;
      if constexpr (kSoftcap > 0.0f) x = kSoftcap * tanhf(x / kFlashSoftcapDivisor);
      if (cut) {
        x = gf_neg_inf();
      } else if constexpr (kHasMask) {
        // Mask reads stay inside the mask: a row past the last query reads the last one's.
        x = x + gf_attention_mask_bias(mask, b, h, row < kSq ? row : kSq - 1, j0 + jj);
      }
      s[4 * n + e] = x * kFlashLog2e;
    }
  }
}

// The online softmax step of a 16-row group over one tile: each of the thread's two rows gets
// its new maximum (over the 4 threads of the row, in log2 units), the rescale of what was summed
// so far (rescale[2]), its sum, and its weights in place of the scores. `unmoved` is cleared
// where a row's maximum rose.
template <int kTiles>
__device__ __forceinline__ void gf_flash_softmax(float* s, float to_log2, float* row_max,
                                                 float* row_sum, float* rescale, bool& unmoved) {
  static_assert(kTiles % 4 == 0, "four chains of maxima");
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int c = 2 * r;
    // The tile's maximum over four independent chains (one chain of kTiles dependent maxima
    // would stall; a tree of kTiles partial maxima holds more registers).
    float part[4];
#pragma unroll
    for (int n = 0; n < kTiles; ++n) {
      const float pair = fmaxf(s[4 * n + c], s[4 * n + c + 1]);
      part[n & 3] = n < 4 ? pair : fmaxf(part[n & 3], pair);
    }
    float mx = fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx = fmaxf(row_max[r], mx * to_log2);
    // Every score so far -inf: shift by 0, so the weights are exp(-inf) = 0 and not NaN.
    const float shift = mx == gf_neg_inf() ? 0.0f : mx;
    rescale[r] = gf_exp2(row_max[r] - shift);
    unmoved = unmoved && mx == row_max[r];
    row_max[r] = mx;
    // Two running sums, so consecutive additions do not wait on each other.
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < kTiles; ++n) {
      s[4 * n + c] = gf_exp2(fmaf(s[4 * n + c], to_log2, -shift));
      s[4 * n + c + 1] = gf_exp2(fmaf(s[4 * n + c + 1], to_log2, -shift));
      sum[n & 1] += s[4 * n + c] + s[4 * n + c + 1];
    }
    row_sum[r] = row_sum[r] * rescale[r] + (sum[0] + sum[1]);
  }
}

// A 16-row group's output accumulators (kTiles n8 fragments) times its rows' rescale.
template <int kTiles>
__device__ __forceinline__ void gf_flash_rescale(float* o, const float* rescale) {
#pragma unroll
  for (int d = 0; d < kTiles; ++d) {
    o[4 * d] *= rescale[0];
    o[4 * d + 1] *= rescale[0];
    o[4 * d + 2] *= rescale[1];
    o[4 * d + 3] *= rescale[1];
  }
}

// Stores a 16-row group's two rows of the thread (row0 and row0 + 8, those before kSq): the
// accumulators over the row sums (summed over the row's 4 threads), rounded to gf_elem.
template <int kTiles>
__device__ __forceinline__ void gf_flash_store_rows(const float* o, const float* row_sum,
                                                    gf_elem* y_head, int64_t row0, int t,
                                                    bool aligned) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int64_t row = row0 + 8 * r;
    if (row >= kSq) continue;
    // No key with a finite bias (or no keys): a zero row, as the reference's sum 0 -> 1.
    const float inv = 1.0f / (sum == 0.0f ? 1.0f : sum);
    gf_elem* y_row = y_head + row * kYStrideS;
#pragma unroll
    for (int d = 0; d < kTiles; ++d) {
      const uint32_t pair = gf_pack2(o[4 * d + 2 * r] * inv, o[4 * d + 2 * r + 1] * inv);
      gf_elem* at = y_row + d * 8 + 2 * t;
      if (aligned) {
        *reinterpret_cast<uint32_t*>(at) = pair;
      } else {
        at[0] = (gf_elem)(pair & 0xffffu);
        at[1] = (gf_elem)(pair >> 16);
      }
    }
  }
}
