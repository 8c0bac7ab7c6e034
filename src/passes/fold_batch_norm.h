// BatchNormalization folding: an inference-form BatchNormalization whose input is a Conv with
// constant weights (and constant bias, if any) and constant statistics becomes that Conv with
// rescaled weights and a new bias:
//   s = scale / sqrt(var + epsilon),  W'[m] = W[m] * s[m],  B'[m] = (B[m] - mean[m]) * s[m] + bias[m].
// The Conv's output must have no reader but the BatchNormalization (and not be a graph output).
// The new constants are computed in double and stored in the weights' dtype.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of BatchNormalizations folded away.
int fold_batch_norms(Graph& g);

}  // namespace gf
