// MaxPool (f32, one or two spatial axes, no Indices output) with the window bounds clipped per
// output row and column instead of testing every tap, NaN-propagating like the reference.
// Geometry (SAME padding, ceil_mode) from the resolver shape inference uses.
#include <algorithm>
#include <cmath>

#include "ir/infer_linear_family.h"
#include "runtime/cpu/anchor_kernel.h"

namespace gf::cpu {

namespace {

// Below this many outputs the pool runs on the calling thread (waking the team costs more).
constexpr int64_t kMinThreadedOutputs = int64_t{1} << 14;

struct PoolAxis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad = 0;
  // The taps [first, last) of output o that fall inside the input.
  void taps(int64_t o, int64_t& first, int64_t& last) const {
    const int64_t start = o * stride - pad;
    first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
    last = in - start <= 0 ? 0 : std::min(kernel, (in - start + dilation - 1) / dilation);
  }
};

class MaxPoolKernel final : public AnchorKernel {
 public:
  MaxPoolKernel(int64_t planes, PoolAxis h, PoolAxis w) : planes_(planes), h_(h), w_(w) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void*) const override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    // Planes are independent; ResNet-50's one pool (64 planes of 112x112) took 2 ms on one thread.
#pragma omp parallel for schedule(static) if (planes_ * h_.out * w_.out >= kMinThreadedOutputs)
    for (int64_t p = 0; p < planes_; ++p) {
      const float* plane = x + p * h_.in * w_.in;
      float* out = y + p * h_.out * w_.out;
      for (int64_t oh = 0; oh < h_.out; ++oh) {
        int64_t kh0, kh1;
        h_.taps(oh, kh0, kh1);
        for (int64_t ow = 0; ow < w_.out; ++ow) {
          int64_t kw0, kw1;
          w_.taps(ow, kw0, kw1);
          // Inference guarantees every window has a tap inside the input.
          float best = 0;
          bool seen = false;
          for (int64_t kh = kh0; kh < kh1; ++kh) {
            const float* row = plane + (oh * h_.stride - h_.pad + kh * h_.dilation) * w_.in +
                               (ow * w_.stride - w_.pad);
            for (int64_t kw = kw0; kw < kw1; ++kw) {
              const float v = row[kw * w_.dilation];
              best = !seen ? v : (std::isnan(best) || std::isnan(v)) ? NAN : std::max(best, v);
              seen = true;
            }
          }
          out[oh * w_.out + ow] = best;
        }
      }
    }
  }

 private:
  int64_t planes_;
  PoolAxis h_, w_;
};

}  // namespace

std::unique_ptr<AnchorKernel> make_max_pool_kernel(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1) return nullptr;  // the Indices output stays with the reference
  const std::vector<int64_t> xd = g.value(n.inputs[0]).type.shape.static_dims();
  const size_t spatial = xd.size() - 2;
  if (spatial < 1 || spatial > 2) return nullptr;
  const WindowAttrs attrs =
      read_window_attrs(n.attrs, n.attrs.get_ints("kernel_shape"), /*pool=*/true);
  PoolAxis axes[2];
  for (size_t i = 0; i < spatial; ++i) {
    const AxisWindow a = resolve_window_axis(attrs, i, xd[2 + i]);
    axes[i] = PoolAxis{xd[2 + i],          a.out,      attrs.kernel[i], attrs.strides[i],
                       attrs.dilations[i], a.pad_begin};
  }
  const PoolAxis h = spatial == 2 ? axes[0] : PoolAxis{};
  const PoolAxis w = spatial == 2 ? axes[1] : axes[0];
  return std::make_unique<MaxPoolKernel>(xd[0] * xd[1], h, w);
}

}  // namespace gf::cpu
