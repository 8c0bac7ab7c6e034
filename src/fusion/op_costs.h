// Per-node sizes and flop counts for the cost model.
#pragma once

#include "graphfuse/graph.h"

namespace gf::fusion {

// Elements of a value; symbolic or unknown dims count as kAssumedSymbolicDim.
double value_elements(const Graph& g, ValueId v);
double value_bytes(const Graph& g, ValueId v);
// Arithmetic of one node (multiply-adds count two).
double node_flops(const Graph& g, const Node& n);

// Ops that only relabel a contiguous buffer's shape: no data moves.
bool is_metadata_view(Op op);
// Ops a kernel can absorb into its operand addressing (strides, offsets).
bool is_strided_view(Op op);

}  // namespace gf::fusion
