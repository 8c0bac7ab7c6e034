// Reference Attention (ONNX opset 23, without KV cache), one query row at a time, in the compute
// type (float for f32/f16/bf16, double for f64). Follows onnx/reference/ops/op_attention.py:
//   scores = (Q * sqrt(scale)) . (K * sqrt(scale)), softcap (if > 0) before any mask,
//   + bias (attn_mask as 0/-inf or added values, -inf past its last column, causal -inf for
//   key j > query i: top-left aligned because there is no past), NaN-propagating softmax,
//   and a zero output row where the bias is -inf for every key.
// Query head h reads K/V head h / (Hq / Hkv) (grouped and multi-query attention).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/reference/linear_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

// Element strides of a [B, H, S, D]-indexed view of a 4-D tensor or a packed 3-D [B, S, H*D] one.
struct HeadLayout {
  int64_t batch, head, pos;  // the innermost (head_dim) stride is 1

  static HeadLayout of(bool packed, int64_t heads, int64_t len, int64_t dim) {
    if (packed) return {len * heads * dim, dim, heads * dim};
    return {heads * len * dim, len * dim, dim};
  }
  int64_t at(int64_t b, int64_t h, int64_t s) const { return b * batch + h * head + s * pos; }
};

struct AttentionShape {
  bool packed;
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head_dim, v_head_dim;
};

AttentionShape attention_shape(const KernelArgs& args) {
  const auto& q = args.inputs[0].dims();
  const auto& k = args.inputs[1].dims();
  const auto& v = args.inputs[2].dims();
  if (q.size() == 4) return {false, q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
  const int64_t hq = args.attrs().get_int("q_num_heads", 1);
  const int64_t hkv = args.attrs().get_int("kv_num_heads", 1);
  return {true, q[0], hq, hkv, q[1], k[1], q[2] / hq, v[2] / hkv};
}

template <class C>
C nan_max(C a, C b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<C>::quiet_NaN() : std::max(a, b);
}

// The additive bias of key j for query i of head h in batch b: attn_mask (bool as 0 / -inf,
// float as is) broadcast over [B, Hq, S], -inf past the mask's last column, plus the causal
// -inf for keys after the query.
template <class T>
class AttentionBias {
 public:
  using C = ComputeType<T>;
  static constexpr C kNegInf = -std::numeric_limits<C>::infinity();

  AttentionBias(const KernelArgs& args, const AttentionShape& sh)
      : causal_(args.attrs().get_int("is_causal", 0) != 0) {
    if (!args.has_input(3)) return;
    mask_ = &args.inputs[3];
    columns_ = mask_->dims().back();
    strides_ = broadcast_strides(mask_->dims(), {sh.batch, sh.q_heads, sh.q_len, columns_});
  }

  C at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    C bias = 0;
    if (mask_ != nullptr) {
      const int64_t at = b * strides_[0] + h * strides_[1] + i * strides_[2] + j * strides_[3];
      if (j >= columns_) {
        bias = kNegInf;
      } else if (mask_->dtype() == DType::kBool) {
        bias = mask_->data<bool>()[at] ? C(0) : kNegInf;
      } else {
        bias = static_cast<C>(mask_->data<T>()[at]);
      }
    }
    return causal_ && j > i ? bias + kNegInf : bias;
  }

 private:
  bool causal_;
  const Tensor* mask_ = nullptr;
  int64_t columns_ = 0;
  std::vector<int64_t> strides_;
};

// Softmax in place as ONNX's reference computes it: NaN propagates through the max, and a row
// whose every score is -inf becomes zeros instead of 0/0.
template <class C>
void softmax_in_place(std::vector<C>& row) {
  C row_max = -std::numeric_limits<C>::infinity();
  for (C s : row) row_max = nan_max(row_max, s);
  const C shift = std::isinf(row_max) && row_max < 0 ? C(0) : row_max;
  C sum = 0;
  for (C& s : row) {
    s = std::exp(s - shift);
    sum += s;
  }
  if (sum == C(0)) sum = 1;
  for (C& s : row) s /= sum;
}

void attention(const KernelArgs& args) {
  const AttentionShape sh = attention_shape(args);
  const HeadLayout ql = HeadLayout::of(sh.packed, sh.q_heads, sh.q_len, sh.head_dim);
  const HeadLayout kl = HeadLayout::of(sh.packed, sh.kv_heads, sh.kv_len, sh.head_dim);
  const HeadLayout vl = HeadLayout::of(sh.packed, sh.kv_heads, sh.kv_len, sh.v_head_dim);
  const HeadLayout yl = HeadLayout::of(sh.packed, sh.q_heads, sh.q_len, sh.v_head_dim);
  const int64_t group = sh.q_heads / sh.kv_heads;
  const double softcap = args.attrs().get_float("softcap", 0.0f);
  const double scale = args.attrs().has("scale")
                           ? static_cast<double>(args.attrs().get_float("scale", 0.0f))
                           : 1.0 / std::sqrt(static_cast<double>(sh.head_dim));

  visit_float_dtype(args.inputs[0].dtype(), "Attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const AttentionBias<T> bias(args, sh);
    const T* q = args.inputs[0].data<T>();
    const T* k = args.inputs[1].data<T>();
    const T* v = args.inputs[2].data<T>();
    T* y = args.outputs[0].data<T>();
    // ONNX scales Q and K by sqrt(scale) each (rounded to the compute type), not the product.
    const C root_scale = static_cast<C>(std::sqrt(scale));
    std::vector<C> row_bias(static_cast<size_t>(sh.kv_len)), p(static_cast<size_t>(sh.kv_len));

    for (int64_t b = 0; b < sh.batch; ++b) {
      for (int64_t h = 0; h < sh.q_heads; ++h) {
        const int64_t kv_h = h / group;
        for (int64_t i = 0; i < sh.q_len; ++i) {
          T* y_row = y + yl.at(b, h, i);
          C bias_max = AttentionBias<T>::kNegInf;
          for (int64_t j = 0; j < sh.kv_len; ++j) {
            row_bias[static_cast<size_t>(j)] = bias.at(b, h, i, j);
            bias_max = nan_max(bias_max, row_bias[static_cast<size_t>(j)]);
          }
          if (bias_max == AttentionBias<T>::kNegInf) {  // no key to attend (or no keys at all)
            for (int64_t d = 0; d < sh.v_head_dim; ++d) y_row[d] = T(C(0));
            continue;
          }
          // Scores, softcapped before the bias so that a masked -inf stays -inf.
          const T* q_row = q + ql.at(b, h, i);
          for (int64_t j = 0; j < sh.kv_len; ++j) {
            const T* k_row = k + kl.at(b, kv_h, j);
            C s = 0;
            for (int64_t d = 0; d < sh.head_dim; ++d) {
              s +=
                  (static_cast<C>(q_row[d]) * root_scale) * (static_cast<C>(k_row[d]) * root_scale);
            }
            if (softcap > 0) s = static_cast<C>(softcap) * std::tanh(s / static_cast<C>(softcap));
            p[static_cast<size_t>(j)] = s + row_bias[static_cast<size_t>(j)];
          }
          softmax_in_place(p);
          for (int64_t d = 0; d < sh.v_head_dim; ++d) {
            C acc = 0;
            for (int64_t j = 0; j < sh.kv_len; ++j) {
              acc += p[static_cast<size_t>(j)] * static_cast<C>(v[vl.at(b, kv_h, j) + d]);
            }
            y_row[d] = T(acc);
          }
        }
      }
    }
  });
}

}  // namespace

void register_attention_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kAttention)] = attention;
}

}  // namespace gf::ref
