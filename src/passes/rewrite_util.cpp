#include "passes/rewrite_util.h"

#include <algorithm>
#include <cmath>

#include "ir/infer.h"

namespace gf {

ValueUses::ValueUses(const Graph& g) : readers_(g.num_values()), is_output_(g.num_values(), false) {
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      auto& r = readers_[static_cast<size_t>(v)];
      if (std::find(r.begin(), r.end(), static_cast<NodeId>(i)) == r.end()) {
        r.push_back(static_cast<NodeId>(i));
      }
    }
  }
  for (ValueId v : g.outputs()) is_output_[static_cast<size_t>(v)] = true;
}

bool ValueUses::only_read_by(ValueId v, std::span<const NodeId> nodes) const {
  if (is_output(v)) return false;
  return std::all_of(readers(v).begin(), readers(v).end(), [&](NodeId r) {
    return std::find(nodes.begin(), nodes.end(), r) != nodes.end();
  });
}

NodeId ValueUses::sole_reader(ValueId v) const {
  if (is_output(v) || readers(v).size() != 1) return kNoNode;
  return readers(v).front();
}

bool ClaimedNodes::claim(std::span<const NodeId> nodes) {
  for (NodeId n : nodes) {
    const auto i = static_cast<size_t>(n);
    if (i < claimed_.size() && claimed_[i]) return false;
  }
  for (NodeId n : nodes) {
    const auto i = static_cast<size_t>(n);
    if (i >= claimed_.size()) claimed_.resize(i + 1, false);
    claimed_[i] = true;
  }
  return true;
}

NodeId sole_reader_of(const Graph& g, const ValueUses& uses, ValueId v, Op op) {
  const NodeId r = uses.sole_reader(v);
  return r != kNoNode && g.node(r).op == op ? r : kNoNode;
}

const Node* producer_if(const Graph& g, ValueId v, Op op) {
  const NodeId id = producer_id_if(g, v, op);
  return id == kNoNode ? nullptr : &g.node(id);
}

NodeId producer_id_if(const Graph& g, ValueId v, Op op) {
  if (v == kNoValue) return kNoNode;
  const NodeId p = g.value(v).producer;
  if (p == kNoNode || g.node(p).op != op) return kNoNode;
  return p;
}

std::optional<double> scalar_constant(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).is_constant()) return std::nullopt;
  const Tensor& t = g.value(v).constant;
  if (t.numel() != 1 || t.dtype() == DType::kBool) return std::nullopt;
  return t.element_as_double(0);
}

namespace {

// A few units in the last place of the dtype: constants written by exporters are the exact
// value rounded once (or printed with a digit or two fewer).
double relative_tolerance(DType t) {
  switch (t) {
    case DType::kF64: return 1e-12;
    case DType::kF32: return 1e-6;
    case DType::kF16: return 2e-3;
    case DType::kBF16: return 1.6e-2;
    default: return 0.0;  // integers must match exactly
  }
}

}  // namespace

bool is_constant_near(const Graph& g, ValueId v, double expected) {
  const std::optional<double> c = scalar_constant(g, v);
  if (!c) return false;
  const double tol = relative_tolerance(g.value(v).constant.dtype());
  return std::fabs(*c - expected) <= tol * std::fabs(expected);
}

ValueId other_input(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return kNoValue;
}

bool is_mean_over_last_axis(const Graph& g, const Node& n) {
  if (n.op != Op::kReduceMean || n.attrs.get_int("keepdims", 1) != 1) return false;
  const auto rank = static_cast<int64_t>(g.value(n.inputs[0]).type.shape.rank());
  if (rank == 0) return false;
  if (n.inputs.size() < 2 || n.inputs[1] == kNoValue) return rank == 1;  // all axes
  const Value& axes = g.value(n.inputs[1]);
  if (!axes.is_constant() || axes.constant.numel() != 1) return false;
  const int64_t axis = axes.constant.element_as_int(0);
  return axis == -1 || axis == rank - 1;
}

std::optional<std::vector<TensorType>> try_infer(const Graph& g, Op op,
                                                 const std::vector<ValueId>& inputs,
                                                 const Attributes& attrs, size_t num_outputs) {
  Node n{op, "candidate", inputs, std::vector<ValueId>(num_outputs, kNoValue), attrs};
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> values;
  for (ValueId v : inputs) {
    types.push_back(v == kNoValue ? nullptr : &g.value(v).type);
    values.push_back(v != kNoValue && g.value(v).is_constant() ? &g.value(v).constant : nullptr);
  }
  try {
    return infer_node(n, types, values);
  } catch (const Error&) {
    return std::nullopt;
  }
}

NodeId replace_producer(Graph& g, ValueId result, Op op, const std::string& name,
                        std::vector<ValueId> inputs, Attributes attrs) {
  const NodeId old = g.value(result).producer;
  GF_ASSERT(old != kNoNode, "replace_producer: the value has no producer");
  const TensorType type = g.value(result).type;
  const std::string placeholder = g.unique_value_name(g.value(result).name + "/replaced");
  const NodeId id = g.add_node(op, name, std::move(inputs), {placeholder}, std::move(attrs), {type});
  const ValueId dead = g.node(id).outputs[0];
  for (ValueId& out : g.node(old).outputs) {
    if (out == result) out = dead;
  }
  g.node(id).outputs[0] = result;
  g.value(result).producer = id;
  g.value(dead).producer = old;
  return id;
}

ValueId add_helper_node(Graph& g, Op op, const std::string& base, std::vector<ValueId> inputs,
                        Attributes attrs) {
  const std::optional<std::vector<TensorType>> types = try_infer(g, op, inputs, attrs);
  GF_ASSERT(types.has_value(), "add_helper_node: the helper node does not type-check");
  const NodeId id = g.add_node(op, g.unique_node_name(base), std::move(inputs),
                               {g.unique_value_name(base)}, std::move(attrs), *types);
  return g.node(id).outputs[0];
}

std::string fused_name(const Graph& g, const Node& first, const std::string& suffix) {
  return g.unique_node_name(first.name + suffix);
}

}  // namespace gf
