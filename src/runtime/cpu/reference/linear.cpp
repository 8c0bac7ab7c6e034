// Reference kernels for the linear/NN op family: the BLAS entry points shared by MatMul, Gemm
// and Conv, and the family's registration. The ops live in matmul.cpp, conv.cpp, pool.cpp,
// batch_norm.cpp and attention.cpp.
#include <string>

#include "runtime/cpu/blas.h"
#include "runtime/cpu/reference/linear_family.h"

namespace gf::ref {

namespace {

// Checks that every GEMM size fits BLAS's int.
void blas_sizes(const KernelArgs& args, int64_t m, int64_t n, int64_t k) {
  const int64_t max = cpu::blas_int_max();
  if (m > max || n > max || k > max) {
    kernel_fail(args,
                "GEMM of " + std::to_string(m) + "x" + std::to_string(k) + " by " +
                    std::to_string(k) + "x" + std::to_string(n) + " exceeds the BLAS int range",
                ErrorCode::kUnsupported);
  }
}

template <class T, class Fn>
void gemm_impl(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const T* a, const T* b, T* c, Fn blas) {
  if (m == 0 || n == 0) return;
  blas_sizes(args, m, n, k);
  blas(trans_a, trans_b, m, n, k, T(1), a, trans_a ? m : k, b, trans_b ? k : n, T(0), c, n);
}

}  // namespace

void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, const float* b, float* c) {
  gemm_impl(args, trans_a, trans_b, m, n, k, a, b, c, cpu::sgemm);
}

void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const double* a, const double* b, double* c) {
  gemm_impl(args, trans_a, trans_b, m, n, k, a, b, c, cpu::dgemm);
}

void register_linear_kernels(KernelTable& table) {
  register_matmul_kernels(table);
  register_conv_kernels(table);
  register_pool_kernels(table);
  register_batch_norm_kernels(table);
  register_attention_kernels(table);
}

}  // namespace gf::ref
