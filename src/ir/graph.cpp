#include "graphfuse/graph.h"

#include <algorithm>

namespace gf {

ValueId Graph::new_value(const std::string& name, TensorType type) {
  if (name.empty()) throw Error(ErrorCode::kInvalidGraph, "a value needs a name");
  if (value_by_name_.count(name)) {
    throw Error(ErrorCode::kInvalidGraph, "value name '" + name + "' is used twice");
  }
  const auto id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{name, std::move(type), kNoNode, Tensor()});
  value_by_name_.emplace(name, id);
  return id;
}

ValueId Graph::add_input(const std::string& name, TensorType type) {
  ValueId v = new_value(name, std::move(type));
  inputs_.push_back(v);
  return v;
}

ValueId Graph::add_constant(const std::string& name, Tensor data) {
  if (!data.defined()) {
    throw Error(ErrorCode::kInvalidGraph, "constant '" + name + "' has no data");
  }
  ValueId v = new_value(name, TensorType{data.dtype(), Shape::from_static(data.dims())});
  values_[static_cast<size_t>(v)].constant = std::move(data);
  return v;
}

NodeId Graph::add_node(Op op, const std::string& name, std::vector<ValueId> inputs,
                       const std::vector<std::string>& output_names, Attributes attrs,
                       std::vector<TensorType> output_types) {
  const std::string node_name = name.empty() ? unique_node_name(std::string(op_name(op))) : name;
  if (node_by_name_.count(node_name)) {
    throw Error(ErrorCode::kInvalidGraph, "node name '" + node_name + "' is used twice");
  }
  for (ValueId v : inputs) {
    if (v != kNoValue && (v < 0 || static_cast<size_t>(v) >= values_.size())) {
      throw Error(ErrorCode::kInvalidGraph,
                  "node '" + node_name + "' (" + std::string(op_name(op)) +
                      ") reads value id " + std::to_string(v) + ", which does not exist");
    }
  }
  const auto id = static_cast<NodeId>(nodes_.size());
  Node node{op, node_name, std::move(inputs), {}, std::move(attrs)};
  for (size_t i = 0; i < output_names.size(); ++i) {
    TensorType t = i < output_types.size() ? output_types[i] : TensorType{};
    ValueId v = new_value(output_names[i], std::move(t));
    values_[static_cast<size_t>(v)].producer = id;
    node.outputs.push_back(v);
  }
  nodes_.push_back(std::move(node));
  node_by_name_.emplace(node_name, id);
  return id;
}

void Graph::add_output(ValueId v) {
  if (v < 0 || static_cast<size_t>(v) >= values_.size()) {
    throw Error(ErrorCode::kInvalidGraph, "graph output id " + std::to_string(v) + " is invalid");
  }
  outputs_.push_back(v);
}

ValueId Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? kNoValue : it->second;
}

std::string Graph::unique_value_name(const std::string& base) const {
  if (!value_by_name_.count(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!value_by_name_.count(candidate)) return candidate;
  }
}

std::string Graph::unique_node_name(const std::string& base) const {
  if (!node_by_name_.count(base)) return base;
  for (size_t i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!node_by_name_.count(candidate)) return candidate;
  }
}

std::vector<NodeId> Graph::topological_order() const {
  // Kahn's algorithm; ties keep insertion order so dumps are stable.
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<NodeId>> consumers(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (ValueId v : nodes_[n].inputs) {
      if (v == kNoValue) continue;
      NodeId p = values_[static_cast<size_t>(v)].producer;
      if (p != kNoNode) {
        ++pending[n];
        consumers[static_cast<size_t>(p)].push_back(static_cast<NodeId>(n));
      }
    }
  }
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n)
    if (pending[n] == 0) order.push_back(static_cast<NodeId>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    for (NodeId c : consumers[static_cast<size_t>(order[i])]) {
      if (--pending[static_cast<size_t>(c)] == 0) order.push_back(c);
    }
  }
  if (order.size() != nodes_.size()) {
    auto it = std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; });
    const Node& n = nodes_[static_cast<size_t>(it - pending.begin())];
    throw Error(ErrorCode::kInvalidGraph,
                "the graph has a cycle through node '" + n.name + "' (" +
                    std::string(op_name(n.op)) + ")");
  }
  return order;
}

std::string describe_node(const Graph& g, const Node& n) {
  std::string s = "node '" + n.name + "' (" + std::string(op_name(n.op)) + ") with inputs [";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (i) s += ", ";
    s += n.inputs[i] == kNoValue ? "<none>" : g.value(n.inputs[i]).type.to_string();
  }
  return s + "]";
}

}  // namespace gf
