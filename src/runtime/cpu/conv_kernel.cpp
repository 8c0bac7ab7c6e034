// Conv (f32, one or two spatial axes) as GEMMs: per image and group, Y = W * col, where col is
// the input itself for a 1x1 stride-1 unpadded kernel and an im2col copy in the run's workspace
// otherwise. The geometry (output size, SAME padding) comes from the same resolver as shape
// inference. Threads go to OpenBLAS inside each GEMM, which suits batch 1.
#include <algorithm>
#include <cstring>

#include "ir/infer_linear_family.h"
#include "runtime/cpu/anchor_kernel.h"
#include "runtime/cpu/blas.h"

namespace gf::cpu {

namespace {

// One spatial axis: input size, output size, kernel, stride, dilation, padding before.
struct Axis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad = 0;
};

class ConvKernel final : public AnchorKernel {
 public:
  ConvKernel(int64_t batch, int64_t channels, int64_t filters, int64_t group, Axis h, Axis w)
      : batch_(batch), channels_(channels), filters_(filters), group_(group), h_(h), w_(w) {
    group_channels_ = channels / group;
    group_filters_ = filters / group;
    col_rows_ = group_channels_ * h.kernel * w.kernel;
    positions_ = h.out * w.out;
    direct_ = h.kernel == 1 && w.kernel == 1 && h.stride == 1 && w.stride == 1 && h.pad == 0 &&
              w.pad == 0 && h.out == h.in && w.out == w.in;
  }

  bool fits_blas() const {
    const int64_t max = blas_int_max();
    return col_rows_ <= max && positions_ <= max && group_filters_ <= max;
  }

  uint64_t workspace_bytes() const override {
    return direct_ ? 0 : static_cast<uint64_t>(col_rows_ * positions_) * sizeof(float);
  }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void* workspace) const override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* wt = static_cast<const float*>(inputs[1]);
    const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    auto* col = static_cast<float*>(workspace);
    const int64_t image = h_.in * w_.in;
    for (int64_t n = 0; n < batch_; ++n) {
      for (int64_t g = 0; g < group_; ++g) {
        const float* x_ng = x + (n * channels_ + g * group_channels_) * image;
        float* y_ng = y + (n * filters_ + g * group_filters_) * positions_;
        if (!direct_) im2col(x_ng, col);
        // The bias is the GEMM's initial C (beta = 1), which saves a pass over Y.
        float beta = 0;
        if (bias != nullptr) {
          for (int64_t f = 0; f < group_filters_; ++f)
            std::fill_n(y_ng + f * positions_, positions_, bias[g * group_filters_ + f]);
          beta = 1;
        }
        sgemm(false, false, group_filters_, positions_, col_rows_, 1.0f,
              wt + g * group_filters_ * col_rows_, col_rows_, direct_ ? x_ng : col, positions_,
              beta, y_ng, positions_);
      }
    }
  }

 private:
  // col[(c * KH + kh) * KW + kw, oh * OW + ow] = x[c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw],
  // 0 in the padding. The valid output columns of each kw are computed once, so the inner loop
  // is a plain (or strided) copy.
  void im2col(const float* x, float* col) const {
    for (int64_t c = 0; c < group_channels_; ++c) {
      const float* plane = x + c * h_.in * w_.in;
      for (int64_t kh = 0; kh < h_.kernel; ++kh) {
        for (int64_t kw = 0; kw < w_.kernel; ++kw) {
          float* row = col + ((c * h_.kernel + kh) * w_.kernel + kw) * positions_;
          const int64_t shift = kw * w_.dilation - w_.pad;  // iw = ow * sw + shift
          // ow in [lo, hi) reads inside the row.
          int64_t lo = shift >= 0 ? 0 : (-shift + w_.stride - 1) / w_.stride;
          int64_t hi = w_.in - shift <= 0 ? 0 : (w_.in - shift + w_.stride - 1) / w_.stride;
          lo = std::min(lo, w_.out);
          hi = std::clamp(hi, lo, w_.out);
          for (int64_t oh = 0; oh < h_.out; ++oh) {
            float* dst = row + oh * w_.out;
            const int64_t ih = oh * h_.stride - h_.pad + kh * h_.dilation;
            if (ih < 0 || ih >= h_.in) {
              std::fill_n(dst, w_.out, 0.0f);
              continue;
            }
            const float* src = plane + ih * w_.in;
            std::fill_n(dst, lo, 0.0f);
            if (w_.stride == 1) {
              if (hi > lo)
                std::memcpy(dst + lo, src + lo + shift,
                            static_cast<size_t>(hi - lo) * sizeof(float));
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = src[ow * w_.stride + shift];
            }
            std::fill_n(dst + hi, w_.out - hi, 0.0f);
          }
        }
      }
    }
  }

  int64_t batch_, channels_, filters_, group_;
  Axis h_, w_;
  int64_t group_channels_ = 0, group_filters_ = 0, col_rows_ = 0, positions_ = 0;
  bool direct_ = false;
};

}  // namespace

std::unique_ptr<AnchorKernel> make_conv_kernel(const Graph& g, const Node& n) {
  const std::vector<int64_t> xd = g.value(n.inputs[0]).type.shape.static_dims();
  const std::vector<int64_t> wd = g.value(n.inputs[1]).type.shape.static_dims();
  const size_t spatial = xd.size() - 2;
  if (spatial < 1 || spatial > 2) return nullptr;
  const WindowAttrs attrs =
      read_window_attrs(n.attrs, std::vector<int64_t>(wd.begin() + 2, wd.end()), /*pool=*/false);
  Axis axes[2];
  for (size_t i = 0; i < spatial; ++i) {
    const AxisWindow a = resolve_window_axis(attrs, i, xd[2 + i]);
    axes[i] =
        Axis{xd[2 + i], a.out, attrs.kernel[i], attrs.strides[i], attrs.dilations[i], a.pad_begin};
  }
  // One spatial axis is a convolution over a height of 1.
  const Axis h = spatial == 2 ? axes[0] : Axis{};
  const Axis w = spatial == 2 ? axes[1] : axes[0];
  auto k = std::make_unique<ConvKernel>(xd[0], xd[1], wd[0], n.attrs.get_int("group", 1), h, w);
  if (!k->fits_blas()) return nullptr;
  return k;
}

}  // namespace gf::cpu
