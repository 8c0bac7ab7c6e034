// Matchers shared by the LayerNorm and RMSNorm rewrites: the pieces both decompositions share.
// Not a pass itself.
#pragma once

#include <optional>
#include <vector>

#include "passes/rewrite_util.h"

namespace gf {

// True when `n` computes d * d, as Pow(d, 2) or Mul(d, d).
bool is_square_of(const Graph& g, const Node& n, ValueId d);

// d / sqrt(var + eps), written as Add(var, eps) -> Sqrt -> Div(d, .), or with Reciprocal(.) or
// Div(1, .) and Mul(d, .) in either operand order. Every intermediate must be read only inside.
struct ScaledByRsqrt {
  std::vector<NodeId> nodes;  // Add, Sqrt, [Reciprocal,] Div/Mul
  float epsilon = 0.0f;
  ValueId result = kNoValue;  // the normalized value
};
std::optional<ScaledByRsqrt> match_scaled_by_rsqrt(const Graph& g, const ValueUses& uses,
                                                   ValueId var, ValueId d);

// The affine tail after a normalization: Mul(n, scale) and, optionally, Add(., bias), each in
// either operand order. Bias is kNoValue when no Add follows.
struct AffineTail {
  NodeId mul = kNoNode, add = kNoNode;
  ValueId scale = kNoValue, bias = kNoValue;
};
std::optional<AffineTail> match_affine_tail(const Graph& g, const ValueUses& uses, ValueId n);

}  // namespace gf
