#include "passes/fuse_gelu.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "passes/norm_match.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

constexpr double kSqrt2 = std::numbers::sqrt2;
constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kTanhCubeCoefficient = 0.044715;

struct GeluMatch {
  std::vector<NodeId> nodes;
  ValueId x = kNoValue;
  ValueId result = kNoValue;
};

// True when `n` is Mul(v, c) or Mul(c, v) with `c` a constant near the given value.
bool is_mul_by(const Graph& g, const Node& n, ValueId v, double c) {
  return n.op == Op::kMul && is_constant_near(g, other_input(n, v), c);
}

// x / sqrt(2) or x * (1 / sqrt(2)): returns x.
ValueId match_scaled_input(const Graph& g, const Node& n) {
  if (n.op == Op::kDiv && is_constant_near(g, n.inputs[1], kSqrt2)) return n.inputs[0];
  if (n.op != Op::kMul) return kNoValue;
  for (ValueId v : n.inputs) {
    if (is_constant_near(g, other_input(n, v), 1.0 / kSqrt2)) return v;
  }
  return kNoValue;
}

// x^3 as Pow(x, 3), x * (x * x) or (x * x) * x; appends its nodes.
bool match_cube(const Graph& g, const ValueUses& uses, const Node& n, ValueId x,
                std::vector<NodeId>& nodes) {
  if (n.op == Op::kPow) return n.inputs[0] == x && is_constant_near(g, n.inputs[1], 3.0);
  if (n.op != Op::kMul) return false;
  const ValueId sq = other_input(n, x);
  const NodeId sq_node = sq == kNoValue ? kNoNode : g.value(sq).producer;
  if (sq_node == kNoNode || !is_square_of(g, g.node(sq_node), x) ||
      g.node(sq_node).op != Op::kMul || uses.sole_reader(sq) == kNoNode) {
    return false;
  }
  nodes.push_back(sq_node);
  return true;
}

// sqrt(2/pi) * (x + 0.044715 * x^3), given the Tanh's input; returns x.
ValueId match_tanh_argument(const Graph& g, const ValueUses& uses, ValueId w,
                            std::vector<NodeId>& nodes) {
  const Node* scale = producer_if(g, w, Op::kMul);
  if (scale == nullptr) return kNoValue;
  for (ValueId inner : scale->inputs) {
    const Node* add = producer_if(g, inner, Op::kAdd);
    if (add == nullptr || !is_constant_near(g, other_input(*scale, inner), kSqrt2OverPi) ||
        uses.sole_reader(inner) == kNoNode) {
      continue;
    }
    for (ValueId x : add->inputs) {
      const ValueId term = other_input(*add, x);
      const Node* mul = producer_if(g, term, Op::kMul);
      if (term == x || mul == nullptr || uses.sole_reader(term) == kNoNode) continue;
      for (ValueId cube : mul->inputs) {
        if (!is_constant_near(g, other_input(*mul, cube), kTanhCubeCoefficient)) continue;
        const NodeId cube_node = g.value(cube).producer;
        std::vector<NodeId> found{g.value(w).producer, g.value(inner).producer,
                                  g.value(term).producer};
        if (cube_node == kNoNode || uses.sole_reader(cube) == kNoNode ||
            !match_cube(g, uses, g.node(cube_node), x, found)) {
          continue;
        }
        found.push_back(cube_node);
        nodes.insert(nodes.end(), found.begin(), found.end());
        return x;
      }
    }
  }
  return kNoValue;
}

// Climbs from `a` = 1 + erf(..) (or 1 + tanh(..)) through Mul nodes until x and 0.5 have both
// been multiplied in, each once, in any association; appends the Muls and returns the product.
ValueId match_half_x_product(const Graph& g, const ValueUses& uses, ValueId a, ValueId x,
                             std::vector<NodeId>& nodes) {
  bool have_x = false, have_half = false;
  ValueId cur = a;
  while (!have_x || !have_half) {
    const NodeId m = sole_reader_of(g, uses, cur, Op::kMul);
    if (m == kNoNode) return kNoValue;
    const ValueId other = other_input(g.node(m), cur);
    if (other == x && !have_x) {
      have_x = true;
    } else if (other != x && is_constant_near(g, other, 0.5) && !have_half) {
      have_half = true;
    } else if (const Node* xh = producer_if(g, other, Op::kMul);
               xh != nullptr && !have_x && !have_half && other != cur &&
               uses.sole_reader(other) == m && is_mul_by(g, *xh, x, 0.5)) {
      have_x = have_half = true;
      nodes.push_back(g.value(other).producer);
    } else {
      return kNoValue;
    }
    nodes.push_back(m);
    cur = g.node(m).outputs[0];
  }
  return cur;
}

// 1 + f(..), with f the Erf or Tanh node: returns the sum and appends the Add.
ValueId match_one_plus(const Graph& g, const ValueUses& uses, const Node& f,
                       std::vector<NodeId>& nodes) {
  const ValueId e = f.outputs[0];
  const NodeId add = sole_reader_of(g, uses, e, Op::kAdd);
  if (add == kNoNode || !is_constant_near(g, other_input(g.node(add), e), 1.0)) return kNoValue;
  nodes.push_back(add);
  return g.node(add).outputs[0];
}

std::optional<GeluMatch> match_at(const Graph& g, const ValueUses& uses, NodeId f_id) {
  const Node& f = g.node(f_id);
  GeluMatch m;
  if (f.op == Op::kErf) {
    const NodeId u = g.value(f.inputs[0]).producer;
    if (u == kNoNode || uses.sole_reader(f.inputs[0]) != f_id) return std::nullopt;
    m.x = match_scaled_input(g, g.node(u));
    m.nodes.push_back(u);
  } else {
    if (uses.sole_reader(f.inputs[0]) != f_id) return std::nullopt;
    m.x = match_tanh_argument(g, uses, f.inputs[0], m.nodes);
  }
  if (m.x == kNoValue) return std::nullopt;
  m.nodes.push_back(f_id);
  const ValueId a = match_one_plus(g, uses, f, m.nodes);
  if (a == kNoValue) return std::nullopt;
  m.result = match_half_x_product(g, uses, a, m.x, m.nodes);
  if (m.result == kNoValue) return std::nullopt;
  return m;
}

bool fuse_at(Graph& g, const ValueUses& uses, NodeId f_id, ClaimedNodes& claimed) {
  const std::optional<GeluMatch> m = match_at(g, uses, f_id);
  if (!m) return false;
  const bool tanh = g.node(f_id).op == Op::kTanh;
  const Attributes attrs{{"approximate", std::string(tanh ? "tanh" : "none")}};
  const TensorType& x_type = g.value(m->x).type;
  const auto types = try_infer(g, Op::kGelu, {m->x}, attrs);
  if (!types || types->front() != x_type || g.value(m->result).type != x_type) return false;
  for (NodeId n : m->nodes) {
    const ValueId out = g.node(n).outputs[0];
    if (out != m->result && !uses.only_read_by(out, m->nodes)) return false;
  }
  if (!claimed.claim(m->nodes)) return false;
  const NodeId first = *std::min_element(m->nodes.begin(), m->nodes.end());
  replace_producer(g, m->result, Op::kGelu, fused_name(g, g.node(first), "/fused_gelu"), {m->x},
                   attrs);
  return true;
}

}  // namespace

int fuse_gelus(Graph& g) {
  return rewrite_sweep(
      g, [](Op op) { return op == Op::kErf || op == Op::kTanh; }, fuse_at);
}

}  // namespace gf
