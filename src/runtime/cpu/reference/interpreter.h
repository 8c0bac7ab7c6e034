// The reference interpreter: runs a graph one op at a time on the CPU. It is the test oracle.
#pragma once

#include <span>
#include <vector>

#include "graphfuse/graph.h"

namespace gf::ref {

// Runs `g` on `inputs` (in the order of g.inputs()); returns g.outputs() in order. Shapes are
// inferred again from the actual inputs, so symbolic dims bind at run time.
std::vector<Tensor> run_graph(const Graph& g, std::span<const Tensor> inputs);

// Runs a single node on the given inputs (undefined Tensor for an omitted optional input).
std::vector<Tensor> run_node(const Node& node, std::span<const Tensor> inputs);

}  // namespace gf::ref
