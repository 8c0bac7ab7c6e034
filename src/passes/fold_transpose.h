// Transpose folding into matrix products. A Transpose with perm [1, 0] feeding input A or B of
// a Gemm becomes Gemm's transA / transB flag. A MatMul whose B is the [1, 0] Transpose of a 2-D
// constant becomes a Gemm with transB over the constant as stored (leading dims of A folded into
// rows by Reshapes, when static); any other Transpose of a constant feeding a MatMul becomes a
// new, already transposed constant. The Transpose itself goes away once nothing else reads it.
// Transposes of run-time values feeding MatMul stay: MatMul has no transpose flags.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Gemm/MatMul inputs rewired past a Transpose.
int fold_transposes(Graph& g);

}  // namespace gf
