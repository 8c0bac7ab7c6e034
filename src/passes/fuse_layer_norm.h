// LayerNorm recognition: the decomposition torch.onnx emits for layer_norm over the last axis,
//   m = ReduceMean(x) ; d = x - m ; v = ReduceMean(d*d | Pow(d, 2)) ;
//   n = d / Sqrt(v + eps)  (or d * Reciprocal(Sqrt(v + eps))) ; y = n * scale [+ bias]
// (commutative operands in either order), becomes one LayerNormalization(x, scale[, bias])
// with axis -1 and that epsilon, named after the first ReduceMean + "/fused_layernorm".
// Both ReduceMeans must reduce exactly the last axis with keepdims, every intermediate must be
// read only inside the pattern, and the fused node must type-check to y's exact type (scale
// and bias varying only over the last axis). Anything else is left as it is.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of LayerNormalization nodes created.
int fuse_layer_norms(Graph& g);

}  // namespace gf
