// Horizontal fusion of matrix products that read the same input: MatMuls of one value X by
// constant weights W_i ([K, N_i], each optionally followed by an Add of a constant bias [N_i])
// become one MatMul by the concatenated weights (and one Add of the concatenated biases),
// whose result each former product reads back as a Slice along the last axis. The Q, K and V
// projections of an attention layer then run as one GEMM, and the slices are strided views
// for the attention that reads them.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of products merged into others.
int fuse_sibling_matmuls(Graph& g);

}  // namespace gf
