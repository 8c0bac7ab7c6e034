// Adds converted nodes to a graph one at a time, inferring each node's output types as it is
// added, so a conversion can look at its inputs' ranks and constant data, and so a type error
// names the node that caused it.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "graphfuse/graph.h"

namespace gf::onnx_import {

class GraphAssembler {
 public:
  using Evaluator = std::function<std::vector<Tensor>(const Node&, std::span<const Tensor>)>;
  // With an evaluator, nodes whose inputs are all constant become constants as they are added.
  explicit GraphAssembler(Graph& graph, Evaluator evaluate = {})
      : graph_(graph), evaluate_(std::move(evaluate)) {}

  Graph& graph() { return graph_; }

  // The value an ONNX name stands for; kNoValue for "" (an omitted optional input). Names must
  // have been bound (by a graph input, initializer or earlier node).
  ValueId value(const std::string& onnx_name) const;
  bool has(const std::string& onnx_name) const { return names_.count(onnx_name) != 0; }
  void bind(const std::string& onnx_name, ValueId v) { names_[onnx_name] = v; }

  ValueId add_input(const std::string& onnx_name, TensorType type);
  // A constant under `name`; a generated unique name when `name` is taken or empty.
  ValueId add_constant(const std::string& name, Tensor data);
  ValueId add_ints(const std::string& name, const std::vector<int64_t>& values);

  // Adds a node and infers its outputs. `output_names` are ONNX names (bound to the new values);
  // an empty name gets a generated one. Node names that are empty or taken are made unique.
  std::vector<ValueId> add_node(Op op, const std::string& node_name, std::vector<ValueId> inputs,
                                const std::vector<std::string>& output_names, Attributes attrs);
  // A helper node with generated names, for multi-node conversions.
  ValueId add_helper(Op op, const std::string& base_name, std::vector<ValueId> inputs,
                     Attributes attrs = {});

  const TensorType& type(ValueId v) const { return graph_.value(v).type; }
  const Tensor* constant(ValueId v) const;

 private:
  // The outputs' values when the node can be evaluated now; empty otherwise.
  std::vector<Tensor> try_fold(const Node& probe, const std::vector<TensorType>& out_types) const;

  Graph& graph_;
  Evaluator evaluate_;
  std::unordered_map<std::string, ValueId> names_;
};

}  // namespace gf::onnx_import
