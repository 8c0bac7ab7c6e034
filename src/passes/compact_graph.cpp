#include "passes/compact_graph.h"

#include <vector>

namespace gf {

Graph compact_graph(const Graph& g, const std::unordered_map<ValueId, Tensor>& replacements) {
  // Mark live values backwards from the outputs; a replaced value stops the walk.
  std::vector<bool> live_value(g.num_values(), false), live_node(g.num_nodes(), false);
  std::vector<ValueId> stack(g.outputs().begin(), g.outputs().end());
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    if (live_value[static_cast<size_t>(v)]) continue;
    live_value[static_cast<size_t>(v)] = true;
    const NodeId p = g.value(v).producer;
    if (p == kNoNode || replacements.count(v) || live_node[static_cast<size_t>(p)]) continue;
    live_node[static_cast<size_t>(p)] = true;
    for (ValueId in : g.node(p).inputs)
      if (in != kNoValue) stack.push_back(in);
  }

  Graph out;
  out.name = g.name;
  std::vector<ValueId> remap(g.num_values(), kNoValue);
  for (ValueId v : g.inputs()) remap[static_cast<size_t>(v)] = out.add_input(g.value(v).name, g.value(v).type);
  for (size_t i = 0; i < g.num_values(); ++i) {
    const auto v = static_cast<ValueId>(i);
    if (!live_value[i]) continue;
    auto r = replacements.find(v);
    if (r != replacements.end()) {
      remap[i] = out.add_constant(g.value(v).name, r->second);
    } else if (g.value(v).is_constant()) {
      remap[i] = out.add_constant(g.value(v).name, g.value(v).constant);
    }
  }
  for (NodeId id : g.topological_order()) {
    if (!live_node[static_cast<size_t>(id)]) continue;
    const Node& n = g.node(id);
    std::vector<ValueId> inputs;
    for (ValueId v : n.inputs) inputs.push_back(v == kNoValue ? kNoValue : remap[static_cast<size_t>(v)]);
    std::vector<std::string> names;
    std::vector<TensorType> types;
    for (ValueId v : n.outputs) {
      names.push_back(g.value(v).name);
      types.push_back(g.value(v).type);
    }
    const NodeId nid = out.add_node(n.op, n.name, std::move(inputs), names, n.attrs, std::move(types));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      remap[static_cast<size_t>(n.outputs[k])] = out.node(nid).outputs[k];
    }
  }
  for (ValueId v : g.outputs()) out.add_output(remap[static_cast<size_t>(v)]);
  return out;
}

void remove_dead_nodes(Graph& g) { g = compact_graph(g); }

}  // namespace gf
