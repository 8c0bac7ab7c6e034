// GELU recognition: the two decompositions torch.onnx emits for gelu become one Gelu node,
// named after the first matched node + "/fused_gelu":
//   erf form:  x * 0.5 * (1 + Erf(x / sqrt(2)))             -> Gelu(x) (approximate "none");
//              x / sqrt(2) may be written x * (1 / sqrt(2));
//   tanh form: x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//                                                            -> Gelu(x, approximate "tanh");
//              x^3 may be Pow(x, 3), x * (x * x) or (x * x) * x.
// The three factors x, 0.5 and (1 + ...) may be multiplied in any association and order, and
// every commutative operand in either order. Constants are matched by value within a few ulps
// of their dtype. Every intermediate must be read only inside the pattern and the result must
// have x's exact type (a broadcasting constant must not change the shape).
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Gelu nodes created.
int fuse_gelus(Graph& g);

}  // namespace gf
