// Removes nodes that compute nothing: Identity, and Cast to the dtype its input already has
// (torch.onnx writes one after an f32 Softmax). Readers take the node's input instead, so the
// rewrites after this pass (attention) see the pattern without the extra node. A node whose
// output is a graph output stays: the output keeps its name.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of nodes removed.
int remove_no_ops(Graph& g);

}  // namespace gf
