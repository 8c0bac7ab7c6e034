#include "passes/fold_constants.h"

#include <unordered_map>

#include "passes/compact_graph.h"

namespace gf {

namespace {

// Shape's result from a static shape, honouring opset 15's start/end (clamped, negatives count
// from the back).
Tensor shape_value(const Node& n, const Shape& shape) {
  const auto rank = static_cast<int64_t>(shape.rank());
  auto clamp = [&](int64_t i) {
    if (i < 0) i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  const int64_t start = clamp(n.attrs.get_int("start", 0));
  const int64_t end = clamp(n.attrs.get_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(shape[static_cast<size_t>(i)].value());
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}

size_t static_bytes(const TensorType& t) {
  return t.shape.is_static() ? static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype) : SIZE_MAX;
}

// One sweep in topological order; returns the values it turned into constants.
std::unordered_map<ValueId, Tensor> fold_once(const Graph& g, const NodeEvaluator& evaluate,
                                              const FoldOptions& options) {
  std::unordered_map<ValueId, Tensor> folded;
  auto known = [&](ValueId v) -> const Tensor* {
    if (v == kNoValue) return nullptr;
    auto it = folded.find(v);
    if (it != folded.end()) return &it->second;
    return g.value(v).is_constant() ? &g.value(v).constant : nullptr;
  };
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if ((n.op == Op::kShape || n.op == Op::kSize) && !known(n.inputs[0])) {
      const Shape& s = g.value(n.inputs[0]).type.shape;
      if (!s.is_static()) continue;
      folded[n.outputs[0]] = n.op == Op::kShape ? shape_value(n, s) : Tensor::scalar<int64_t>(s.numel());
      continue;
    }
    bool all_known = true;
    for (ValueId v : n.inputs) all_known = all_known && (v == kNoValue || known(v));
    size_t out_bytes = 0;
    for (ValueId v : n.outputs) out_bytes = std::max(out_bytes, static_bytes(g.value(v).type));
    if (!all_known || out_bytes > options.max_folded_bytes) continue;
    std::vector<Tensor> args;
    for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : *known(v));
    std::vector<Tensor> results;
    try {
      results = evaluate(n, args);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kUnsupported) continue;
      throw;
    }
    GF_ASSERT(results.size() == n.outputs.size(), "the evaluator returned the wrong output count");
    for (size_t i = 0; i < results.size(); ++i) folded[n.outputs[i]] = std::move(results[i]);
  }
  return folded;
}

}  // namespace

FoldStats fold_constants(Graph& g, const NodeEvaluator& evaluate, const FoldOptions& options) {
  FoldStats stats;
  const size_t before = g.num_nodes();
  // Each round folds what the last round's inference made static; a round that folds nothing
  // ends it, so this runs at most once per node plus one.
  while (true) {
    infer_shapes(g);
    std::unordered_map<ValueId, Tensor> folded = fold_once(g, evaluate, options);
    if (folded.empty()) break;
    std::unordered_map<NodeId, bool> nodes;
    for (const auto& [v, t] : folded) nodes[g.value(v).producer] = true;
    stats.folded_nodes += static_cast<int>(nodes.size());
    g = compact_graph(g, folded);
  }
  remove_dead_nodes(g);
  stats.removed_nodes = static_cast<int>(before - g.num_nodes());
  return stats;
}

}  // namespace gf
