// Structural checks of a graph; shape and dtype checks live in shape inference.
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw Error(ErrorCode::kInvalidGraph, msg); }

std::string arity_range(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  return std::to_string(lo) + (hi == kVariadic ? " or more" : " to " + std::to_string(hi));
}
}  // namespace

void verify_graph(const Graph& g) {
  const auto num_values = static_cast<ValueId>(g.num_values());
  auto valid = [&](ValueId v) { return v >= 0 && v < num_values; };
  std::vector<bool> is_input(g.num_values(), false);
  for (ValueId v : g.inputs()) {
    if (!valid(v)) fail("graph input id " + std::to_string(v) + " is invalid");
    const Value& val = g.value(v);
    if (val.producer != kNoNode || val.is_constant()) {
      fail("graph input '" + val.name + "' is also produced by a node or a constant");
    }
    is_input[static_cast<size_t>(v)] = true;
  }
  std::vector<NodeId> produced_by(g.num_values(), kNoNode);
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    const OpInfo& info = op_info(n.op);
    const auto ins = static_cast<int>(n.inputs.size());
    const auto outs = static_cast<int>(n.outputs.size());
    if (ins < info.min_inputs || ins > info.max_inputs) {
      fail(describe_node(g, n) + ": takes " + arity_range(info.min_inputs, info.max_inputs) +
           " inputs, got " + std::to_string(ins));
    }
    if (outs < info.min_outputs || outs > info.max_outputs) {
      fail("node '" + n.name + "' (" + std::string(info.name) + "): has " +
           arity_range(info.min_outputs, info.max_outputs) + " outputs, got " +
           std::to_string(outs));
    }
    for (int k = 0; k < ins; ++k) {
      ValueId v = n.inputs[static_cast<size_t>(k)];
      if (v == kNoValue) {
        if (k < info.min_inputs) {
          fail("node '" + n.name + "' (" + std::string(info.name) + "): required input " +
               std::to_string(k) + " is missing");
        }
        continue;
      }
      if (!valid(v)) fail("node '" + n.name + "' reads an invalid value id");
      const Value& val = g.value(v);
      if (val.producer == kNoNode && !val.is_constant() && !is_input[static_cast<size_t>(v)]) {
        fail("node '" + n.name + "' (" + std::string(info.name) + ") reads '" + val.name +
             "', which is neither a graph input, a constant nor a node output");
      }
    }
    for (ValueId v : n.outputs) {
      if (!valid(v)) fail("node '" + n.name + "' writes an invalid value id");
      if (produced_by[static_cast<size_t>(v)] != kNoNode || is_input[static_cast<size_t>(v)] ||
          g.value(v).is_constant()) {
        fail("value '" + g.value(v).name + "' is written by more than one source");
      }
      if (g.value(v).producer != static_cast<NodeId>(i)) {
        fail("value '" + g.value(v).name + "' does not name node '" + n.name + "' as producer");
      }
      produced_by[static_cast<size_t>(v)] = static_cast<NodeId>(i);
    }
  }
  for (ValueId v : g.outputs()) {
    if (!valid(v)) fail("graph output id " + std::to_string(v) + " is invalid");
    const Value& val = g.value(v);
    if (val.producer == kNoNode && !val.is_constant() && !is_input[static_cast<size_t>(v)]) {
      fail("graph output '" + val.name + "' is produced by nothing");
    }
  }
  (void)g.topological_order();  // throws on a cycle
}

}  // namespace gf
