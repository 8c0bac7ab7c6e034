// How a MatMul or Gemm node maps onto cuBLASLt calls: one GemmSpec and the operand offsets of
// each call. Batched operands become one strided-batch call; a B shared by every batch entry
// folds the batch into the rows (one plain GEMM); other broadcasts of the batch dims become one
// call per output batch entry, with pointer offsets. A constant weight that weight_layout.h
// stores as [n, k] on the device is read with trans_b (spec.n and spec.k keep the product's).
#pragma once

#include <cstdint>
#include <vector>

#include "fusion/plan.h"
#include "graphfuse/graph.h"
#include "runtime/cuda/cublaslt_gemm.h"

namespace gf::cuda {

// The operand alignment cuBLASLt's heuristic assumes by default (its MIN_ALIGNMENT preferences).
inline constexpr int64_t kGemmOperandAlignment = 256;

struct GemmCall {
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;  // in elements
};

struct GemmPlan {
  GemmSpec spec;
  std::vector<GemmCall> calls;
  ValueId a = kNoValue, b = kNoValue, bias = kNoValue, c = kNoValue;  // c: the output
};

// Gemm: alpha 1 and either no C (or beta 0) or a C of shape [N] or [1, N] with beta 1, added
// by the bias epilogue (split_gemm_scaling turns the other forms into an epilogue first).
// Throws kUnsupported naming the node, op and shapes for what cuBLASLt does not take here
// (dtypes other than f32/f16/bf16, empty sizes, other Gemm forms, broadcast batch entries that
// are not kGemmOperandAlignment-aligned); the executor then runs the
// node another way.
GemmPlan plan_gemm(const Graph& g, const Node& node, bool allow_tf32);

// Whether `other` (dims) adds one value per output feature to the product `x` (dims, perhaps
// reshaped) of n features: n values along x's last dim, any leading dims 1 and no more of them
// than x has. With n = 1 it is one value for every element, which is the same.
bool is_bias_row(const std::vector<int64_t>& other, const std::vector<int64_t>& x, int64_t n);

// A GEMM group's anchor with the head of the group's epilogue that cuBLASLt computes in the
// same call.
struct GemmWithEpilogue {
  GemmPlan plan;              // c: the output of the last node in `nodes`
  std::vector<NodeId> nodes;  // the anchor, then the epilogue nodes the call computes, in order
};

// plan_gemm of `group`'s MatMul/Gemm anchor, extended along the epilogue while the next node is
// what cuBLASLt's epilogue applies next: an Add of a bias row ([N] or [1, N], or more leading
// 1s, in the product's dtype, either operand order, computed before the group) when the Gemm
// has no C bias, then Relu or Gelu(approximate "tanh"); metadata views (a Reshape, an output's
// Identity) anywhere in the chain, whose output the call then writes. Gelu "none" (erf) is taken
// only with `exact_gelu` (for cuDNN's fused matmul, cudnn_matmul.h): cuBLASLt's GELU is the
// tanh approximation. A node's input must be read by it alone
// (once) and be no graph output, since the call never stores it. Throws what plan_gemm throws.
//
// In f16/bf16 the graph rounds to 16 bits after the product, the bias add and the activation,
// where cuBLASLt keeps f32 to the end and rounds once: a difference of about one 16-bit unit,
// within the tolerance of a 16-bit GEMM (whose summation order differs anyway). Relu commutes
// with rounding, so it adds none.
GemmWithEpilogue plan_gemm_with_epilogue(const Graph& g, const fusion::Group& group,
                                         bool allow_tf32, bool exact_gelu = false);

}  // namespace gf::cuda
