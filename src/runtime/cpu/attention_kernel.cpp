// Attention (f32, ONNX opset 23 without KV cache) per batch and head as two GEMMs around a row
// softmax: S = scale * Q K^T into the workspace, softcap, mask and causal bias, softmax (NaN
// propagating, all-masked rows zero), then Y = P V written in place into Y's layout. Matches
// src/runtime/cpu/reference/attention.cpp up to rounding (scale applied once, as a GEMM alpha).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/anchor_kernel.h"
#include "runtime/cpu/blas.h"

namespace gf::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Element strides of a [B, H, S, D]-indexed view of a 4-D tensor or a packed 3-D [B, S, H*D] one.
struct HeadLayout {
  int64_t batch, head, pos;

  static HeadLayout of(bool packed, int64_t heads, int64_t len, int64_t dim) {
    if (packed) return {len * heads * dim, dim, heads * dim};
    return {heads * len * dim, len * dim, dim};
  }
  int64_t at(int64_t b, int64_t h) const { return b * batch + h * head; }
};

struct Shape4 {
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head_dim, v_head_dim;
};

enum class MaskKind { kNone, kBool, kFloat };

class AttentionKernel final : public AnchorKernel {
 public:
  AttentionKernel(bool packed, Shape4 s, float scale, float softcap, bool causal, MaskKind mask,
                  std::vector<int64_t> mask_strides, int64_t mask_columns)
      : s_(s),
        q_(HeadLayout::of(packed, s.q_heads, s.q_len, s.head_dim)),
        k_(HeadLayout::of(packed, s.kv_heads, s.kv_len, s.head_dim)),
        v_(HeadLayout::of(packed, s.kv_heads, s.kv_len, s.v_head_dim)),
        y_(HeadLayout::of(packed, s.q_heads, s.q_len, s.v_head_dim)),
        scale_(scale),
        softcap_(softcap),
        causal_(causal),
        mask_(mask),
        mask_strides_(std::move(mask_strides)),
        mask_columns_(mask_columns) {}

  uint64_t workspace_bytes() const override {
    return static_cast<uint64_t>(s_.q_len * s_.kv_len) * sizeof(float);
  }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs,
           void* workspace) const override {
    const auto* q = static_cast<const float*>(inputs[0]);
    const auto* k = static_cast<const float*>(inputs[1]);
    const auto* v = static_cast<const float*>(inputs[2]);
    const void* mask = inputs.size() > 3 ? inputs[3] : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    auto* scores = static_cast<float*>(workspace);
    const int64_t group = s_.q_heads / s_.kv_heads;
    for (int64_t b = 0; b < s_.batch; ++b) {
      for (int64_t h = 0; h < s_.q_heads; ++h) {
        const int64_t kv_h = h / group;
        sgemm(false, true, s_.q_len, s_.kv_len, s_.head_dim, scale_, q + q_.at(b, h), q_.pos,
              k + k_.at(b, kv_h), k_.pos, 0.0f, scores, s_.kv_len);
        for (int64_t i = 0; i < s_.q_len; ++i) finish_row(scores + i * s_.kv_len, b, h, i, mask);
        sgemm(false, false, s_.q_len, s_.v_head_dim, s_.kv_len, 1.0f, scores, s_.kv_len,
              v + v_.at(b, kv_h), v_.pos, 0.0f, y + y_.at(b, h), y_.pos);
      }
    }
  }

 private:
  // Softcap, bias and softmax of one row of scores, in place; a row with no key to attend
  // becomes zeros (so its output row is zero).
  void finish_row(float* row, int64_t b, int64_t h, int64_t i, const void* mask) const {
    const int64_t n = s_.kv_len;
    if (softcap_ > 0)
      for (int64_t j = 0; j < n; ++j) row[j] = softcap_ * std::tanh(row[j] / softcap_);
    float bias_max = kNegInf;
    if (mask_ != MaskKind::kNone || causal_) {
      const int64_t base = b * mask_strides_[0] + h * mask_strides_[1] + i * mask_strides_[2];
      for (int64_t j = 0; j < n; ++j) {
        float bias = 0;
        if (mask_ != MaskKind::kNone) {
          const int64_t at = base + j * mask_strides_[3];
          if (j >= mask_columns_) {
            bias = kNegInf;
          } else if (mask_ == MaskKind::kBool) {
            bias = static_cast<const bool*>(mask)[at] ? 0.0f : kNegInf;
          } else {
            bias = static_cast<const float*>(mask)[at];
          }
        }
        if (causal_ && j > i) bias += kNegInf;
        if (!std::isnan(bias_max)) bias_max = std::isnan(bias) ? bias : std::max(bias_max, bias);
        row[j] += bias;
      }
    } else if (n > 0) {
      bias_max = 0;
    }
    if (bias_max == kNegInf) {
      std::fill_n(row, n, 0.0f);
      return;
    }
    float row_max = kNegInf;
    bool nan = false;
    for (int64_t j = 0; j < n; ++j) {
      nan |= std::isnan(row[j]);
      row_max = std::max(row_max, row[j]);
    }
    if (nan) {
      std::fill_n(row, n, std::numeric_limits<float>::quiet_NaN());
      return;
    }
    const float shift = row_max == kNegInf ? 0.0f : row_max;
    float sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      row[j] = std::exp(row[j] - shift);
      sum += row[j];
    }
    if (sum == 0.0f) sum = 1;
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  }

  Shape4 s_;
  HeadLayout q_, k_, v_, y_;
  float scale_, softcap_;
  bool causal_;
  MaskKind mask_;
  std::vector<int64_t> mask_strides_;  // over [B, Hq, Sq, columns], 0 where broadcast
  int64_t mask_columns_;
};

}  // namespace

std::unique_ptr<AnchorKernel> make_attention_kernel(const Graph& g, const Node& n) {
  if (n.inputs.size() > 4 || n.outputs.size() != 1) return nullptr;
  const std::vector<int64_t> q = g.value(n.inputs[0]).type.shape.static_dims();
  const std::vector<int64_t> k = g.value(n.inputs[1]).type.shape.static_dims();
  const std::vector<int64_t> v = g.value(n.inputs[2]).type.shape.static_dims();
  const bool packed = q.size() == 3;
  Shape4 s{};
  if (!packed) {
    s = {q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
  } else {
    const int64_t hq = n.attrs.get_int("q_num_heads", 1), hkv = n.attrs.get_int("kv_num_heads", 1);
    s = {q[0], hq, hkv, q[1], k[1], q[2] / hq, v[2] / hkv};
  }
  const double scale = n.attrs.has("scale") ? static_cast<double>(n.attrs.get_float("scale", 0.0f))
                                            : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  // ONNX scales Q and K by sqrt(scale) each; a zero scale would let BLAS skip NaNs in Q or K.
  const float root_scale = static_cast<float>(std::sqrt(scale));
  if (!(root_scale > 0.0f)) return nullptr;
  MaskKind mask = MaskKind::kNone;
  std::vector<int64_t> strides(4, 0);
  int64_t columns = 0;
  if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) {
    const TensorType& mt = g.value(n.inputs[3]).type;
    if (mt.dtype != DType::kBool && mt.dtype != DType::kF32) return nullptr;
    mask = mt.dtype == DType::kBool ? MaskKind::kBool : MaskKind::kFloat;
    const std::vector<int64_t> md = mt.shape.static_dims();
    columns = md.back();
    const std::vector<int64_t> full = {s.batch, s.q_heads, s.q_len, columns};
    int64_t stride = 1;
    for (size_t i = md.size(); i-- > 0;) {
      strides[4 - (md.size() - i)] = md[i] == 1 ? 0 : stride;
      stride *= md[i];
    }
  }
  const int64_t max = blas_int_max();
  for (int64_t d : {s.q_len, s.kv_len, s.head_dim, s.v_head_dim, s.q_heads * s.head_dim})
    if (d > max) return nullptr;
  return std::make_unique<AttentionKernel>(
      packed, s, root_scale * root_scale, n.attrs.get_float("softcap", 0.0f),
      n.attrs.get_int("is_causal", 0) != 0, mask, std::move(strides), columns);
}

}  // namespace gf::cpu
