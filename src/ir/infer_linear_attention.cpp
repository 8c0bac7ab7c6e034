// Shape inference for the fused Attention op (ONNX opset 23, the subset without a KV cache):
// Q [B, Hq, S, D], K [B, Hkv, L, D], V [B, Hkv, L, Dv] -> Y [B, Hq, S, Dv], or the packed 3-D
// form [B, S, H*D] with q_num_heads / kv_num_heads -> Y [B, S, Hq*Dv].
#include "ir/infer_linear_family.h"

namespace gf {

namespace {

bool static_mismatch(const Dim& a, const Dim& b) {
  return a.is_static() && b.is_static() && a.value() != b.value();
}

// `hidden` / `heads` when known and exact; fails if `hidden` does not split into `heads`.
Dim split_heads(const InferContext& ctx, const char* input, const Dim& hidden, int64_t heads) {
  if (!hidden.is_static()) return Dim::unknown();
  if (hidden.value() % heads != 0) {
    ctx.fail(std::string(input) + "'s hidden size " + hidden.to_string() + " does not split into " +
             std::to_string(heads) + " heads");
  }
  return Dim(hidden.value() / heads);
}

int64_t required_heads(const InferContext& ctx, const char* name) {
  if (!ctx.attrs().has(name)) {
    ctx.fail(std::string("3-D inputs need attribute '") + name + "'", ErrorCode::kInvalidGraph);
  }
  const int64_t h = attr_int(ctx, name, 0);
  if (h < 1) {
    ctx.fail(std::string("attribute '") + name + "' must be >= 1, got " + std::to_string(h),
             ErrorCode::kInvalidGraph);
  }
  return h;
}

struct AttentionDims {
  Dim batch, q_heads, kv_heads, q_len, kv_len, head_dim, v_head_dim;
};

AttentionDims read_dims(const InferContext& ctx) {
  const Shape& q = ctx.shape(0);
  const Shape& k = ctx.shape(1);
  const Shape& v = ctx.shape(2);
  AttentionDims d;
  if (q.rank() == 4) {
    d = {q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
    // Optional on 4-D inputs, but then they must describe them.
    for (const auto& [name, dim] :
         {std::pair{"q_num_heads", d.q_heads}, std::pair{"kv_num_heads", d.kv_heads}}) {
      const int64_t h = attr_int(ctx, name, -1);
      if (ctx.attrs().has(name) && (h < 1 || static_mismatch(Dim(h), dim))) {
        ctx.fail(std::string("attribute '") + name + "'=" + std::to_string(h) +
                     " contradicts the 4-D inputs' " + dim.to_string() + " heads",
                 ErrorCode::kInvalidGraph);
      }
    }
    if (static_mismatch(k[1], v[1])) {
      ctx.fail("K has " + k[1].to_string() + " heads but V has " + v[1].to_string());
    }
    if (static_mismatch(q[3], k[3])) {
      ctx.fail("Q's head size " + q[3].to_string() + " differs from K's " + k[3].to_string());
    }
  } else {
    const int64_t hq = required_heads(ctx, "q_num_heads");
    const int64_t hkv = required_heads(ctx, "kv_num_heads");
    d = {q[0],
         Dim(hq),
         Dim(hkv),
         q[1],
         k[1],
         split_heads(ctx, "Q", q[2], hq),
         split_heads(ctx, "V", v[2], hkv)};
    const Dim dk = split_heads(ctx, "K", k[2], hkv);
    if (static_mismatch(d.head_dim, dk)) {
      ctx.fail("Q's head size " + d.head_dim.to_string() + " differs from K's " + dk.to_string());
    }
  }
  const size_t seq_axis = q.rank() == 4 ? 2 : 1;
  if (static_mismatch(k[seq_axis], v[seq_axis])) {
    ctx.fail("K has " + k[seq_axis].to_string() + " positions but V has " +
             v[seq_axis].to_string());
  }
  if (static_mismatch(q[0], k[0]) || static_mismatch(q[0], v[0])) {
    ctx.fail("Q, K and V must have the same batch size");
  }
  if (d.q_heads.is_static() && d.kv_heads.is_static() &&
      (d.kv_heads.value() == 0 || d.q_heads.value() % d.kv_heads.value() != 0)) {
    ctx.fail("Q's " + d.q_heads.to_string() + " heads are not a multiple of K/V's " +
             d.kv_heads.to_string());
  }
  return d;
}

// attn_mask: bool (true = attend) or Q's dtype (added to the scores); broadcast to
// [B, Hq, S, L] except its last dim, which ONNX pads (with false / -inf) when shorter than L.
void check_mask(const InferContext& ctx, const AttentionDims& d) {
  if (ctx.dtype(3) != DType::kBool && ctx.dtype(3) != ctx.dtype(0)) {
    ctx.fail("attn_mask must be bool or Q's dtype " + std::string(dtype_name(ctx.dtype(0))) +
             ", got " + std::string(dtype_name(ctx.dtype(3))));
  }
  const Shape& m = ctx.shape(3);
  if (m.rank() < 1 || m.rank() > 4) {
    ctx.fail("attn_mask must have rank 1 to 4, got " + m.to_string());
  }
  const Dim& last = m[m.rank() - 1];
  if (last.is_static() && d.kv_len.is_static() && last.value() > d.kv_len.value()) {
    ctx.fail("attn_mask " + m.to_string() + " covers more than the " + d.kv_len.to_string() +
             " key positions");
  }
  const Dim target[3] = {d.batch, d.q_heads, d.q_len};
  for (size_t i = 0; i + 1 < m.rank(); ++i) {
    const Dim& md = m[i];
    const Dim& td = target[3 - (m.rank() - 1) + i];
    if (md.is_static() && md.value() != 1 && static_mismatch(md, td)) {
      ctx.fail("attn_mask " + m.to_string() + " does not broadcast to [" + d.batch.to_string() +
               "," + d.q_heads.to_string() + "," + d.q_len.to_string() + "," +
               d.kv_len.to_string() + "]");
    }
  }
}

std::vector<TensorType> infer_attention(InferContext& ctx) {
  ctx.expect_float(0);
  ctx.expect_same_dtype(0, 1);
  if (ctx.dtype(2) != ctx.dtype(0)) {
    ctx.fail("V's dtype must equal Q's", ErrorCode::kUnsupported);
  }
  const int64_t mode = attr_int(ctx, "qk_matmul_output_mode", 0);
  if (mode != 0) {
    ctx.fail("qk_matmul_output_mode=" + std::to_string(mode) + " is not supported (only 0)",
             ErrorCode::kUnsupported);
  }
  attr_flag(ctx, "is_causal", false);
  attr_float(ctx, "softcap", 0.0f);
  attr_int(ctx, "softmax_precision", 0);  // ignored: scores are computed in float or double
  if (ctx.attrs().has("scale")) {
    const float scale = attr_float(ctx, "scale", 0.0f);
    // ONNX multiplies Q and K by sqrt(scale) each, which has no meaning for a negative scale.
    if (!(scale >= 0.0f)) {
      ctx.fail("scale " + std::to_string(scale) + " is not supported (must be >= 0)",
               ErrorCode::kUnsupported);
    }
  }
  const size_t r = ctx.rank(0);
  if (r != 3 && r != 4) ctx.fail("Q must have rank 3 or 4, got " + ctx.shape(0).to_string());
  if (ctx.rank(1) != r || ctx.rank(2) != r) ctx.fail("Q, K and V must have the same rank");
  const AttentionDims d = read_dims(ctx);
  if (ctx.has_input(3)) check_mask(ctx, d);
  if (r == 4) return {TensorType{ctx.dtype(0), Shape{d.batch, d.q_heads, d.q_len, d.v_head_dim}}};
  const Dim hidden =
      d.v_head_dim.is_static() ? Dim(d.q_heads.value() * d.v_head_dim.value()) : Dim::unknown();
  return {TensorType{ctx.dtype(0), Shape{d.batch, d.q_len, hidden}}};
}

}  // namespace

void register_attention_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kAttention)] = infer_attention;
}

}  // namespace gf
