// RMSNorm recognition: the decomposition torch.onnx emits for rms_norm over the last axis,
//   v = ReduceMean(Pow(x, 2) | x*x) ; n = x * Reciprocal(Sqrt(v + eps))  (or x / Sqrt(v + eps)) ;
//   y = n * scale
// (commutative operands in either order), becomes RMSNormalization(x, scale) with axis -1 and
// that epsilon, named after the square node + "/fused_rmsnorm". The ReduceMean must reduce
// exactly the last axis with keepdims, every intermediate must be read only inside the
// pattern, and the fused node must type-check to y's exact type. Run after fuse_layer_norms:
// LayerNorm's tail (d / sqrt(var(d) + eps) * scale) is itself an RMSNorm of d.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of RMSNormalization nodes created.
int fuse_rms_norms(Graph& g);

}  // namespace gf
