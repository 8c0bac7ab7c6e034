#include "passes/remove_no_ops.h"

#include <vector>

#include "passes/compact_graph.h"

namespace gf {

namespace {

bool is_no_op(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.size() != 1) return false;
  if (n.op == Op::kIdentity) return true;
  if (n.op != Op::kCast) return false;
  return g.value(n.inputs[0]).type.dtype == g.value(n.outputs[0]).type.dtype;
}

}  // namespace

int remove_no_ops(Graph& g) {
  std::vector<bool> is_output(g.num_values(), false);
  for (ValueId v : g.outputs()) is_output[static_cast<size_t>(v)] = true;
  std::vector<ValueId> rep(g.num_values());
  for (size_t i = 0; i < rep.size(); ++i) rep[i] = static_cast<ValueId>(i);
  int removed = 0;
  // In topological order: a chain of no-ops maps to its first input.
  for (NodeId id : g.topological_order()) {
    Node& n = g.node(id);
    for (ValueId& v : n.inputs) {
      if (v != kNoValue) v = rep[static_cast<size_t>(v)];
    }
    if (!is_no_op(g, n) || is_output[static_cast<size_t>(n.outputs[0])]) continue;
    rep[static_cast<size_t>(n.outputs[0])] = n.inputs[0];
    ++removed;
  }
  if (removed > 0) remove_dead_nodes(g);
  return removed;
}

}  // namespace gf
