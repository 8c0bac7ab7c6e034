// Dead-code elimination as a pipeline pass: nodes that no graph output depends on, and
// constants nothing reads, are dropped (compact_graph does the work). Graph inputs stay.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of nodes removed.
int eliminate_dead_code(Graph& g);

}  // namespace gf
