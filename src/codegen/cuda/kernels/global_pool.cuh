// GlobalMaxPool and GlobalAveragePool over X [N, C, spatial...] (as the reference's global_pool):
// one warp per (image, channel) plane, a strided pass per lane and a butterfly across the warp.
// The max propagates NaN; the average sums in double, so it rounds as the reference's does up
// to the order of the sum (0/0 = NaN for an empty plane, as there).
//
// Needs from the emitter: gf_elem / gf_load / gf_store and the constants kThreads, kPlanes,
// kPlaneSize and kIsMax.

static __device__ __forceinline__ void gf_global_pool(void* const* buffers) {
  const gf_elem* x = (const gf_elem*)buffers[0];
  gf_elem* y = (gf_elem*)buffers[1];
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32;
  const int64_t step = (int64_t)gridDim.x * kWarps;
  // The bound and step are the same for the warp's lanes, so all of them reach every shuffle.
  for (int64_t p = (int64_t)blockIdx.x * kWarps + threadIdx.x / 32; p < kPlanes; p += step) {
    const gf_elem* plane = x + p * kPlaneSize;
    float result;
    if constexpr (kIsMax) {
      float best = gf_neg_inf();
      for (int64_t i = lane; i < kPlaneSize; i += 32) best = gf_nan_max(best, gf_load(plane[i]));
      result = gf_warp_nan_max(best);
    } else {
      double sum = 0.0;
      for (int64_t i = lane; i < kPlaneSize; i += 32) sum += (double)gf_load(plane[i]);
      result = (float)(gf_warp_sum(sum) / (double)kPlaneSize);
    }
    if (lane == 0) y[p] = gf_store(result);
  }
}
