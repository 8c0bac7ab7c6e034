// Permuting a tensor's elements into new storage, for the passes that fold transposes into
// constants and the executors that lay weights out for their products. Any dtype: elements
// move as raw bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "graphfuse/tensor.h"

namespace gf {

// out[i0, i1, ...] = in[i_perm[0], i_perm[1], ...] (ONNX Transpose). A perm that keeps the
// leading dims and swaps the last two (a batch of matrices, the common case for weights) takes
// the tiled, threaded path of transpose_matrix; others move one element at a time.
Tensor transpose_tensor(const Tensor& in, const std::vector<int64_t>& perm);

// The [c, r] transpose of a 2-D tensor [r, c].
Tensor transpose_matrix(const Tensor& t);

}  // namespace gf
