// The skinny GEMM kernels on the GPU against products computed here in double (label gpu):
// every epilogue, each dtype, m in 1..16, n and k off the vector width, both layouts of W, and
// a second launch on the same workspace (its counters must have been reset).
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <utility>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/skinny_gemm.h"
#include "runtime/cuda/cuda_module.h"
#include "test_util.h"

namespace gf {
namespace {

using codegen::SkinnyActivation;
using codegen::SkinnyBuffer;
using codegen::SkinnyGemmSpec;
using codegen::SkinnyMath;

#define GF_CUDART(call) ASSERT_EQ((call), cudaSuccess) << #call

class SkinnyGemmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
    const CudaDeviceInfo& d = probe.devices.front();
    cc_ = d.compute_major * 10 + d.compute_minor;
    sms_ = d.multiprocessors;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the primary context, current for the driver API
  }
  int cc_ = 0, sms_ = 0;
};

double activate(const SkinnyGemmSpec& s, double x) {
  switch (s.activation) {
    case SkinnyActivation::kNone: return x;
    case SkinnyActivation::kRelu: return x > 0 ? x : 0;
    case SkinnyActivation::kGeluErf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case SkinnyActivation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case SkinnyActivation::kSilu: return x / (1 + std::exp(-x));
  }
  return x;
}

// C from the definition, in double, on the 16-bit-rounded inputs.
std::vector<double> expected(const SkinnyGemmSpec& s, const Tensor& a, const Tensor& w, const Tensor& wu,
                             const Tensor& bias, const Tensor& r) {
  std::vector<double> c(static_cast<size_t>(s.m * s.n));
  for (int64_t m = 0; m < s.m; ++m) {
    for (int64_t n = 0; n < s.n; ++n) {
      double acc = 0, up = 0;
      for (int64_t k = 0; k < s.k; ++k) {
        const int64_t wi = s.w_transposed ? n * s.k + k : k * s.n + n;
        acc += a.element_as_double(m * s.k + k) * w.element_as_double(wi);
        if (s.gated) up += a.element_as_double(m * s.k + k) * wu.element_as_double(wi);
      }
      if (s.has_bias) acc += bias.element_as_double(n);
      acc = s.gated ? acc / (1 + std::exp(-acc)) * up : activate(s, acc);
      if (s.has_residual) acc += r.element_as_double(m * s.n + n);
      c[static_cast<size_t>(m * s.n + n)] = acc;
    }
  }
  return c;
}

Tensor random_tensor(std::mt19937& rng, DType dtype, std::vector<int64_t> dims, float scale) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return testing::to_dtype(t, dtype);
}

// Each row count (1, 3, 8, 9 and 16: one, and both sides of an MMA's 8 columns) with each of
// `maths`.
std::vector<std::pair<int64_t, SkinnyMath>> row_counts_by_math(
    const std::vector<SkinnyMath>& maths) {
  std::vector<std::pair<int64_t, SkinnyMath>> out;
  for (int64_t m : {1, 3, 8, 9, 16})
    for (SkinnyMath math : maths) out.emplace_back(m, math);
  return out;
}

TEST_F(SkinnyGemmGpu, MatchesTheDefinitionForEveryEpilogueDtypeAndRowCount) {
  codegen::NvrtcOptions cache;
  cache.cache_dir = std::filesystem::temp_directory_path() / ("gf_test_skinny_gpu_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(cache);
  const CudaDriverApi& cu = cuda_driver();
  std::mt19937 rng(5);
  struct Shape { int64_t n, k; };
  // {133, 968} and {40, 200}: k a multiple of 8 but not of the tensor-core kernel's 32-element
  // chunks; n = 133 not a multiple of its 8-column tiles, 40 not of its wider ones.
  const Shape shapes[] = {{768, 768}, {2304, 768}, {771, 1003}, {5, 3072},
                          {1000, 37}, {133, 968},  {40, 200}};
  int cases = 0;
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    for (const Shape& sh : shapes) {
      for (bool transposed : {false, true}) {
        // Where both units can take the product, each of them; else the one there is.
        const bool both = transposed && dtype != DType::kF32 && sh.k % 8 == 0;
        std::vector<SkinnyMath> maths{SkinnyMath::kAuto};
        if (both) maths = {SkinnyMath::kCudaCores, SkinnyMath::kTensorCores};
        for (const auto& [m, math] : row_counts_by_math(maths)) {
          SkinnyGemmSpec s;
          s.dtype = dtype;
          s.m = m;
          s.n = sh.n;
          s.k = sh.k;
          s.w_transposed = transposed;
          s.math = math;
          // Tensor cores: the layout's tile, and each wider one in turn.
          if (math == SkinnyMath::kTensorCores) s.tensor_core_tile_cols = (cases % 3) * 16;
          // Every other group of six: W constant, so the kernel may move it before its wait.
          s.prefetch_weights = (cases / 6) % 2 == 1;
          s.constant_epilogue = s.prefetch_weights;
          // The epilogue cycles with the case number so that every one meets every layout.
          const int e = cases++ % 6;
          s.gated = e == 5;
          s.has_bias = e == 1 || e == 2 || e == 5;
          s.activation = e == 2 ? SkinnyActivation::kGeluTanh : e == 3 ? SkinnyActivation::kGeluErf
                         : e == 4 ? SkinnyActivation::kSilu : e == 1 ? SkinnyActivation::kRelu
                                  : SkinnyActivation::kNone;
          s.has_residual = e == 3 || e == 4;
          // With W constant, the kernel also moves a next kernel's weights (here its own W and
          // W_up, 6 bytes short of whole 16-byte pieces) towards L2: results stay the same.
          if (s.prefetch_weights) {
            const uint64_t w_bytes = static_cast<uint64_t>(s.n * s.k) * dtype_size(dtype);
            s.next_w_bytes = w_bytes - 6;
            s.next_w_up_bytes = s.gated ? w_bytes - 6 : 0;
          }
          SCOPED_TRACE(s.to_string());
          const float wscale = 1.0f / std::sqrt(static_cast<float>(s.k));
          const std::vector<int64_t> wdims = transposed ? std::vector<int64_t>{s.n, s.k}
                                                        : std::vector<int64_t>{s.k, s.n};
          Tensor a = random_tensor(rng, dtype, {s.m, s.k}, 1.0f);
          Tensor w = random_tensor(rng, dtype, wdims, wscale);
          Tensor wu = random_tensor(rng, dtype, wdims, wscale);
          Tensor bias = random_tensor(rng, dtype, {s.n}, 0.5f);
          Tensor r = random_tensor(rng, dtype, {s.m, s.n}, 1.0f);
          Tensor c(dtype, {s.m, s.n});

          const codegen::CudaKernelSource src = codegen::emit_skinny_gemm_kernel(s, "gf_skinny", sms_);
          const codegen::CubinPtr cubin = compiler.compile(src.source, cc_);
          const std::unique_ptr<CudaModule> module = CudaModule::load(*cubin, "gf_skinny");
          const CUfunction fn = module->function("gf_skinny");
          std::vector<void*> table;  // device pointers, in the kernel's buffer order
          void* c_dev = nullptr;
          for (SkinnyBuffer role : codegen::skinny_gemm_buffers(s, sms_)) {
            const bool next_w = role == SkinnyBuffer::kNextW,
                       next_up = role == SkinnyBuffer::kNextWUp;
            const Tensor* host = role == SkinnyBuffer::kA                ? &a
                                 : role == SkinnyBuffer::kW || next_w    ? &w
                                 : role == SkinnyBuffer::kWUp || next_up ? &wu
                                 : role == SkinnyBuffer::kBias           ? &bias
                                 : role == SkinnyBuffer::kResidual       ? &r
                                 : role == SkinnyBuffer::kC              ? &c
                                                                         : nullptr;
            const size_t bytes = host ? host->nbytes() : codegen::skinny_gemm_workspace_bytes(s, sms_);
            void* p = nullptr;
            GF_CUDART(cudaMalloc(&p, bytes));
            table.push_back(p);
            if (role == SkinnyBuffer::kC) c_dev = p;
            if (role == SkinnyBuffer::kWorkspace) {
              GF_CUDART(cudaMemset(p, 0, bytes));
            } else if (role == SkinnyBuffer::kC) {
              GF_CUDART(cudaMemset(p, 0xff, bytes));  // NaN: an unwritten element shows
            } else {
              GF_CUDART(cudaMemcpy(p, host->raw(), bytes, cudaMemcpyHostToDevice));
            }
          }
          void* table_dev = nullptr;
          GF_CUDART(cudaMalloc(&table_dev, table.size() * sizeof(void*)));
          GF_CUDART(cudaMemcpy(table_dev, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice));
          const std::vector<double> want = expected(s, a, w, wu, bias, r);
          // Twice: the second launch finds the workspace as the first left it.
          for (int launch = 0; launch < 2; ++launch) {
            void* params[] = {&table_dev};
            // A tensor-core kernel's cluster size is in its entry (__cluster_dims__).
            check_cu(cu.cuLaunchKernel(fn, src.launch.grid, 1, 1, src.launch.block, 1, 1, 0, nullptr, params, nullptr),
                     "cuLaunchKernel");
            GF_CUDART(cudaDeviceSynchronize());
            GF_CUDART(cudaMemcpy(c.raw(), c_dev, c.nbytes(), cudaMemcpyDeviceToHost));
            double err = 0, norm = 0;
            for (int64_t i = 0; i < c.numel(); ++i) {
              const double g = c.element_as_double(i), x = want[static_cast<size_t>(i)];
              ASSERT_FALSE(std::isnan(g)) << "element " << i << " unwritten or NaN (launch " << launch << ")";
              err += (g - x) * (g - x);
              norm += x * x;
            }
            const double tol = dtype == DType::kF32 ? 1e-5 : dtype == DType::kF16 ? 2e-3 : 1e-2;
            EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), tol) << "launch " << launch;
          }
          for (void* p : table) cudaFree(p);
          cudaFree(table_dev);
        }
      }
    }
  }
  std::filesystem::remove_all(cache.cache_dir);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
