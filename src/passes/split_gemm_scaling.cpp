#include "passes/split_gemm_scaling.h"

#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

bool is_bias_row(const Graph& g, ValueId c, int64_t n, DType dtype) {
  const TensorType& t = g.value(c).type;
  if (t.dtype != dtype || !t.shape.is_static()) return false;
  const std::vector<int64_t> d = t.shape.static_dims();
  return (d.size() == 1 && d[0] == n) || (d.size() == 2 && d[0] == 1 && d[1] == n);
}

ValueId scalar(Graph& g, float value, DType dtype, const std::string& base) {
  Tensor t(dtype, {});
  switch (dtype) {
    case DType::kF16: *t.data<Half>() = Half(value); break;
    case DType::kBF16: *t.data<BFloat16>() = BFloat16(value); break;
    case DType::kF64: *t.data<double>() = value; break;
    default: *t.data<float>() = value; break;
  }
  return g.add_constant(g.unique_value_name(base), std::move(t));
}

}  // namespace

int split_gemm_scaling(Graph& g) {
  int split = 0;
  const size_t num_nodes = g.num_nodes();
  for (size_t i = 0; i < num_nodes; ++i) {
    const auto id = static_cast<NodeId>(i);
    const Node n = g.node(id);  // a copy: adding nodes may move the node vector
    if (n.op != Op::kGemm) continue;
    const float alpha = n.attrs.get_float("alpha", 1.0f), beta = n.attrs.get_float("beta", 1.0f);
    const ValueId c = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
    const ValueId y = n.outputs[0];
    const TensorType& y_type = g.value(y).type;
    if (!y_type.shape.is_static() || y_type.shape.rank() != 2) continue;
    const DType dtype = y_type.dtype;
    if (!is_floating(dtype)) continue;
    const bool uses_c = c != kNoValue && beta != 0.0f;
    if (alpha == 1.0f && (!uses_c || (beta == 1.0f && is_bias_row(g, c, y_type.shape.static_dims()[1], dtype))))
      continue;
    Attributes product_attrs{{"transA", n.attrs.get_int("transA", 0)}, {"transB", n.attrs.get_int("transB", 0)}};
    ValueId value = add_helper_node(g, Op::kGemm, n.name + "/product", {n.inputs[0], n.inputs[1]}, product_attrs);
    // The last op of the chain produces y itself, so readers and graph outputs stay as they are.
    if (alpha != 1.0f) {
      const ValueId a = scalar(g, alpha, dtype, n.name + "/alpha");
      if (!uses_c) {
        replace_producer(g, y, Op::kMul, g.unique_node_name(n.name + "/scale"), {value, a});
        ++split;
        continue;
      }
      value = add_helper_node(g, Op::kMul, n.name + "/scale", {value, a});
    }
    ValueId term = c;  // uses_c holds here: alpha 1 without C was left alone above
    if (beta != 1.0f) term = add_helper_node(g, Op::kMul, n.name + "/beta_c", {c, scalar(g, beta, dtype, n.name + "/beta")});
    replace_producer(g, y, Op::kAdd, g.unique_node_name(n.name + "/add_c"), {value, term});
    ++split;
  }
  if (split > 0) remove_dead_nodes(g);
  return split;
}

}  // namespace gf
