// Reference Attention (ONNX opset 23, without KV cache), one query row at a time, in the compute
// type (float for f32/f16/bf16, double for f64). Follows onnx/reference/ops/op_attention.py:
//   scores = (Q * sqrt(scale)) . (K * sqrt(scale)), softcap (if > 0) before any mask,
//   + bias (attn_mask as 0/-inf or added values, -inf past its last column, causal -inf for
//   key j > query i: top-left aligned because there is no past), NaN-propagating softmax,
//   and a zero output row where the bias is -inf for every key.
// Query head h reads K/V head h / (Hq / Hkv) (grouped and multi-query attention).
#include <cmath>
#include <limits>

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

void attention(const KernelArgs& args) {
  const AttentionShape sh = attention_shape(args);
  const HeadLayout ql = HeadLayout::of(sh.packed, sh.q_heads, sh.q_len, sh.head_dim);
  const HeadLayout kl = HeadLayout::of(sh.packed, sh.kv_heads, sh.kv_len, sh.head_dim);
  const HeadLayout vl = HeadLayout::of(sh.packed, sh.kv_heads, sh.kv_len, sh.v_head_dim);
  const HeadLayout yl = HeadLayout::of(sh.packed, sh.q_heads, sh.q_len, sh.v_head_dim);
  const int64_t group = sh.q_heads / sh.kv_heads;
  const bool causal = args.attrs().get_int("is_causal", 0) != 0;
  const double softcap = args.attrs().get_float("softcap", 0.0f);
  const double scale = args.attrs().has("scale")
                           ? static_cast<double>(args.attrs().get_float("scale", 0.0f))
                           : 1.0 / std::sqrt(static_cast<double>(sh.head_dim));

  // The mask, broadcast over [B, Hq, S] and read only where its last dim reaches.
  const bool has_mask = args.has_input(3);
  const Tensor mask = has_mask ? args.inputs[3] : Tensor();
  const int64_t mask_len = has_mask ? mask.dims().back() : 0;
  const std::vector<int64_t> mask_strides =
      has_mask ? broadcast_strides(mask.dims(), {sh.batch, sh.q_heads, sh.q_len, mask_len})
               : std::vector<int64_t>(4, 0);

  visit_float_dtype(args.inputs[0].dtype(), "Attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    constexpr C kNegInf = -std::numeric_limits<C>::infinity();
    const T* q = args.inputs[0].data<T>();
    const T* k = args.inputs[1].data<T>();
    const T* v = args.inputs[2].data<T>();
    T* y = args.outputs[0].data<T>();
    const C root_scale = static_cast<C>(std::sqrt(scale));
    std::vector<C> bias(static_cast<size_t>(sh.kv_len)), score(static_cast<size_t>(sh.kv_len));

    for (int64_t b = 0; b < sh.batch; ++b) {
      for (int64_t h = 0; h < sh.q_heads; ++h) {
        const int64_t kv_h = h / group;
        for (int64_t i = 0; i < sh.q_len; ++i) {
          // Additive bias of every key for query i; the row is fully masked if all are -inf.
          C bias_max = kNegInf;
          for (int64_t j = 0; j < sh.kv_len; ++j) {
            C bj = 0;
            if (has_mask) {
              const int64_t at = b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] +
                                 j * mask_strides[3];
              if (j >= mask_len) {
                bj = kNegInf;
              } else if (mask.dtype() == DType::kBool) {
                bj = mask.data<bool>()[at] ? C(0) : kNegInf;
              } else {
                bj = static_cast<C>(mask.data<T>()[at]);
              }
            }
            if (causal && j > i) bj += kNegInf;
            bias[static_cast<size_t>(j)] = bj;
            bias_max = nan_max(bias_max, bj);
          }
          T* y_row = y + yl.at(b, h, i);
          if (bias_max == kNegInf) {
            for (int64_t d = 0; d < sh.v_head_dim; ++d) y_row[d] = T(C(0));
            continue;
          }
          // Scores, softcapped before the bias so that -inf stays -inf.
          const T* q_row = q + ql.at(b, h, i);
          C row_max = kNegInf;
          for (int64_t j = 0; j < sh.kv_len; ++j) {
            const T* k_row = k + kl.at(b, kv_h, j);
            C s = 0;
            for (int64_t d = 0; d < sh.head_dim; ++d) {
              s +=
                  (static_cast<C>(q_row[d]) * root_scale) * (static_cast<C>(k_row[d]) * root_scale);
            }
            if (softcap > 0) s = static_cast<C>(softcap) * std::tanh(s / static_cast<C>(softcap));
            s += bias[static_cast<size_t>(j)];
            score[static_cast<size_t>(j)] = s;
            row_max = nan_max(row_max, s);
          }
          // Softmax as ONNX's reference does it: a row whose every score is -inf gives zeros.
          const C shift = row_max == kNegInf ? C(0) : row_max;
          C sum = 0;
          for (C& s : score) {
            s = std::exp(s - shift);
            sum += s;
          }
          if (sum == C(0)) sum = 1;
          for (C& s : score) s /= sum;
          for (int64_t d = 0; d < sh.v_head_dim; ++d) {
            C acc = 0;
            for (int64_t j = 0; j < sh.kv_len; ++j) {
              acc += score[static_cast<size_t>(j)] * static_cast<C>(v[vl.at(b, kv_h, j) + d]);
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
