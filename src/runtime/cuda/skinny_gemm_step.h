// Decode-shaped GEMMs as generated skinny GEMM kernels (codegen/cuda/skinny_gemm.h) instead of
// cuBLASLt. A GEMM group's anchor qualifies when it is a MatMul, or a Gemm without transA,
// whose product (its batch dims folded into rows, as plan_gemm folds them) is one call of
// M = 1..16 rows against a W shared by every row, in f32, f16 or bf16. The kernel also takes
// the head of the group's epilogue that it can compute, in its order: a bias row ([N], a
// constant or a value; a Gemm's own C counts), then Relu or Gelu (erf or tanh), then a residual
// of the product's shape; each optional, reshapes of the product anywhere between. The rest of
// the epilogue stays the group's generated epilogue kernel, which reads the kernel's result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/skinny_gemm.h"
#include "fusion/plan.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

// Whether a product of `rows` rows (after folding) runs as a skinny GEMM kernel.
bool prefers_skinny_gemm(int64_t rows);

struct SkinnyGemmStep {
  CudaStep step;  // a kKernel step; its k-split workspace is its private buffer
  codegen::SkinnyGemmSpec spec;
  std::vector<NodeId> nodes;  // what it computes: the anchor, then the epilogue nodes it fused
};

// The step for `group` (a kGemm group) as kernel `name` for `sm_count` SMs; nullopt when the
// anchor is not such a product (the executor then calls cuBLASLt).
std::optional<SkinnyGemmStep> skinny_gemm_step(const Graph& g, const fusion::Group& group,
                                               const std::string& name, int sm_count);

}  // namespace gf::cuda
