// Device helpers shared by the anchor kernels (attention, pooling, direct convolution).
// Compiled by NVRTC after the CUDA prelude (codegen/cuda/cuda_target.h: integer types, the
// f16/bf16 conversions) and before the node's constants; includes nothing.

static __device__ __forceinline__ float gf_neg_inf() { return __uint_as_float(0xff800000u); }

// The larger of two values where a NaN on either side wins (the reference kernels' nan_max),
// keeping the first NaN seen.
static __device__ __forceinline__ float gf_nan_max(float best, float v) {
  if (best != best) return best;
  return (v != v || v > best) ? v : best;
}

static __device__ __forceinline__ float gf_warp_nan_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = gf_nan_max(v, __shfl_xor_sync(0xffffffffu, v, m));
  return v;
}

template <class T>
static __device__ __forceinline__ T gf_warp_sum(T v) {
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
