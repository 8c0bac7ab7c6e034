// Reference kernels for the linear/NN op family: the BLAS entry points shared by MatMul, Gemm
// and Conv, and the family's registration. The ops live in matmul.cpp, conv.cpp, pool.cpp,
// batch_norm.cpp and attention.cpp.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>

#include "runtime/cpu/reference/linear_family.h"

namespace gf::ref {

namespace {

// Checks that every GEMM size fits BLAS's int and returns them converted.
struct BlasSizes {
  blasint m, n, k;
};

BlasSizes blas_sizes(const KernelArgs& args, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMax = std::numeric_limits<blasint>::max();
  if (m > kMax || n > kMax || k > kMax) {
    kernel_fail(args,
                "GEMM of " + std::to_string(m) + "x" + std::to_string(k) + " by " +
                    std::to_string(k) + "x" + std::to_string(n) + " exceeds the BLAS int range",
                ErrorCode::kUnsupported);
  }
  return {static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k)};
}

// Below this many multiply-adds a GEMM runs on the calling thread: waking OpenBLAS's OpenMP team
// costs more than it saves (a 32x192x64 product took 5x longer on two threads than on one), and on
// a loaded machine a team waiting for a descheduled thread spins for milliseconds.
constexpr int64_t kMinThreadedGemmMacs = int64_t{1} << 21;

// Sets this thread's OpenMP team size (which OpenBLAS's OpenMP build reads per call) for a scope.
class SingleThreadedScope {
 public:
  explicit SingleThreadedScope(bool active) : saved_(active ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreadedScope() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SingleThreadedScope(const SingleThreadedScope&) = delete;
  SingleThreadedScope& operator=(const SingleThreadedScope&) = delete;

 private:
  int saved_;
};

template <class T, class Fn>
void gemm_impl(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
               const T* a, const T* b, T* c, Fn blas) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; BLAS would also accept it, but says nothing of leading dims
    std::fill(c, c + m * n, T(0));
    return;
  }
  const BlasSizes s = blas_sizes(args, m, n, k);
  const SingleThreadedScope small(m * n * k < kMinThreadedGemmMacs);
  blas(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, s.m,
       s.n, s.k, T(1), a, trans_a ? s.m : s.k, b, trans_b ? s.k : s.n, T(0), c, s.n);
}

}  // namespace

void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, const float* b, float* c) {
  gemm_impl(args, trans_a, trans_b, m, n, k, a, b, c, cblas_sgemm);
}

void gemm(const KernelArgs& args, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const double* a, const double* b, double* c) {
  gemm_impl(args, trans_a, trans_b, m, n, k, a, b, c, cblas_dgemm);
}

void register_linear_kernels(KernelTable& table) {
  register_matmul_kernels(table);
  register_conv_kernels(table);
  register_pool_kernels(table);
  register_batch_norm_kernels(table);
  register_attention_kernels(table);
}

}  // namespace gf::ref
