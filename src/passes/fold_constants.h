// Constant folding: nodes whose inputs are all constant are evaluated once and replaced by
// their results; Shape and Size of values whose shape is static become constants. Repeats
// until nothing changes, so a shape subgraph (Shape -> Gather -> Concat -> Reshape ...) folds
// away once the input shapes are bound. Dead nodes are removed at the end.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

// Runs one node on concrete inputs (undefined Tensor for an omitted optional input). Passes
// depend on the IR only, so the evaluator comes from the caller (the runtime passes
// ref::run_node).
using NodeEvaluator = std::function<std::vector<Tensor>(const Node&, std::span<const Tensor>)>;

struct FoldOptions {
  // Results larger than this stay computed at run time (a folded Expand or ConstantOfShape
  // could otherwise turn into a huge weight).
  size_t max_folded_bytes = size_t{64} << 20;
};

struct FoldStats {
  int folded_nodes = 0;
  int removed_nodes = 0;  // folded plus dead
};

// Runs shape inference first (throws like infer_shapes). An evaluator error other than
// kUnsupported propagates, naming the node; a node the evaluator cannot run stays unfolded.
FoldStats fold_constants(Graph& g, const NodeEvaluator& evaluate, const FoldOptions& options = {});

}  // namespace gf
