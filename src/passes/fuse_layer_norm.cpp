#include "passes/fuse_layer_norm.h"

#include <optional>
#include <vector>

#include "passes/norm_match.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

struct LayerNormMatch {
  std::vector<NodeId> nodes;
  ValueId x = kNoValue, scale = kNoValue, bias = kNoValue, result = kNoValue;
  float epsilon = 0.0f;
};

// The variance half of the pattern: d's readers are the square and the normalization only.
std::optional<LayerNormMatch> match_from_mean(const Graph& g, const ValueUses& uses,
                                              NodeId mean_id) {
  const Node& mean = g.node(mean_id);
  if (!is_mean_over_last_axis(g, mean)) return std::nullopt;
  LayerNormMatch m;
  m.x = mean.inputs[0];
  const NodeId sub = sole_reader_of(g, uses, mean.outputs[0], Op::kSub);
  if (sub == kNoNode || g.node(sub).inputs[0] != m.x || g.node(sub).inputs[1] != mean.outputs[0]) {
    return std::nullopt;
  }
  const ValueId d = g.node(sub).outputs[0];
  NodeId square = kNoNode;
  for (NodeId r : uses.readers(d)) {
    if (is_square_of(g, g.node(r), d)) square = r;
  }
  if (square == kNoNode) return std::nullopt;
  const NodeId var = sole_reader_of(g, uses, g.node(square).outputs[0], Op::kReduceMean);
  if (var == kNoNode || !is_mean_over_last_axis(g, g.node(var))) return std::nullopt;
  const auto rsqrt = match_scaled_by_rsqrt(g, uses, g.node(var).outputs[0], d);
  if (!rsqrt) return std::nullopt;
  m.nodes = {mean_id, sub, square, var};
  m.nodes.insert(m.nodes.end(), rsqrt->nodes.begin(), rsqrt->nodes.end());
  if (!uses.only_read_by(d, m.nodes)) return std::nullopt;
  m.epsilon = rsqrt->epsilon;

  const auto tail = match_affine_tail(g, uses, rsqrt->result);
  if (!tail) return std::nullopt;
  m.nodes.push_back(tail->mul);
  m.scale = tail->scale;
  m.result = g.node(tail->mul).outputs[0];
  if (tail->add != kNoNode) {
    m.nodes.push_back(tail->add);
    m.bias = tail->bias;
    m.result = g.node(tail->add).outputs[0];
  }
  return m;
}

// Fuses the match rooted at `mean_id` unless it overlaps one fused earlier in this sweep.
bool fuse_at(Graph& g, const ValueUses& uses, NodeId mean_id, ClaimedNodes& claimed) {
  std::optional<LayerNormMatch> m = match_from_mean(g, uses, mean_id);
  if (!m) return false;
  const Attributes attrs{{"axis", int64_t{-1}}, {"epsilon", m->epsilon}};
  const TensorType& x_type = g.value(m->x).type;
  auto fits = [&](const std::vector<ValueId>& inputs, ValueId result) {
    const auto types = try_infer(g, Op::kLayerNormalization, inputs, attrs);
    return types && types->front() == x_type && g.value(result).type == x_type;
  };
  std::vector<ValueId> inputs{m->x, m->scale};
  if (m->bias != kNoValue) inputs.push_back(m->bias);
  if (!fits(inputs, m->result)) {
    if (m->bias == kNoValue) return false;
    // The Add was no per-feature bias (a residual, say): fuse up to the scale only.
    m->nodes.pop_back();
    m->result = g.node(m->nodes.back()).outputs[0];
    inputs.pop_back();
    if (!fits(inputs, m->result)) return false;
  }
  for (NodeId n : m->nodes) {
    const ValueId out = g.node(n).outputs[0];
    if (out != m->result && !uses.only_read_by(out, m->nodes)) return false;
  }
  if (!claimed.claim(m->nodes)) return false;
  replace_producer(g, m->result, Op::kLayerNormalization,
                   fused_name(g, g.node(mean_id), "/fused_layernorm"), inputs, attrs);
  return true;
}

}  // namespace

int fuse_layer_norms(Graph& g) {
  return rewrite_sweep(
      g, [](Op op) { return op == Op::kReduceMean; }, fuse_at);
}

}  // namespace gf
