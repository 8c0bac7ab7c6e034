// cuBLASLt GEMMs with epilogues against the reference interpreter (label gpu). Built with the
// CUDA parts only; each test skips where no CUDA device is present.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <random>

#include "runtime/cuda/cublaslt_gemm.h"
#include "test_util.h"

namespace gf {
namespace {

class CublasLtGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (probe_cuda().devices.empty()) GTEST_SKIP() << "no CUDA device";
  }
};

Tensor random_matrix(std::mt19937& rng, DType dtype, std::vector<int64_t> dims) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return testing::to_dtype(t, dtype);
}

// Runs C = epilogue(A B + bias) on the device and returns C on the host.
Tensor device_gemm(const cuda::GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias,
                   const std::vector<int64_t>& c_dims) {
  Tensor c(spec.dtype, c_dims);
  void *da = nullptr, *db = nullptr, *dbias = nullptr, *dc = nullptr, *ws = nullptr;
  const size_t ws_bytes = size_t{32} << 20;
  EXPECT_EQ(cudaMalloc(&da, a.nbytes()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&db, b.nbytes()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dc, c.nbytes()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&ws, ws_bytes), cudaSuccess);
  if (bias.defined()) {
    EXPECT_EQ(cudaMalloc(&dbias, bias.nbytes()), cudaSuccess);
  }
  EXPECT_EQ(cudaMemcpy(da, a.raw(), a.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(db, b.raw(), b.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  if (bias.defined()) {
    EXPECT_EQ(cudaMemcpy(dbias, bias.raw(), bias.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  EXPECT_EQ(cudaMemset(dc, 0xff, c.nbytes()), cudaSuccess);  // NaN poison: unwritten shows
  {
    cuda::CublasLtHandle handle;
    cuda::CublasLtGemm gemm(handle, spec, ws_bytes);
    gemm.run(da, db, dbias, dc, ws, nullptr);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(c.raw(), dc, c.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* p : {da, db, dbias, dc, ws})
    if (p) cudaFree(p);
  return c;
}

void expect_close(const Tensor& got, const Tensor& want, double rel) {
  ASSERT_EQ(got.dims(), want.dims());
  double err = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.element_as_double(i), w = want.element_as_double(i);
    ASSERT_FALSE(std::isnan(g)) << "element " << i << " unwritten or NaN";
    err += (g - w) * (g - w);
    norm += w * w;
  }
  EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), rel);
}

struct Case {
  int64_t batch, m, n, k;
  bool trans_b;
  cuda::GemmEpilogue epilogue;
  DType dtype;
};

TEST_F(CublasLtGemmTest, MatchesTheReferenceAcrossShapesEpiloguesAndDtypes) {
  std::mt19937 rng(11);
  const Case cases[] = {
      {1, 128, 2304, 768, false, cuda::GemmEpilogue::kBias, DType::kF32},       // GPT-2 QKV
      {1, 128, 3072, 768, false, cuda::GemmEpilogue::kBiasGeluTanh, DType::kF16},  // GPT-2 MLP
      {1, 7, 65, 33, false, cuda::GemmEpilogue::kBiasRelu, DType::kF32},         // odd sizes
      {4, 17, 31, 64, true, cuda::GemmEpilogue::kNone, DType::kBF16},           // batched, B^T
      {1, 1, 768, 768, false, cuda::GemmEpilogue::kBias, DType::kF16},          // decode row
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    cuda::GemmSpec spec;
    spec.dtype = c.dtype;
    spec.batch = c.batch;
    spec.m = c.m;
    spec.n = c.n;
    spec.k = c.k;
    spec.trans_b = c.trans_b;
    spec.epilogue = c.epilogue;
    const Tensor a = random_matrix(rng, c.dtype, {c.batch, c.m, c.k});
    const Tensor b = random_matrix(rng, c.dtype, c.trans_b ? std::vector<int64_t>{c.batch, c.n, c.k}
                                                             : std::vector<int64_t>{c.batch, c.k, c.n});
    const bool has_bias = c.epilogue == cuda::GemmEpilogue::kBias ||
                          c.epilogue == cuda::GemmEpilogue::kBiasRelu ||
                          c.epilogue == cuda::GemmEpilogue::kBiasGeluTanh;
    const Tensor bias = has_bias ? random_matrix(rng, c.dtype, {c.n}) : Tensor();
    const Tensor got = device_gemm(spec, a, b, bias, {c.batch, c.m, c.n});
    // Reference: f32 copies through the interpreter's MatMul, Add, Relu / Gelu(tanh).
    const Tensor a32 = testing::to_dtype(a, DType::kF32), b32 = testing::to_dtype(b, DType::kF32);
    Tensor want = testing::run_op1(
        Op::kMatMul, {a32, c.trans_b ? testing::run_op1(Op::kTranspose, {b32}, {{"perm", std::vector<int64_t>{0, 2, 1}}}) : b32});
    if (has_bias) want = testing::run_op1(Op::kAdd, {want, testing::to_dtype(bias, DType::kF32)});
    if (c.epilogue == cuda::GemmEpilogue::kBiasRelu) want = testing::run_op1(Op::kRelu, {want});
    if (c.epilogue == cuda::GemmEpilogue::kBiasGeluTanh)
      want = testing::run_op1(Op::kGelu, {want}, {{"approximate", std::string("tanh")}});
    expect_close(got, want, c.dtype == DType::kF32 ? 1e-5 : c.dtype == DType::kF16 ? 2e-3 : 1e-2);
  }
}

TEST_F(CublasLtGemmTest, RejectsIntegerDtypesClearly) {
  cuda::CublasLtHandle handle;
  cuda::GemmSpec spec;
  spec.dtype = DType::kI32;
  spec.m = spec.n = spec.k = 4;
  testing::expect_error([&] { cuda::CublasLtGemm(handle, spec, 1 << 20); }, ErrorCode::kUnsupported,
                        {"i32"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
