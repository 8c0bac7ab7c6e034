// How the mask of a matched attention pattern maps onto the fused Attention op. Part of the
// attention rewrite (fuse_attention.cpp), split out because the proofs live here.
//
// Attention adds a float mask to the scores exactly as the matched Add did, and a bool mask
// as 0 / -inf, but where a row's bias is -inf for every key it outputs zeros, where the
// matched Softmax outputs NaN. So a mask is accepted only where no row can be all -inf:
//   - a constant, checked row by row;
//   - Where(cond, a, b) with a and b finite constants (BERT's additive mask).
// A constant mask that changes no score (all zeros; a condition keeping every key) is dropped.
// A "fill" value below the scores is treated as masking out only where that is exact in the
// compute type: -inf, or the lowest finite f32/f64 value, which absorbs any score s with
// |s| < half its ulp (2^103 for f32): s + lowest == lowest, and exp(lowest - max) == 0.
#pragma once

#include <optional>

#include "passes/rewrite_util.h"

namespace gf {

struct AttentionMask {
  bool is_causal = false;     // the mask is exactly the top-left causal triangle
  ValueId mask = kNoValue;    // the Attention's mask input (kNoValue: none)
};

// The mask for `scores_node` = Add(scores, m) (either operand order): `scores` is the matched
// unmasked scores value. nullopt when the rewrite cannot be proven exact.
std::optional<AttentionMask> mask_from_add(Graph& g, const Node& add, ValueId scores);

// The mask for Where(cond, scores, fill). May add a Where(cond, 0, fill) node to build an
// additive mask. nullopt when the rewrite cannot be proven exact.
std::optional<AttentionMask> mask_from_where(Graph& g, NodeId where, ValueId scores);

}  // namespace gf
