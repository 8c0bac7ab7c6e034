// Which library runs a product that both cuBLASLt and cuDNN's fused matmul take
// (GemmLibrary): the cuDNN form of a GEMM plan, and the choice between the two by timing. cuDNN
// fuses an exact (erf) GELU, which cuBLASLt cannot; with the other epilogues either may be
// faster for a given shape (on an H200 cuDNN's was faster for 128 x 768 x 3072 f16 with
// bias + tanh-GELU, cuBLASLt's for 1024 rows), so they are timed.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "codegen/cuda/tensor_core_gemm.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cudnn_matmul.h"
#include "runtime/cuda/gemm_plan.h"

namespace gf::cuda {

// The cuDNN form of `plan`: one call, f16 or bf16, no batch (a shared B folds it into the rows),
// A not transposed, n and k multiples of 8; nullopt where cuDNN's fused matmul does not take it.
std::optional<CudnnMatmulSpec> cudnn_matmul_spec(const GemmPlan& plan);

// The form of `plan` our tensor-core GEMM takes on a GPU of `compute_capability`
// (GemmLibrary::kGenerated): one call, no batch, A not transposed, B stored [n, k] (a constant
// weight, weight_layout.h), and what tensor_core_gemm_refusal accepts; nullopt elsewhere.
std::optional<codegen::TensorCoreGemmSpec> tensor_core_gemm_spec(const GemmPlan& plan,
                                                                 int compute_capability);

// cuDNN's fused matmul for `spec`, its candidate chosen by timing (the heuristic's first for a
// product of less than kGemmTunedMinFlops); or null when `cublaslt` (the same product through
// cuBLASLt with its algorithm chosen, gemm_tuning.h) timed faster. With `cublaslt` null, cuDNN's
// is the only option. A choice made once for a shape is kept: in this process, and in later
// ones from a file beside the kernel cache (timed_choices.h; keyed by the spec, the cuBLASLt
// algorithm compared, the device and both libraries' versions). Throws kUnsupported naming
// `what` where cuDNN does not take the spec; needs a current context.
std::unique_ptr<CudnnMatmul> choose_cudnn_matmul(const CudnnHandle& handle,
                                                 const CudnnMatmulSpec& spec,
                                                 CublasLtGemm* cublaslt, const std::string& what);

}  // namespace gf::cuda
