// Conv (f32, one or two spatial axes) as GEMMs: per image and group, Y = W * col, where col is
// the input itself for a 1x1 stride-1 unpadded kernel and the conv's windows otherwise. The
// geometry (output size, SAME padding) comes from the same resolver as shape inference. Constant
// weights are packed at build time for packed_gemm.h's kernel, which gathers the windows block by
// block (conv_columns.h); other weights (or a CPU without AVX-512) go to sgemm over an im2col
// copy in the run's workspace. The threads split each GEMM's output between them (and the im2col
// copy), which suits batch 1.
#include <algorithm>
#include <cstring>

#include <omp.h>

#include "ir/infer_linear_family.h"
#include "runtime/cpu/anchor_kernel.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/conv_columns.h"
#include "runtime/cpu/packed_gemm.h"

namespace gf::cpu {

namespace {

// Below these sizes a conv's GEMM or im2col runs on the calling thread: waking the team costs
// more than it saves (the same bound as blas.cpp's for GEMMs).
constexpr int64_t kMinThreadedMacs = int64_t{1} << 21;
constexpr int64_t kMinThreadedCopy = int64_t{1} << 15;
// Fewest output positions per thread for a split over positions: a narrower GEMM tile runs
// below the BLAS kernel's speed.
constexpr int64_t kMinPositionsPerThread = 128;
constexpr int64_t kPositionUnit = 16;  // one AVX-512 vector of floats
// Fewest filters per group that the packed GEMM takes.
constexpr int64_t kMinPackedFilters = 8;

using Axis = ConvAxis;

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

  // Packs constant weights for the packed GEMM, one matrix per group. Not for a few filters per
  // group (a depthwise conv would fill 1 of the panel's 8 rows).
  void pack(const float* weights) {
    if (!PackedWeights::available() || group_filters_ < kMinPackedFilters) return;
    if (col_rows_ == 0) return;  // an empty sum: sgemm's path writes the bias
    if (!direct_ && !ConvColumns::fits(h_, w_)) return;
    for (int64_t g = 0; g < group_; ++g)
      packed_.emplace_back(weights + g * group_filters_ * col_rows_, group_filters_, col_rows_);
  }

  // Whether the packed GEMM runs this conv (and so can take an epilogue).
  bool packed() const { return !packed_.empty(); }
  // Y = relu?(conv + residual?) in the GEMM's last store; the residual is run()'s inputs[3].
  void set_epilogue(bool residual, bool relu) {
    residual_ = residual;
    relu_ = relu;
  }

  bool fits_blas() const {
    const int64_t max = blas_int_max();
    return col_rows_ <= max && positions_ <= max && group_filters_ <= max;
  }

  uint64_t workspace_bytes() const override {
    if (direct_ || !packed_.empty()) return 0;
    return static_cast<uint64_t>(col_rows_ * positions_) * sizeof(float);
  }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void* workspace) const override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* wt = static_cast<const float*>(inputs[1]);
    const auto* bias = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
    const auto* residual = residual_ ? static_cast<const float*>(inputs[3]) : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    auto* col = static_cast<float*>(workspace);
    const int64_t image = h_.in * w_.in;
    for (int64_t n = 0; n < batch_; ++n) {
      for (int64_t g = 0; g < group_; ++g) {
        const float* x_ng = x + (n * channels_ + g * group_channels_) * image;
        float* y_ng = y + (n * filters_ + g * group_filters_) * positions_;
        const float* bias_g = bias != nullptr ? bias + g * group_filters_ : nullptr;
        if (!packed_.empty()) {
          GemmEpilogue epilogue;
          epilogue.relu = relu_;
          if (residual != nullptr) {
            epilogue.residual = residual + (n * filters_ + g * group_filters_) * positions_;
            epilogue.ldr = positions_;
          }
          packed_gemm(packed_[static_cast<size_t>(g)], x_ng, bias_g, y_ng, epilogue);
          continue;
        }
        if (!direct_) im2col(x_ng, col);
        gemm(wt + g * group_filters_ * col_rows_, direct_ ? x_ng : col, bias_g, y_ng);
      }
    }
  }

 private:
  // The output split between the threads: positions when each thread gets a wide enough slice
  // of them, else filters (a layer of 7x7 positions at ResNet's last stage), in whole panels.
  struct Tile {
    int64_t m0, m1, n0, n1;
    bool empty() const { return m1 <= m0 || n1 <= n0; }
  };
  Tile thread_tile() const {
    const int64_t m = group_filters_, n = positions_;
    const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
    const bool by_positions = n >= parts * kMinPositionsPerThread;
    const int64_t extent = by_positions ? n : m;
    // Positions in whole vectors rather than 48-column tiles, for an even split (56x56 positions:
    // 1568 each instead of 1584 and 1552).
    const int64_t unit = by_positions ? kPositionUnit : PackedWeights::kPanelRows;
    const int64_t units = (extent + unit - 1) / unit;
    const int64_t begin = std::min(extent, units * part / parts * unit);
    const int64_t end = std::min(extent, units * (part + 1) / parts * unit);
    return by_positions ? Tile{0, m, begin, end} : Tile{begin, end, 0, n};
  }

  bool threaded() const {
    return group_filters_ * positions_ * col_rows_ >= kMinThreadedMacs && omp_get_max_threads() > 1;
  }

  // y = packed w * (x's windows, or x itself for a direct conv) + bias, one tile per thread.
  void packed_gemm(const PackedWeights& w, const float* x, const float* bias, float* y,
                   const GemmEpilogue& epilogue) const {
#pragma omp parallel if (threaded())
    {
      const Tile t = thread_tile();
      if (!t.empty()) {
        if (direct_) {
          w.multiply(DenseColumns(x, positions_), bias, y, positions_, t.m0, t.m1, t.n0, t.n1,
                     epilogue);
        } else {
          w.multiply(ConvColumns(x, h_, w_), bias, y, positions_, t.m0, t.m1, t.n0, t.n1,
                     epilogue);
        }
      }
    }
  }

  // y = w * col (+ bias per row), one single-threaded sgemm per thread's tile.
  void gemm(const float* w, const float* col, const float* bias, float* y) const {
    const int64_t n = positions_, k = col_rows_;
#pragma omp parallel if (threaded())
    {
      const Tile t = thread_tile();
      if (!t.empty()) {
        // The bias is the GEMM's initial C (beta = 1), which saves a pass over Y.
        if (bias != nullptr) {
          for (int64_t f = t.m0; f < t.m1; ++f)
            std::fill(y + f * n + t.n0, y + f * n + t.n1, bias[f]);
        }
        sgemm(false, false, t.m1 - t.m0, t.n1 - t.n0, k, 1.0f, w + t.m0 * k, k, col + t.n0, n,
              bias != nullptr ? 1.0f : 0.0f, y + t.m0 * n + t.n0, n);
      }
    }
  }

  // col[(c * KH + kh) * KW + kw, oh * OW + ow] = x[c, oh*sh - ph + kh*dh, ow*sw - pw + kw*dw],
  // 0 in the padding. The valid output columns of each kw are computed once, so the inner loop
  // is a plain (or strided) copy.
  void im2col(const float* x, float* col) const {
#pragma omp parallel for schedule(static) if (col_rows_ * positions_ >= kMinThreadedCopy)
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
  bool residual_ = false, relu_ = false;
  std::vector<PackedWeights> packed_;  // per group; empty: sgemm on the weights as given
};

}  // namespace

namespace {

std::unique_ptr<ConvKernel> conv_kernel(const Graph& g, const Node& n) {
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
  if (const Value& wv = g.value(n.inputs[1]); wv.is_constant()) k->pack(wv.constant.data<float>());
  return k;
}

}  // namespace

std::unique_ptr<AnchorKernel> make_conv_kernel(const Graph& g, const Node& n) {
  return conv_kernel(g, n);
}

std::unique_ptr<AnchorKernel> make_conv_epilogue_kernel(const Graph& g, const Node& n,
                                                        bool residual, bool relu) {
  std::unique_ptr<ConvKernel> k = conv_kernel(g, n);
  if (!k || !k->packed()) return nullptr;
  k->set_epilogue(residual, relu);
  return k;
}

}  // namespace gf::cpu
