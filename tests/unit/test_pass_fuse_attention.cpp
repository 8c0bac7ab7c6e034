// Attention recognition: the score/softmax/value chains of GPT-2, BERT and the dynamo exporter.
#include <cmath>
#include <limits>

#include "passes/fuse_attention.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

constexpr float kLowest = std::numeric_limits<float>::lowest();
constexpr float kInf = std::numeric_limits<float>::infinity();

enum class MaskKind {
  kNone,
  kBertWhere,        // Add(s, Where(attention_mask [B,1,1,L], 0, lowest)), mask at run time
  kCausalConstant,   // Add(s, constant [1,1,S,L] causal triangle of 0 / lowest)
  kCausalWhereInf,   // Where(constant causal bool, s, -inf)
  kRunTimeAdditive,  // near miss: Add(s, any run-time float mask)
  kRunTimeWhereInf,  // near miss: Where(run-time bool, s, -inf)
  kKeyBroadcast,     // near miss: an additive mask [B,1,S,1] broadcast over the keys
  kDeadRow,          // near miss: a constant mask with a row of -inf only
  kZeroConstant,     // Add(s, constant zeros [1,1,S,L]) (the dynamo exporter's unmasked SDPA)
};

struct AttnForm {
  MaskKind mask = MaskKind::kNone;
  bool keys_bshd = false;   // K as [B,L,H,D] with Transpose perm [0,2,3,1] (BERT, GPT-2)
  bool divide = false;      // s / sqrt(D) instead of s * (1 / sqrt(D))
  bool split_scale = false; // Q and K^T each scaled by D^-1/4 before the MatMul (dynamo SDPA)
  float scale = 0.35355339f;
  int64_t softmax_axis = -1;
  bool leak_scores = false; // near miss: the scores are a graph output too
  int64_t q_len = 4, kv_len = 4;
};

Tensor causal(DType dtype, int64_t s, int64_t l, double keep, double drop) {
  Tensor t(DType::kF64, {1, 1, s, l});
  for (int64_t i = 0; i < s; ++i) {
    for (int64_t j = 0; j < l; ++j) t.data<double>()[i * l + j] = j <= i ? keep : drop;
  }
  return testing::to_dtype(t, dtype);
}

Graph attention_graph(const AttnForm& f) {
  const int64_t B = 2, H = 2, S = f.q_len, L = f.kv_len, D = 8;
  GraphBuilder b;
  ValueId q = b.input("q", DType::kF32, {B, H, S, D});
  ValueId kt;
  if (f.keys_bshd) {
    kt = b.transpose(b.input("k", DType::kF32, {B, L, H, D}), {0, 2, 3, 1});
  } else {
    kt = b.transpose(b.input("k", DType::kF32, {B, H, L, D}), {0, 1, 3, 2});
  }
  ValueId v = b.input("v", DType::kF32, {B, H, L, 3});
  ValueId s;
  if (f.split_scale) {
    ValueId root = b.constant_scalar(std::sqrt(f.scale), DType::kF32);
    ValueId q_scaled = b.op1(Op::kMul, {q, root}, {}, "attn/q_scale");
    s = b.op1(Op::kMatMul, {q_scaled, b.mul(kt, root)}, {}, "attn/qk");
  } else {
    s = b.op1(Op::kMatMul, {q, kt}, {}, "attn/qk");
    s = f.divide ? b.binary(Op::kDiv, s, b.constant_scalar(1.0f / f.scale, DType::kF32))
                 : b.mul(s, b.constant_scalar(f.scale, DType::kF32));
  }
  const ValueId scores = s;
  switch (f.mask) {
    case MaskKind::kNone: break;
    case MaskKind::kBertWhere: {
      ValueId keep = b.input("attention_mask", DType::kBool, {B, 1, 1, L});
      s = b.add(s, b.op1(Op::kWhere, {keep, b.constant_scalar(0.0f, DType::kF32),
                                      b.constant_scalar(kLowest, DType::kF32)}));
      break;
    }
    case MaskKind::kCausalConstant:
      s = b.add(s, b.constant("causal", causal(DType::kF32, S, L, 0.0, kLowest)));
      break;
    case MaskKind::kCausalWhereInf:
      s = b.op1(Op::kWhere, {b.constant("causal", causal(DType::kBool, S, L, 1, 0)), s,
                             b.constant_scalar(-kInf, DType::kF32)});
      break;
    case MaskKind::kRunTimeAdditive:
      s = b.add(s, b.input("mask", DType::kF32, {B, 1, S, L}));
      break;
    case MaskKind::kRunTimeWhereInf:
      s = b.op1(Op::kWhere, {b.input("keep", DType::kBool, {B, 1, 1, L}), s,
                             b.constant_scalar(-kInf, DType::kF32)});
      break;
    case MaskKind::kKeyBroadcast:
      s = b.add(s, b.constant("mask", random_tensor(DType::kF32, {B, 1, S, 1}, 3)));
      break;
    case MaskKind::kZeroConstant:
      s = b.add(s, b.constant("zeros", Tensor(DType::kF32, {1, 1, S, L})));
      break;
    case MaskKind::kDeadRow: {
      Tensor m = causal(DType::kF32, S, L, 0.0, -kInf);
      for (int64_t j = 0; j < L; ++j) m.data<float>()[j] = -kInf;  // query 0 sees nothing
      s = b.add(s, b.constant("mask", m));
      break;
    }
  }
  ValueId p = b.softmax(s, f.softmax_axis);
  b.output(b.matmul(p, v));
  if (f.leak_scores) b.output(scores);
  return b.build();
}

const Node& only_attention(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kAttention) return n;
  }
  throw Error(ErrorCode::kInvalidGraph, "no Attention node");
}

// Fuses, checks the structure, and compares with the original on random inputs (the
// attention mask input, when there is one, has whole rows of false too).
const Node& expect_fused(Graph& g, int inputs,
                         const std::string& name = "attn/qk/fused_attention") {
  const Graph original = g;
  EXPECT_EQ(fuse_attention(g), 1);
  EXPECT_EQ(count_ops(g, Op::kAttention), 1);
  EXPECT_EQ(count_ops(g, Op::kSoftmax), 0);
  EXPECT_EQ(count_ops(g, Op::kMatMul), 0);
  const Node& a = only_attention(g);
  EXPECT_EQ(a.name, name);
  EXPECT_EQ(static_cast<int>(a.inputs.size()), inputs);
  testing::expect_same_results(original, g, 1e-5, 1e-6);
  return a;
}

TEST(PassFuseAttention, BertFormWithRunTimeWhereMask) {
  Graph g = attention_graph({.mask = MaskKind::kBertWhere, .keys_bshd = true, .kv_len = 6});
  const Node a = expect_fused(g, 4);
  EXPECT_FLOAT_EQ(a.attrs.get_float("scale", 0), 0.35355339f);
  EXPECT_EQ(a.attrs.get_int("is_causal", 0), 0);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 1);  // K back to [B,H,L,D]
  EXPECT_EQ(count_ops(g, Op::kWhere), 1);      // the additive mask stays a Where
}

TEST(PassFuseAttention, AConstantMaskOfZerosIsDropped) {
  Graph g = attention_graph({.mask = MaskKind::kZeroConstant, .kv_len = 6});
  const Node a = expect_fused(g, 3);
  EXPECT_EQ(a.attrs.get_int("is_causal", 0), 0);
}

TEST(PassFuseAttention, Gpt2FormWithConstantCausalMaskBecomesIsCausal) {
  Graph g = attention_graph({.mask = MaskKind::kCausalConstant, .keys_bshd = true});
  const Node a = expect_fused(g, 3);
  EXPECT_EQ(a.attrs.get_int("is_causal", 0), 1);
}

TEST(PassFuseAttention, CausalTriangleWithMoreKeysThanQueries) {
  Graph g = attention_graph({.mask = MaskKind::kCausalConstant, .q_len = 3, .kv_len = 5});
  EXPECT_EQ(expect_fused(g, 3).attrs.get_int("is_causal", 0), 1);
}

TEST(PassFuseAttention, WhereWithMinusInfinityOverAConstantTriangle) {
  Graph g = attention_graph({.mask = MaskKind::kCausalWhereInf});
  EXPECT_EQ(expect_fused(g, 3).attrs.get_int("is_causal", 0), 1);
}

TEST(PassFuseAttention, UnmaskedDividedScores) {
  Graph g = attention_graph({.divide = true, .scale = 0.125f});
  const Node a = expect_fused(g, 3);
  EXPECT_FLOAT_EQ(a.attrs.get_float("scale", 0), 0.125f);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);  // K^T = Transpose(K, [0,1,3,2]) undone
}

TEST(PassFuseAttention, DynamoFormScalingQAndKSeparately) {
  Graph g = attention_graph({.split_scale = true, .scale = 0.25f});
  const Node a = expect_fused(g, 3, "attn/q_scale/fused_attention");
  EXPECT_NEAR(a.attrs.get_float("scale", 0), 0.25f, 1e-7);
}

TEST(PassFuseAttention, NearMissesAreLeftAlone) {
  const AttnForm misses[] = {
      {.mask = MaskKind::kRunTimeAdditive},  // could hold a row of -inf: NaN vs zeros
      {.mask = MaskKind::kRunTimeWhereInf},
      {.mask = MaskKind::kKeyBroadcast},
      {.mask = MaskKind::kDeadRow},
      {.scale = -0.5f},
      {.softmax_axis = 2},
      {.leak_scores = true},
  };
  for (const AttnForm& f : misses) {
    Graph g = attention_graph(f);
    const size_t nodes = g.num_nodes();
    EXPECT_EQ(fuse_attention(g), 0);
    EXPECT_EQ(g.num_nodes(), nodes);
    EXPECT_EQ(count_ops(g, Op::kAttention), 0);
  }
}

}  // namespace
}  // namespace gf
