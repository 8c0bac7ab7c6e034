// Gemm's alpha, beta and C as elementwise ops after a plain product, for executors whose GEMM
// library call takes only a product plus an optional bias row (the CUDA executor): Y = alpha *
// op(A) op(B) + beta * C becomes Gemm(A, B) -> Mul(alpha) -> Add(Mul(C, beta)), which the
// fusion planner then fuses into the GEMM's epilogue kernel. A Gemm that is already a product
// plus a bias row ([N] or [1, N], beta 1, alpha 1) is left alone: that is the bias epilogue.
// Not part of run_passes (the CPU's reference Gemm takes every form).
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Gemm nodes split. Types are kept: every output keeps its id and name.
int split_gemm_scaling(Graph& g);

}  // namespace gf
