#include "passes/fuse_rms_norm.h"

#include <optional>
#include <vector>

#include "passes/norm_match.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

// Fuses the match whose ReduceMean is `mean_id` unless it overlaps one fused earlier.
bool fuse_at(Graph& g, const ValueUses& uses, NodeId mean_id, ClaimedNodes& claimed) {
  const Node& mean = g.node(mean_id);
  if (!is_mean_over_last_axis(g, mean)) return false;
  const NodeId square = g.value(mean.inputs[0]).producer;
  if (square == kNoNode) return false;
  const ValueId x = g.node(square).inputs[0];
  if (!is_square_of(g, g.node(square), x)) return false;
  const auto rsqrt = match_scaled_by_rsqrt(g, uses, mean.outputs[0], x);
  if (!rsqrt) return false;
  const auto tail = match_affine_tail(g, uses, rsqrt->result);
  if (!tail) return false;

  std::vector<NodeId> nodes{square, mean_id};
  nodes.insert(nodes.end(), rsqrt->nodes.begin(), rsqrt->nodes.end());
  nodes.push_back(tail->mul);
  const ValueId result = g.node(tail->mul).outputs[0];
  for (NodeId n : nodes) {
    const ValueId out = g.node(n).outputs[0];
    if (out != result && !uses.only_read_by(out, nodes)) return false;
  }
  const Attributes attrs{{"axis", int64_t{-1}}, {"epsilon", rsqrt->epsilon}};
  const std::vector<ValueId> inputs{x, tail->scale};
  const TensorType& x_type = g.value(x).type;
  const auto types = try_infer(g, Op::kRMSNormalization, inputs, attrs);
  if (!types || types->front() != x_type || g.value(result).type != x_type) return false;
  if (!claimed.claim(nodes)) return false;
  replace_producer(g, result, Op::kRMSNormalization,
                   fused_name(g, g.node(square), "/fused_rmsnorm"), inputs, attrs);
  return true;
}

}  // namespace

int fuse_rms_norms(Graph& g) {
  return rewrite_sweep(
      g, [](Op op) { return op == Op::kReduceMean; }, fuse_at);
}

}  // namespace gf
