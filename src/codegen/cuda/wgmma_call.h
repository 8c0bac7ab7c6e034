// Device functions wrapping one wgmma.mma_async (sm_90a) of a given width, written out for the
// kernels that use them (the tensor-core GEMM, the wgmma attention kernel): the instruction
// names every accumulator register, so its inline assembly is generated per width.
#pragma once

#include <string>

#include "graphfuse/dtype.h"

namespace gf::codegen {

// `static void name(float* d, uint64_t a, uint64_t b, int accumulate)`: d (the n / 2
// accumulators of each thread of the warpgroup) = A x B (+ d where accumulate is nonzero) for
// an m64 x n x k16 product of f16/bf16 `dtype`, A and B given by shared-memory descriptors,
// both K-major.
std::string wgmma_shared_operands_function(const std::string& name, DType dtype, int n);

// `static void name(float* d, const uint32_t* a, uint64_t b)`: d += A x B, A the warpgroup's
// fragment registers (4 per thread, the mma.sync m16n8k16 A layout per warp), B a
// shared-memory descriptor, MN-major where `b_mn_major` (wgmma's transpose flag).
std::string wgmma_register_a_function(const std::string& name, DType dtype, int n, bool b_mn_major);

}  // namespace gf::codegen
