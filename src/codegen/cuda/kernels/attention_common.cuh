// What both attention kernels (attention.cuh, attention_mma.cuh) share: the additive bias of a
// score from the node's mask and is_causal, as the reference computes it
// (src/runtime/cpu/reference/attention.cpp).
//
// Needs from the emitter: gf_load, gf_mask_elem and the constants kCausal, kHasMask, kMaskIsBool,
// kMaskColumns, kMaskStrideB/H/S/J.

// The mask's part of the bias of key j for query row i (head h, batch b): 0 / -inf (bool) or
// its value (float), -inf past the mask's last column. `i` must be a row of the mask.
static __device__ __forceinline__ float gf_attention_mask_bias(const void* mask, int64_t b,
                                                               int64_t h, int64_t i, int64_t j) {
  if constexpr (!kHasMask) {
    return 0.0f;
  } else {
    if (j >= kMaskColumns) return gf_neg_inf();
    const int64_t at = b * kMaskStrideB + h * kMaskStrideH + i * kMaskStrideS + j * kMaskStrideJ;
    if constexpr (kMaskIsBool) {
      return ((const gf_mask_elem*)mask)[at] != 0 ? 0.0f : gf_neg_inf();
    } else {
      return gf_load(((const gf_mask_elem*)mask)[at]);
    }
  }
}

// The whole bias: the mask's, plus -inf for j > i under is_causal.
static __device__ __forceinline__ float gf_attention_bias(const void* mask, int64_t b, int64_t h,
                                                          int64_t i, int64_t j) {
  float bias = gf_attention_mask_bias(mask, b, h, i, j);
  if (kCausal && j > i) bias = bias + gf_neg_inf();
  return bias;
}
