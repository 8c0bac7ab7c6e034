#include "passes/fuse_sibling_matmuls.h"

#include <cstring>
#include <map>

#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

struct Sibling {
  NodeId matmul = kNoNode;
  NodeId bias_add = kNoNode;  // kNoNode when the product has no bias
  // Copies (shared storage): adding constants to the graph moves its values.
  Tensor weight;
  Tensor bias;
};

// Joins tensors of one dtype along `axis` (0 for 1-D biases, 1 for [K, N] weights).
Tensor concat_last_axis(const std::vector<Tensor>& parts) {
  const Tensor& first = parts.front();
  const size_t elem = dtype_size(first.dtype());
  const int64_t rows = first.rank() == 2 ? first.dims()[0] : 1;
  int64_t cols = 0;
  for (const Tensor& t : parts) cols += t.dims().back();
  Tensor out(first.dtype(), first.rank() == 2 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols});
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    const int64_t n = t.dims().back();
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(static_cast<char*>(out.raw()) + (r * cols + offset) * static_cast<int64_t>(elem),
                  static_cast<const char*>(t.raw()) + r * n * static_cast<int64_t>(elem),
                  static_cast<size_t>(n) * elem);
    }
    offset += n;
  }
  return out;
}

// A MatMul of `x` by a constant 2-D weight of x's dtype, with its optional sole bias Add.
std::optional<Sibling> as_sibling(const Graph& g, const ValueUses& uses, NodeId id, ValueId x) {
  const Node& n = g.node(id);
  if (n.op != Op::kMatMul || n.inputs[0] != x || n.inputs[1] == x) return std::nullopt;
  const Value& w = g.value(n.inputs[1]);
  if (!w.is_constant() || w.constant.rank() != 2 || w.constant.dtype() != g.value(x).type.dtype) {
    return std::nullopt;
  }
  Sibling s{id, kNoNode, w.constant, Tensor()};
  const NodeId add = sole_reader_of(g, uses, n.outputs[0], Op::kAdd);
  if (add != kNoNode) {
    const ValueId b = other_input(g.node(add), n.outputs[0]);
    const Value& bv = g.value(b);
    if (b != n.outputs[0] && bv.is_constant() && bv.constant.rank() == 1 &&
        bv.constant.dtype() == w.constant.dtype() && bv.constant.dims()[0] == w.constant.dims()[1]) {
      s.bias_add = add;
      s.bias = bv.constant;
    }
  }
  return s;
}

}  // namespace

int fuse_sibling_matmuls(Graph& g) {
  const ValueUses uses(g);
  int merged = 0;
  // Candidates per input value, in node order.
  std::map<ValueId, std::vector<Sibling>> by_input;
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    const Node& n = g.node(id);
    if (n.op != Op::kMatMul) continue;
    if (auto s = as_sibling(g, uses, id, n.inputs[0])) by_input[n.inputs[0]].push_back(*s);
  }
  for (auto& [x, all] : by_input) {
    // Merge the products that agree on having a bias (the larger set of the two kinds).
    std::vector<Sibling> with_bias, without;
    for (const Sibling& s : all) (s.bias.defined() ? with_bias : without).push_back(s);
    std::vector<Sibling>& group = with_bias.size() >= without.size() ? with_bias : without;
    if (group.size() < 2) continue;
    std::vector<Tensor> weights, biases;
    for (const Sibling& s : group) {
      weights.push_back(s.weight);
      if (s.bias.defined()) biases.push_back(s.bias);
    }
    const std::string base = fused_name(g, g.node(group.front().matmul), "/fused_siblings");
    const ValueId w = g.add_constant(g.unique_value_name(base + "/weight"), concat_last_axis(weights));
    if (!try_infer(g, Op::kMatMul, {x, w}, {})) continue;
    ValueId product = add_helper_node(g, Op::kMatMul, base, {x, w});
    if (!biases.empty()) {
      const ValueId b = g.add_constant(g.unique_value_name(base + "/bias"), concat_last_axis(biases));
      product = add_helper_node(g, Op::kAdd, base + "/bias_add", {product, b});
    }
    int64_t offset = 0;
    for (const Sibling& s : group) {
      const int64_t n = s.weight.dims()[1];
      const NodeId last = s.bias_add != kNoNode ? s.bias_add : s.matmul;
      const ValueId result = g.node(last).outputs[0];
      const std::string slice_name = fused_name(g, g.node(last), "/slice");
      const ValueId starts = g.add_constant(g.unique_value_name(base + "/start"), Tensor::from_vector<int64_t>({1}, {offset}));
      const ValueId ends = g.add_constant(g.unique_value_name(base + "/end"), Tensor::from_vector<int64_t>({1}, {offset + n}));
      const ValueId axes = g.add_constant(g.unique_value_name(base + "/axis"), Tensor::from_vector<int64_t>({1}, {-1}));
      replace_producer(g, result, Op::kSlice, slice_name, {product, starts, ends, axes});
      offset += n;
    }
    merged += static_cast<int>(group.size()) - 1;
  }
  if (merged > 0) g = compact_graph(g);
  return merged;
}

}  // namespace gf
