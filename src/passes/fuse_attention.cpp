#include "passes/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "passes/attention_mask.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

struct AttentionMatch {
  std::vector<NodeId> nodes;  // every node that disappears
  ValueId q = kNoValue, kt = kNoValue, v = kNoValue, result = kNoValue;
  ValueId scores = kNoValue;  // the scaled, unmasked scores
  NodeId mask_node = kNoNode;  // the Add or Where applying the mask, if any
  double scale = 1.0;
};

// Strips an optional Mul by a scalar constant from a MatMul operand (the dynamo exporter
// scales Q and K by sqrt(scale) each); returns the operand before it.
ValueId strip_scalar_mul(const Graph& g, const ValueUses& uses, ValueId v, NodeId reader,
                         AttentionMatch& m) {
  const Node* mul = producer_if(g, v, Op::kMul);
  if (mul == nullptr || uses.sole_reader(v) != reader) return v;
  for (ValueId x : mul->inputs) {
    const std::optional<double> c = scalar_constant(g, other_input(*mul, x));
    if (c && x != other_input(*mul, x) && g.value(x).type == g.value(v).type) {
      m.scale *= *c;
      m.nodes.push_back(g.value(v).producer);
      return x;
    }
  }
  return v;
}

// From the Softmax's input back to the QK MatMul, through the optional mask and scale.
bool match_scores(const Graph& g, const ValueUses& uses, ValueId s, AttentionMatch& m) {
  const NodeId p = g.value(s).producer;
  if (p == kNoNode) return false;
  const Node& n = g.node(p);
  if (n.op == Op::kMatMul) {
    m.nodes.push_back(p);
    m.q = strip_scalar_mul(g, uses, n.inputs[0], p, m);
    m.kt = strip_scalar_mul(g, uses, n.inputs[1], p, m);
    return true;
  }
  if (n.op == Op::kDiv || n.op == Op::kMul) {
    const bool div = n.op == Op::kDiv;
    for (size_t i = 0; i < (div ? 1 : 2); ++i) {
      const std::optional<double> c = scalar_constant(g, n.inputs[1 - i]);
      const Node* qk = producer_if(g, n.inputs[i], Op::kMatMul);
      if (!c || qk == nullptr || uses.sole_reader(n.inputs[i]) != p ||
          g.value(n.outputs[0]).type != g.value(n.inputs[i]).type) {
        continue;
      }
      m.scale *= div ? 1.0 / *c : *c;
      m.nodes.push_back(p);
      return match_scores(g, uses, n.inputs[i], m);
    }
  }
  return false;
}

// Q, K^T and V as [B,H,S,D], [B,H,D,L], [B,H,L,Dv] with batch and heads the same known dims.
bool shapes_fit(const Graph& g, const AttentionMatch& m) {
  const TensorType& q = g.value(m.q).type;
  const TensorType& kt = g.value(m.kt).type;
  const TensorType& v = g.value(m.v).type;
  if (q.shape.rank() != 4 || kt.shape.rank() != 4 || v.shape.rank() != 4) return false;
  if (q.dtype != kt.dtype || q.dtype != v.dtype) return false;
  for (size_t i = 0; i < 2; ++i) {
    const Dim& d = q.shape[i];
    if (!(d.is_static() || d.is_symbolic()) || kt.shape[i] != d || v.shape[i] != d) return false;
  }
  return true;
}

std::optional<AttentionMatch> match_at(const Graph& g, const ValueUses& uses, NodeId softmax) {
  const Node& sm = g.node(softmax);
  const ValueId s = sm.inputs[0];
  const auto rank = static_cast<int64_t>(g.value(s).type.shape.rank());
  const int64_t axis = sm.attrs.get_int("axis", -1);
  if (rank != 4 || (axis != -1 && axis != 3)) return std::nullopt;
  const NodeId out = sole_reader_of(g, uses, sm.outputs[0], Op::kMatMul);
  if (out == kNoNode || g.node(out).inputs[0] != sm.outputs[0] ||
      g.node(out).inputs[1] == sm.outputs[0]) {
    return std::nullopt;
  }
  AttentionMatch m;
  m.nodes = {softmax, out};
  m.v = g.node(out).inputs[1];
  m.result = g.node(out).outputs[0];
  if (uses.sole_reader(s) != softmax) return std::nullopt;

  const NodeId p = g.value(s).producer;
  if (p != kNoNode && (g.node(p).op == Op::kAdd || g.node(p).op == Op::kWhere)) {
    const Node& masker = g.node(p);
    const std::vector<ValueId> candidates =
        masker.op == Op::kWhere ? std::vector<ValueId>{masker.inputs[1]} : masker.inputs;
    for (ValueId cand : candidates) {
      AttentionMatch inner = m;
      inner.nodes.push_back(p);
      if (uses.sole_reader(cand) == p && match_scores(g, uses, cand, inner)) {
        inner.scores = cand;
        inner.mask_node = p;
        if (shapes_fit(g, inner)) return inner;
      }
    }
  }
  m.scores = s;
  if (!match_scores(g, uses, s, m) || !shapes_fit(g, m)) return std::nullopt;
  return m;
}

// K from K^T: undo a Transpose that swapped the last two dims, or add one.
ValueId untranspose(Graph& g, ValueId kt) {
  std::vector<int64_t> perm{0, 1, 3, 2};
  ValueId src = kt;
  if (const Node* t = producer_if(g, kt, Op::kTranspose); t != nullptr) {
    std::vector<int64_t> p = t->attrs.get_ints("perm", {3, 2, 1, 0});
    std::swap(p[2], p[3]);
    src = t->inputs[0];
    perm = p;
  }
  if (perm == std::vector<int64_t>{0, 1, 2, 3}) return src;
  return add_helper_node(g, Op::kTranspose, g.value(kt).name + "/untransposed", {src},
                         {{"perm", perm}});
}

bool fuse_at(Graph& g, const ValueUses& uses, NodeId softmax, ClaimedNodes& claimed) {
  std::optional<AttentionMatch> m = match_at(g, uses, softmax);
  if (!m) return false;
  // Attention multiplies Q and K by sqrt(scale) each: the same product for a positive scale.
  // The attribute is a float; an f64 graph's scale must survive that exactly.
  const auto scale = static_cast<float>(m->scale);
  if (!(m->scale > 0.0) || !std::isfinite(scale)) return false;
  if (g.value(m->q).type.dtype == DType::kF64 && static_cast<double>(scale) != m->scale) {
    return false;
  }
  for (NodeId n : m->nodes) {
    const ValueId out = g.node(n).outputs[0];
    if (out != m->result && !uses.only_read_by(out, m->nodes)) return false;
  }
  AttentionMask mask;
  if (m->mask_node != kNoNode) {
    const Node& masker = g.node(m->mask_node);
    const auto found = masker.op == Op::kAdd ? mask_from_add(g, masker, m->scores)
                                             : mask_from_where(g, m->mask_node, m->scores);
    if (!found) return false;
    mask = *found;
  }
  const ValueId k = untranspose(g, m->kt);
  std::vector<ValueId> inputs{m->q, k, m->v};
  if (mask.mask != kNoValue) inputs.push_back(mask.mask);
  Attributes attrs{{"scale", scale}};
  if (mask.is_causal) attrs.set("is_causal", int64_t{1});
  const auto types = try_infer(g, Op::kAttention, inputs, attrs);
  if (!types || types->front() != g.value(m->result).type) return false;
  if (!claimed.claim(m->nodes)) return false;
  const NodeId first = *std::min_element(m->nodes.begin(), m->nodes.end());
  replace_producer(g, m->result, Op::kAttention, fused_name(g, g.node(first), "/fused_attention"),
                   inputs, attrs);
  return true;
}

}  // namespace

int fuse_attention(Graph& g) {
  // A match rejected late may leave helper nodes (K's transpose, a mask) behind: the sweep
  // compacts them away.
  return rewrite_sweep(
      g, [](Op op) { return op == Op::kSoftmax; }, fuse_at);
}

}  // namespace gf
