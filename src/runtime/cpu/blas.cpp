#include "runtime/cpu/blas.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

// OpenBLAS's DYNAMIC_ARCH entry points (not in its headers; weak, so that another BLAS links).
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace gf::cpu {

namespace {

// OpenBLAS picks its kernels by CPU model; a model newer than the library (Emerald Rapids,
// family 6 model 207, under OpenBLAS 0.3.21) falls back to the SSE3 "Prescott" kernels, which
// ran ResNet-50 3x slower than the AVX-512 ones. Such a fallback is replaced by the kernels the
// CPU's features allow, unless the user chose a core with OPENBLAS_CORETYPE.
void select_blas_kernels() {
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const char* core = openblas_get_corename();
  if (core == nullptr || std::strcmp(core, "Prescott") != 0) return;
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    better = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    better = "Haswell";
  }
  if (better == nullptr) return;
  // The library reads the variable when it (re)initialises its kernel table.
  setenv("OPENBLAS_CORETYPE", better, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

void ensure_blas_kernels() {
  static std::once_flag once;
  std::call_once(once, select_blas_kernels);
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
void gemm_impl(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, Fn blas) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; BLAS would accept it too, but says nothing of leading dims
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  ensure_blas_kernels();
  const SingleThreadedScope small(m * n * k < kMinThreadedGemmMacs);
  blas(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
       static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
       static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

}  // namespace

int64_t blas_int_max() {
  return std::numeric_limits<blasint>::max();
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm_impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cblas_sgemm);
}

void dgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
           const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
           int64_t ldc) {
  gemm_impl(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cblas_dgemm);
}

}  // namespace gf::cpu
