// Attention recognition: scaled dot-product attention as torch.onnx emits it (GPT-2, BERT,
// the dynamo exporter's SDPA decomposition),
//   s = MatMul(Q [* cq], Kt [* ck]) ; s = s * c | s / c ; [s = s + mask | Where(cond, s, fill)] ;
//   p = Softmax(s, last axis) ; y = MatMul(p, V)
// with Q [B,H,S,D], Kt [B,H,D,L], V [B,H,L,Dv], becomes Attention(Q, K, V[, mask]) with
// scale = cq * ck * c (or / c) and is_causal when the mask is the constant causal triangle,
// named after the first matched node + "/fused_attention". K is Kt's source with the last two
// dims swapped back (Kt = Transpose(X, p) becomes Transpose(X, p') or X itself).
//
// Rewritten only when exact (see attention_mask.h for masks): the scale must be a positive
// finite constant that the float attribute holds (Attention multiplies Q and K by sqrt(scale)
// each, the same product), Q, K and V must agree on batch and heads (static or the same
// symbol: MatMul would broadcast where Attention does not), the mask must cover every key, and
// every intermediate must be read only inside the pattern.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Attention nodes created.
int fuse_attention(Graph& g);

}  // namespace gf
