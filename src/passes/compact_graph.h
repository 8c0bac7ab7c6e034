// Rebuilding a graph without some of its nodes. Graph has no node removal (ids index vectors),
// so passes that delete nodes build a fresh graph with the survivors, names kept.
#pragma once

#include <unordered_map>

#include "graphfuse/graph.h"

namespace gf {

// A copy of `g` in which each value in `replacements` becomes a constant holding the given
// tensor (its producer is dropped), and only nodes that the graph outputs depend on remain.
// Graph inputs stay (callers still pass them); constants nothing reads are dropped. Node and
// value names, types and the order of surviving nodes are kept.
Graph compact_graph(const Graph& g, const std::unordered_map<ValueId, Tensor>& replacements = {});

// Dead-code elimination: compact_graph without replacements.
void remove_dead_nodes(Graph& g);

}  // namespace gf
