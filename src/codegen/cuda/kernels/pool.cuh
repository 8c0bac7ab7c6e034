// MaxPool and AveragePool over X [N, C, spatial...] (as src/runtime/cpu/reference/pool.cpp):
// one thread per output element in a grid-stride loop, taps visited in the reference's order
// (last axis fastest). Padding never takes part in a max; an average sums in double and divides
// by the taps inside the input, or with count_include_pad by those inside the padded input.
//
// Needs from the emitter: gf_elem / gf_load / gf_store, and the constants kThreads, kRank,
// kTotal (N * C * output plane), kInPlane, kOutPlane, kTaps, kIsMax, kCountIncludePad and the
// per-axis arrays kIn, kInStride, kOut, kKernel, kStride, kDilation, kPadBegin, kPadEnd.

static __device__ __forceinline__ void gf_pool(void* const* buffers) {
  const gf_elem* x = (const gf_elem*)buffers[0];
  gf_elem* y = (gf_elem*)buffers[1];
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t flat = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; flat < kTotal;
       flat += step) {
    const gf_elem* plane = x + flat / kOutPlane * kInPlane;
    int64_t origin[kRank];
    int64_t rest = flat % kOutPlane;
#pragma unroll
    for (int a = kRank - 1; a >= 0; --a) {
      origin[a] = rest % kOut[a] * kStride[a] - kPadBegin[a];
      rest /= kOut[a];
    }
    float best = 0.0f;
    bool seen = false;
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t t = 0; t < kTaps; ++t) {
      int64_t tap = t, offset = 0;
      bool inside = true, padded = true;
#pragma unroll
      for (int a = kRank - 1; a >= 0; --a) {
        const int64_t at = origin[a] + tap % kKernel[a] * kDilation[a];
        tap /= kKernel[a];
        inside = inside && at >= 0 && at < kIn[a];
        padded = padded && at >= -kPadBegin[a] && at < kIn[a] + kPadEnd[a];
        offset += at * kInStride[a];
      }
      if (inside) {
        const float value = gf_load(plane[offset]);
        if constexpr (kIsMax) {
          best = seen ? gf_nan_max(best, value) : value;
          seen = true;
        } else {
          sum += (double)value;
        }
      }
      if (inside || (kCountIncludePad && padded)) ++count;
    }
    // Inference guarantees a tap inside the input for a max, a nonzero count for an average.
    y[flat] = gf_store(kIsMax ? best : (float)(sum / (double)count));
  }
}
