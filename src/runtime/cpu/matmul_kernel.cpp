// MatMul and Gemm (f32) straight on the program's buffers. A batched MatMul against a 2-D right
// operand (every Linear layer) is one GEMM over all rows of the batch; other batches run one
// GEMM per broadcast batch index, with offsets computed once at build time.
#include <algorithm>

#include "runtime/cpu/anchor_kernel.h"
#include "runtime/cpu/blas.h"

namespace gf::cpu {

namespace {

bool fits_blas(std::initializer_list<int64_t> sizes) {
  const int64_t max = blas_int_max();
  return std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s <= max; });
}

class MatMulKernel final : public AnchorKernel {
 public:
  MatMulKernel(int64_t m, int64_t n, int64_t k, std::vector<std::pair<int64_t, int64_t>> offsets)
      : m_(m), n_(n), k_(k), offsets_(std::move(offsets)) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void*) const override {
    const auto* a = static_cast<const float*>(inputs[0]);
    const auto* b = static_cast<const float*>(inputs[1]);
    auto* y = static_cast<float*>(outputs[0]);
    for (size_t i = 0; i < offsets_.size(); ++i) {
      sgemm(false, false, m_, n_, k_, 1.0f, a + offsets_[i].first, k_, b + offsets_[i].second, n_,
            0.0f, y + static_cast<int64_t>(i) * m_ * n_, n_);
    }
  }

 private:
  int64_t m_, n_, k_;
  std::vector<std::pair<int64_t, int64_t>> offsets_;  // per output batch index: A's, B's offset
};

// Y = alpha * op(A) op(B) + beta * C, with C (broadcast to [M, N]) placed in Y first so that
// BLAS adds it (its beta = 1): a NaN or Inf in C reaches Y even when beta is 0, as in the
// reference.
class GemmKernel final : public AnchorKernel {
 public:
  GemmKernel(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, float beta,
             int64_t c_row_stride, int64_t c_col_stride)
      : trans_a_(trans_a),
        trans_b_(trans_b),
        m_(m),
        n_(n),
        k_(k),
        alpha_(alpha),
        beta_(beta),
        c_row_stride_(c_row_stride),
        c_col_stride_(c_col_stride) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void*) const override {
    const auto* a = static_cast<const float*>(inputs[0]);
    const auto* b = static_cast<const float*>(inputs[1]);
    const auto* c = inputs.size() > 2 ? static_cast<const float*>(inputs[2]) : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    if (c != nullptr) {
      for (int64_t i = 0; i < m_; ++i)
        for (int64_t j = 0; j < n_; ++j)
          y[i * n_ + j] = beta_ * c[i * c_row_stride_ + j * c_col_stride_];
    }
    sgemm(trans_a_, trans_b_, m_, n_, k_, alpha_, a, trans_a_ ? m_ : k_, b, trans_b_ ? k_ : n_,
          c != nullptr ? 1.0f : 0.0f, y, n_);
  }

 private:
  bool trans_a_, trans_b_;
  int64_t m_, n_, k_;
  float alpha_, beta_;
  int64_t c_row_stride_, c_col_stride_;
};

// Row-major element strides of `dims` broadcast to `to` (right-aligned; 0 where broadcast).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& to) {
  std::vector<int64_t> out(to.size(), 0);
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    const size_t o = to.size() - (dims.size() - i);
    out[o] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  return out;
}

}  // namespace

std::unique_ptr<AnchorKernel> make_matmul_kernel(const Graph& g, const Node& n) {
  // numpy promotion of 1-D operands; the output already has the promoted dims removed.
  std::vector<int64_t> ad = g.value(n.inputs[0]).type.shape.static_dims();
  std::vector<int64_t> bd = g.value(n.inputs[1]).type.shape.static_dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t m = ad[ad.size() - 2];
  const int64_t k = ad.back(), n_cols = bd.back();
  const std::vector<int64_t> batch_a(ad.begin(), ad.end() - 2), batch_b(bd.begin(), bd.end() - 2);
  std::vector<std::pair<int64_t, int64_t>> offsets;
  if (batch_b.empty()) {  // every batch of A against the one B: one GEMM over all of A's rows
    for (int64_t d : batch_a) m *= d;
    offsets.emplace_back(0, 0);
  } else {
    std::vector<int64_t> batch(std::max(batch_a.size(), batch_b.size()), 1);
    for (size_t i = 0; i < batch.size(); ++i) {
      const size_t from_end = batch.size() - i;
      const int64_t da = from_end <= batch_a.size() ? batch_a[batch_a.size() - from_end] : 1;
      const int64_t db = from_end <= batch_b.size() ? batch_b[batch_b.size() - from_end] : 1;
      batch[i] = da == 1 ? db : da;
    }
    const std::vector<int64_t> sa = broadcast_strides(batch_a, batch);
    const std::vector<int64_t> sb = broadcast_strides(batch_b, batch);
    int64_t count = 1;
    for (int64_t d : batch) count *= d;
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t i = 0; i < count; ++i) {
      int64_t oa = 0, ob = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        oa += idx[d] * sa[d];
        ob += idx[d] * sb[d];
      }
      offsets.emplace_back(oa * m * k, ob * k * n_cols);
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
  }
  if (!fits_blas({m, n_cols, k})) return nullptr;
  return std::make_unique<MatMulKernel>(m, n_cols, k, std::move(offsets));
}

std::unique_ptr<AnchorKernel> make_gemm_kernel(const Graph& g, const Node& n) {
  const bool trans_a = n.attrs.get_int("transA", 0) != 0;
  const bool trans_b = n.attrs.get_int("transB", 0) != 0;
  const std::vector<int64_t> ad = g.value(n.inputs[0]).type.shape.static_dims();
  const std::vector<int64_t> yd = g.value(n.outputs[0]).type.shape.static_dims();
  const int64_t k = trans_a ? ad[0] : ad[1];
  int64_t c_row = 0, c_col = 0;
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    const std::vector<int64_t> s =
        broadcast_strides(g.value(n.inputs[2]).type.shape.static_dims(), yd);
    c_row = s[0];
    c_col = s[1];
  }
  if (!fits_blas({yd[0], yd[1], k})) return nullptr;
  return std::make_unique<GemmKernel>(trans_a, trans_b, yd[0], yd[1], k,
                                      n.attrs.get_float("alpha", 1.0f),
                                      n.attrs.get_float("beta", 1.0f), c_row, c_col);
}

}  // namespace gf::cpu
