#include "runtime/cpu/reference/interpreter.h"

#include "ir/infer.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::ref {

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    register_elementwise_kernels(t);
    register_reduction_kernels(t);
    register_layout_kernels(t);
    register_linear_kernels(t);
    return t;
  }();
  return table;
}

void kernel_fail(const KernelArgs& args, const std::string& msg, ErrorCode code) {
  std::string s = "node '" + args.node.name + "' (" + std::string(op_name(args.node.op)) +
                  ") with inputs [";
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    s += (i ? ", " : "") + (args.inputs[i].defined() ? args.inputs[i].type_string() : "<none>");
  }
  throw Error(code, s + "]: " + msg);
}

std::vector<Tensor> run_node(const Node& node, std::span<const Tensor> inputs) {
  std::vector<TensorType> in_types(inputs.size());
  std::vector<const TensorType*> type_ptrs(inputs.size(), nullptr);
  std::vector<const Tensor*> value_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    in_types[i] = TensorType{inputs[i].dtype(), Shape::from_static(inputs[i].dims())};
    type_ptrs[i] = &in_types[i];
    value_ptrs[i] = &inputs[i];
  }
  std::vector<TensorType> out_types = infer_node(node, type_ptrs, value_ptrs);
  std::vector<Tensor> outputs;
  outputs.reserve(out_types.size());
  for (const TensorType& t : out_types) {
    GF_ASSERT(t.shape.is_static(), "inference left a dynamic shape with all inputs known");
    outputs.emplace_back(t.dtype, t.shape.static_dims());
  }
  Kernel k = kernel_table()[static_cast<size_t>(node.op)];
  if (k == nullptr) {
    throw Error(ErrorCode::kUnsupported, "node '" + node.name + "' (" +
                                             std::string(op_name(node.op)) +
                                             "): the reference interpreter has no kernel");
  }
  k(KernelArgs{node, inputs, outputs});
  return outputs;
}

std::vector<Tensor> run_graph(const Graph& g, std::span<const Tensor> inputs) {
  if (inputs.size() != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "graph takes " + std::to_string(g.inputs().size()) +
                                                 " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<Tensor> env(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(g.inputs()[i])] = inputs[i];
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (val.is_constant()) env[v] = val.constant;
  }
  // Free each intermediate after its last use so peak memory follows liveness.
  std::vector<int> uses(g.num_values(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++uses[static_cast<size_t>(v)];
  for (ValueId v : g.outputs()) ++uses[static_cast<size_t>(v)];

  std::vector<Tensor> args;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    args.clear();
    for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : env[static_cast<size_t>(v)]);
    std::vector<Tensor> outs = run_node(n, args);
    for (size_t i = 0; i < n.outputs.size(); ++i) env[static_cast<size_t>(n.outputs[i])] = outs[i];
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      const Value& val = g.value(v);
      if (--uses[static_cast<size_t>(v)] == 0 && !val.is_constant()) env[static_cast<size_t>(v)] = Tensor();
    }
  }
  std::vector<Tensor> result;
  for (ValueId v : g.outputs()) result.push_back(env[static_cast<size_t>(v)]);
  return result;
}

}  // namespace gf::ref
