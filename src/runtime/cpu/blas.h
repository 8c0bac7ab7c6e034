// The one door to OpenBLAS for the CPU backends (reference kernels and anchor kernels alike):
// single-precision and double GEMM on row-major buffers with explicit leading dimensions, run on
// the calling thread when the product is too small to pay for OpenBLAS's thread team.
#pragma once

#include <cstdint>

namespace gf::cpu {

// Largest m, n, k (and leading dimension) that BLAS's int can carry.
int64_t blas_int_max();

// C = alpha * op(A) op(B) + beta * C, row-major; op(A) is m x k, op(B) k x n. Sizes must fit
// blas_int_max() (callers check and report). m, n or k of 0 are handled (k == 0 scales C by beta).
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc);

}  // namespace gf::cpu
