// The graph IR: values (typed tensors, possibly constant) and nodes (ops over values).
// Values and nodes are stored in vectors and named by index; the graph inputs are values with
// no producer and no constant data.
//
// Thread safety: a Graph is a value. Const use from several threads at once is safe; changing a
// graph needs it to oneself (a Session keeps its own copy). Constants are Tensor handles:
// copying a Graph shares their bytes.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graphfuse/attribute.h"
#include "graphfuse/op.h"
#include "graphfuse/shape.h"
#include "graphfuse/tensor.h"

namespace gf {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an omitted optional input
inline constexpr NodeId kNoNode = -1;

struct Value {
  std::string name;
  TensorType type;
  NodeId producer = kNoNode;
  Tensor constant;  // defined() for weights and folded constants
  bool is_constant() const { return constant.defined(); }
};

struct Node {
  Op op;
  std::string name;  // from the model (ONNX node name) or generated; unique in the graph
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attributes attrs;
};

class Graph {
 public:
  ValueId add_input(const std::string& name, TensorType type);
  ValueId add_constant(const std::string& name, Tensor data);
  // Adds a node whose outputs are new values with the given names and types (types may be
  // filled in later by shape inference). Returns the node id.
  NodeId add_node(Op op, const std::string& name, std::vector<ValueId> inputs,
                  const std::vector<std::string>& output_names, Attributes attrs = {},
                  std::vector<TensorType> output_types = {});
  void add_output(ValueId v);
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  const Value& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  Value& value(ValueId v) { return values_.at(static_cast<size_t>(v)); }
  const Node& node(NodeId n) const { return nodes_.at(static_cast<size_t>(n)); }
  Node& node(NodeId n) { return nodes_.at(static_cast<size_t>(n)); }
  size_t num_values() const { return values_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  // Name lookups; kNoValue when absent.
  ValueId find_value(const std::string& name) const;
  // A name not yet used by any value, built from `base`.
  std::string unique_value_name(const std::string& base) const;
  std::string unique_node_name(const std::string& base) const;

  // Nodes in an order where every producer precedes its consumers; throws kInvalidGraph on a
  // cycle, naming a node on it.
  std::vector<NodeId> topological_order() const;

  std::string name;  // model name, for messages and dumps

 private:
  ValueId new_value(const std::string& name, TensorType type);

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::unordered_map<std::string, ValueId> value_by_name_;
  std::unordered_map<std::string, NodeId> node_by_name_;
};

// Describes a node for error messages: "node 'attn/MatMul' (MatMul) with inputs
// [f32[2,8,64], f32[64,64]]".
std::string describe_node(const Graph& g, const Node& n);

// Throws kInvalidGraph if the graph is malformed: dangling or out-of-range value ids, arity
// outside the op table's bounds, values produced twice, duplicate names, cycles, outputs that
// nothing produces. Run after every pass in debug builds.
void verify_graph(const Graph& g);

// Fills every node output's TensorType from its inputs (op by op, in topological order) and
// checks the op's constraints; throws kShapeMismatch / kInvalidGraph naming the node, op and
// shapes.
void infer_shapes(Graph& g);

// A readable text dump, one line per node: "%y: f32[b,768] = MatMul(%x, %w) {..}  # name".
std::string print_graph(const Graph& g);

}  // namespace gf
