// Common subexpression elimination: two nodes of the same op reading the same values with
// equal attributes compute the same thing, so the later one's readers are pointed at the
// earlier one's outputs; constants with the same dtype, dims and bytes become one constant.
// A value that is a graph output keeps its producer (its name is part of the interface), and
// Dropout is never merged (with training_mode it is random).
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of nodes and constants merged away.
int eliminate_common_subexpressions(Graph& g);

}  // namespace gf
