// Choosing a cuBLASLt GEMM's algorithm by timing: cuBLASLt's heuristic ranks its candidates by
// an estimate, and on a given GPU another candidate is often faster for the shape at hand
// (split-K for few rows, other tiles with an epilogue). Each candidate runs on scratch buffers
// of the GEMM's shapes once per shape; the fastest is kept.
#pragma once

#include "runtime/cuda/cublaslt_gemm.h"

namespace gf::cuda {

// Products with fewer flops keep the heuristic's first algorithm untimed: timing costs about a
// millisecond per shape, and small products are launch-bound whatever the algorithm.
inline constexpr double kGemmTunedMinFlops = 1e8;

// Times `gemm`'s candidate algorithms when it has several and at least kGemmTunedMinFlops of
// work, and chooses the fastest (the first unless another is at least 3% faster). A shape timed
// before takes the same choice: in this process, and in later ones from a file beside the kernel
// cache (timed_choices.h; keyed by the shape, the device and cuBLASLt's version). Returns
// whether it timed or recalled a choice. Needs a current context; throws kDeviceError /
// kOutOfMemory naming the call.
bool tune_gemm(CublasLtGemm& gemm, size_t workspace_bytes);

}  // namespace gf::cuda
