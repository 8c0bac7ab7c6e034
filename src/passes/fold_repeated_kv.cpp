#include "passes/fold_repeated_kv.h"

#include <optional>
#include <vector>

#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

bool same_known(const Dim& a, const Dim& b) { return (a.is_static() || a.is_symbolic()) && a == b; }

struct Ungrouped {
  ValueId source = kNoValue;  // X, [B, Hkv, S, D]
  int64_t group = 0;          // G
};

// X when `v` is Reshape(Expand(Unsqueeze(X, [2]))) with the shapes above; nullopt otherwise.
std::optional<Ungrouped> repeated_source(const Graph& g, ValueId v) {
  const Node* reshape = producer_if(g, v, Op::kReshape);
  if (reshape == nullptr) return std::nullopt;
  const Node* expand = producer_if(g, reshape->inputs[0], Op::kExpand);
  if (expand == nullptr) return std::nullopt;
  const Node* unsqueeze = producer_if(g, expand->inputs[0], Op::kUnsqueeze);
  if (unsqueeze == nullptr) return std::nullopt;
  const ValueId x = unsqueeze->inputs[0];
  const Shape& xs = g.value(x).type.shape;
  const Shape& us = g.value(unsqueeze->outputs[0]).type.shape;
  const Shape& es = g.value(expand->outputs[0]).type.shape;
  const Shape& rs = g.value(v).type.shape;
  if (xs.rank() != 4 || us.rank() != 5 || es.rank() != 5 || rs.rank() != 4) return std::nullopt;
  // The unsqueezed axis is 2 (a size-1 dim between heads and positions).
  if (!(us[2] == Dim(1)) || !same_known(us[0], xs[0]) || !same_known(us[1], xs[1]) ||
      !same_known(us[3], xs[2]) || !same_known(us[4], xs[3])) {
    return std::nullopt;
  }
  // Expand repeats only that axis, G times.
  if (!es[2].is_static() || es[2].value() < 1 || !same_known(es[0], xs[0]) ||
      !same_known(es[1], xs[1]) || !same_known(es[3], xs[2]) || !same_known(es[4], xs[3])) {
    return std::nullopt;
  }
  // Reshape merges heads and groups, head-major.
  if (!xs[1].is_static() || !rs[1].is_static() || rs[1].value() != xs[1].value() * es[2].value() ||
      !same_known(rs[0], xs[0]) || !same_known(rs[2], xs[2]) || !same_known(rs[3], xs[3])) {
    return std::nullopt;
  }
  if (g.value(x).type.dtype != g.value(v).type.dtype) return std::nullopt;
  return Ungrouped{x, es[2].value()};
}

}  // namespace

int fold_repeated_kv(Graph& g) {
  int folded = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    Node& n = g.node(static_cast<NodeId>(i));
    if (n.op != Op::kAttention || n.inputs.size() < 3) continue;
    if (g.value(n.inputs[0]).type.shape.rank() != 4) continue;
    const std::optional<Ungrouped> k = repeated_source(g, n.inputs[1]);
    const std::optional<Ungrouped> v = repeated_source(g, n.inputs[2]);
    if (!k || !v || k->group != v->group || k->group < 2) continue;
    std::vector<ValueId> inputs = n.inputs;
    inputs[1] = k->source;
    inputs[2] = v->source;
    // The node must still infer the same output (heads divide, K and V agree).
    const auto types = try_infer(g, n.op, inputs, n.attrs, n.outputs.size());
    if (!types || types->at(0) != g.value(n.outputs[0]).type) continue;
    n.inputs = inputs;
    ++folded;
  }
  if (folded > 0) remove_dead_nodes(g);
  return folded;
}

}  // namespace gf
