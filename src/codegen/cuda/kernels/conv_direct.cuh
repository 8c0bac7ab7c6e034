// Direct convolution for builds without cuDNN (as src/runtime/cpu/reference/conv.cpp): one
// thread per output element in a grid-stride loop; for each tap of the window the group's
// input channels times the filter's weights, accumulated in float, then the bias. Any group
// count, pads, strides and dilations, any number of spatial axes. Simple rather than fast.
//
// Needs from the emitter: gf_elem / gf_load / gf_store, and the constants kThreads, kRank,
// kTotal (N * F * output plane), kChannels, kFilters, kGroupChannels, kGroupFilters, kInPlane,
// kOutPlane, kTaps, kHasBias and the per-axis arrays kIn, kInStride, kOut, kKernel, kStride,
// kDilation, kPadBegin.

static __device__ __forceinline__ void gf_conv_direct(void* const* buffers) {
  const gf_elem* x = (const gf_elem*)buffers[0];
  const gf_elem* w = (const gf_elem*)buffers[1];
  const gf_elem* bias = kHasBias ? (const gf_elem*)buffers[2] : nullptr;
  gf_elem* y = (gf_elem*)buffers[kHasBias ? 3 : 2];
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t flat = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; flat < kTotal;
       flat += step) {
    const int64_t image_filter = flat / kOutPlane;  // n * kFilters + f
    const int64_t f = image_filter % kFilters;
    const int64_t n = image_filter / kFilters;
    const int64_t g = f / kGroupFilters;
    int64_t origin[kRank];
    int64_t rest = flat % kOutPlane;
#pragma unroll
    for (int a = kRank - 1; a >= 0; --a) {
      origin[a] = rest % kOut[a] * kStride[a] - kPadBegin[a];
      rest /= kOut[a];
    }
    const gf_elem* image = x + (n * kChannels + g * kGroupChannels) * kInPlane;
    const gf_elem* filter = w + f * kGroupChannels * kTaps;
    float acc = 0.0f;
    for (int64_t t = 0; t < kTaps; ++t) {
      int64_t tap = t, offset = 0;
      bool inside = true;
#pragma unroll
      for (int a = kRank - 1; a >= 0; --a) {
        const int64_t at = origin[a] + tap % kKernel[a] * kDilation[a];
        tap /= kKernel[a];
        inside = inside && at >= 0 && at < kIn[a];
        offset += at * kInStride[a];
      }
      if (!inside) continue;  // padding contributes 0
      for (int64_t c = 0; c < kGroupChannels; ++c) {
        acc += gf_load(image[c * kInPlane + offset]) * gf_load(filter[c * kTaps + t]);
      }
    }
    if constexpr (kHasBias) acc += gf_load(bias[f]);
    y[flat] = gf_store(acc);
  }
}
