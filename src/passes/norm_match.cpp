#include "passes/norm_match.h"

#include <cmath>

namespace gf {

bool is_square_of(const Graph& g, const Node& n, ValueId d) {
  if (n.op == Op::kMul) return n.inputs[0] == d && n.inputs[1] == d;
  return n.op == Op::kPow && n.inputs[0] == d && is_constant_near(g, n.inputs[1], 2.0);
}

std::optional<ScaledByRsqrt> match_scaled_by_rsqrt(const Graph& g, const ValueUses& uses,
                                                   ValueId var, ValueId d) {
  ScaledByRsqrt m;
  const NodeId add = sole_reader_of(g, uses, var, Op::kAdd);
  if (add == kNoNode) return std::nullopt;
  const std::optional<double> eps = scalar_constant(g, other_input(g.node(add), var));
  if (!eps || !(*eps >= 0.0) || !std::isfinite(*eps)) return std::nullopt;
  m.epsilon = static_cast<float>(*eps);
  const NodeId sqrt = sole_reader_of(g, uses, g.node(add).outputs[0], Op::kSqrt);
  if (sqrt == kNoNode) return std::nullopt;
  m.nodes = {add, sqrt};
  const ValueId sd = g.node(sqrt).outputs[0];
  const NodeId div = sole_reader_of(g, uses, sd, Op::kDiv);
  NodeId recip = sole_reader_of(g, uses, sd, Op::kReciprocal);
  if (div != kNoNode) {
    const Node& n = g.node(div);
    if (n.inputs[1] != sd) return std::nullopt;
    if (n.inputs[0] == d) {
      m.nodes.push_back(div);
      m.result = n.outputs[0];
      return m;
    }
    // Div(1, sqrt) is Reciprocal(sqrt), bit for bit (TorchScript's RMSNorm).
    const std::optional<double> one = scalar_constant(g, n.inputs[0]);
    if (!one || *one != 1.0) return std::nullopt;
    recip = div;
  }
  if (recip == kNoNode) return std::nullopt;
  const ValueId r = g.node(recip).outputs[0];
  const NodeId mul = sole_reader_of(g, uses, r, Op::kMul);
  if (mul == kNoNode || other_input(g.node(mul), r) != d) return std::nullopt;
  m.nodes.push_back(recip);
  m.nodes.push_back(mul);
  m.result = g.node(mul).outputs[0];
  return m;
}

std::optional<AffineTail> match_affine_tail(const Graph& g, const ValueUses& uses, ValueId n) {
  AffineTail t;
  t.mul = sole_reader_of(g, uses, n, Op::kMul);
  if (t.mul == kNoNode) return std::nullopt;
  t.scale = other_input(g.node(t.mul), n);
  if (t.scale == n) return std::nullopt;  // n * n is no scale
  const ValueId scaled = g.node(t.mul).outputs[0];
  t.add = sole_reader_of(g, uses, scaled, Op::kAdd);
  if (t.add != kNoNode) {
    t.bias = other_input(g.node(t.add), scaled);
    if (t.bias == scaled) t.add = kNoNode, t.bias = kNoValue;
  }
  return t;
}

}  // namespace gf
