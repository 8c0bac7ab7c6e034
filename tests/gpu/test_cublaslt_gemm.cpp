// cuBLASLt GEMMs with epilogues against the reference interpreter (label gpu): the wrapper
// called directly, and Sessions whose cuBLASLt step takes the bias row and Relu/tanh-GELU of a
// GEMM's epilogue (gemm_plan.h), leaving no kernel, where an erf GELU keeps its kernel (cuDNN's
// fused matmul takes it: test_cudnn_matmul.cpp). Built
// with the CUDA parts only; each test skips where no CUDA device is present.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <random>

#include "cuda_backend_util.h"
#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/gemm_tuning.h"
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

// Runs C = epilogue(A B + bias) on the device and returns C on the host; with cuBLASLt's
// candidate algorithm `candidate` (its heuristic's first when negative).
Tensor device_gemm(const cuda::GemmSpec& spec, const Tensor& a, const Tensor& b, const Tensor& bias,
                   const std::vector<int64_t>& c_dims, int candidate = -1) {
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
    if (candidate >= 0) gemm.choose(static_cast<size_t>(candidate));
    gemm.run(da, db, dbias, dc, ws, nullptr);
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(c.raw(), dc, c.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* p : {da, db, dbias, dc, ws})
    if (p) cudaFree(p);
  return c;
}

void expect_close(const Tensor& got, const Tensor& want, double rel) {
  testing::expect_relative_norm_within(got, want, rel);
}

struct Case {
  int64_t batch, m, n, k;
  bool trans_b;
  cuda::GemmEpilogue epilogue;
  DType dtype;

  cuda::GemmSpec spec() const {
    cuda::GemmSpec s;
    s.dtype = dtype;
    s.batch = batch;
    s.m = m;
    s.n = n;
    s.k = k;
    s.trans_b = trans_b;
    s.epilogue = epilogue;
    return s;
  }
  double tolerance() const {
    return dtype == DType::kF32 ? 1e-5 : dtype == DType::kF16 ? 2e-3 : 1e-2;
  }
};

// Random operands of a case (bias undefined without a bias epilogue) and the reference result:
// f32 copies through the interpreter's MatMul, Add, Relu / Gelu(tanh).
struct Operands {
  Tensor a, b, bias, want;

  Operands(std::mt19937& rng, const Case& c) {
    a = random_matrix(rng, c.dtype, {c.batch, c.m, c.k});
    b = random_matrix(rng, c.dtype,
                      c.trans_b ? std::vector<int64_t>{c.batch, c.n, c.k}
                                : std::vector<int64_t>{c.batch, c.k, c.n});
    if (cuda::has_bias(c.epilogue)) bias = random_matrix(rng, c.dtype, {c.n});
    const Tensor a32 = testing::to_dtype(a, DType::kF32), b32 = testing::to_dtype(b, DType::kF32);
    want = testing::run_op1(
        Op::kMatMul, {a32, c.trans_b ? testing::run_op1(Op::kTranspose, {b32},
                                                        {{"perm", std::vector<int64_t>{0, 2, 1}}})
                                     : b32});
    if (bias.defined())
      want = testing::run_op1(Op::kAdd, {want, testing::to_dtype(bias, DType::kF32)});
    if (c.epilogue == cuda::GemmEpilogue::kBiasRelu) want = testing::run_op1(Op::kRelu, {want});
    if (c.epilogue == cuda::GemmEpilogue::kBiasGeluTanh)
      want = testing::run_op1(Op::kGelu, {want}, {{"approximate", std::string("tanh")}});
  }
};

TEST_F(CublasLtGemmTest, MatchesTheReferenceAcrossShapesEpiloguesAndDtypes) {
  std::mt19937 rng(11);
  const Case cases[] = {
      {1, 128, 2304, 768, false, cuda::GemmEpilogue::kBias, DType::kF32},          // GPT-2 QKV
      {1, 128, 3072, 768, false, cuda::GemmEpilogue::kBiasGeluTanh, DType::kF16},  // GPT-2 MLP
      {1, 7, 65, 33, false, cuda::GemmEpilogue::kBiasRelu, DType::kF32},           // odd sizes
      {4, 17, 31, 64, true, cuda::GemmEpilogue::kNone, DType::kBF16},              // batched, B^T
      {1, 1, 768, 768, false, cuda::GemmEpilogue::kBias, DType::kF16},             // decode row
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    const Operands o(rng, c);
    expect_close(device_gemm(c.spec(), o.a, o.b, o.bias, {c.batch, c.m, c.n}), o.want,
                 c.tolerance());
  }
}

// Every algorithm the heuristic offers (the ones gemm_tuning.h times) computes the product; the
// timed choice is one of them, and the same shape later in the process gets the same one.
TEST_F(CublasLtGemmTest, EveryCandidateAlgorithmMatchesAndTheTimedChoiceIsKept) {
  std::mt19937 rng(12);
  for (const Case& c :
       {Case{1, 128, 3072, 768, false, cuda::GemmEpilogue::kBiasGeluTanh, DType::kF16},
        Case{3, 200, 384, 640, true, cuda::GemmEpilogue::kNone, DType::kBF16}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    const cuda::GemmSpec spec = c.spec();
    const Operands o(rng, c);
    cuda::CublasLtHandle handle;
    cuda::CublasLtGemm gemm(handle, spec, size_t{32} << 20);
    std::printf("%s: %zu candidate algorithms\n", spec.to_string().c_str(), gemm.candidates());
    for (size_t i = 0; i < gemm.candidates(); ++i) {
      SCOPED_TRACE("candidate " + std::to_string(i));
      expect_close(device_gemm(spec, o.a, o.b, o.bias, {c.batch, c.m, c.n}, static_cast<int>(i)),
                   o.want, c.tolerance());
    }
    if (gemm.candidates() < 2) continue;
    ASSERT_TRUE(cuda::tune_gemm(gemm, size_t{32} << 20));
    cuda::CublasLtGemm again(handle, spec, size_t{32} << 20);
    ASSERT_TRUE(cuda::tune_gemm(again, size_t{32} << 20));
    EXPECT_EQ(again.chosen(), gemm.chosen());
    std::printf("  timed choice: candidate %zu\n", gemm.chosen());
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

// The exact GELU epilogues are cuDNN's fused matmul's only (gemm_plan.h plans them for it).
TEST_F(CublasLtGemmTest, RefusesTheExactGeluEpilogueByName) {
  cuda::CublasLtHandle handle;
  cuda::GemmSpec spec;
  spec.dtype = DType::kF16;
  spec.m = spec.n = spec.k = 8;
  spec.epilogue = cuda::GemmEpilogue::kBiasGeluErf;
  testing::expect_error([&] { cuda::CublasLtGemm(handle, spec, 1 << 20); },
                        ErrorCode::kUnsupported, {"erf", "bias+gelu"});
}

enum class Activation { kRelu, kGeluTanh, kGeluErf };

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kRelu:
      return "relu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kGeluErf:
      return "gelu_erf";
  }
  return "";
}

// W uniform in +-w_scale(k): with x uniform in [-1, 1], x W has a standard deviation of about
// 1.5 (k * 1/3 * w_scale^2 / 3), where GELU bends.
float w_scale(int64_t k) {
  return 4.5f / std::sqrt(static_cast<float>(k));
}

Tensor scaled(const Tensor& t, float scale) {
  Tensor f = testing::to_dtype(t, DType::kF32);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] *= scale;
  return testing::to_dtype(f, t.dtype());
}

// act(x W + bias): x [..., m, k] an input, W a constant [k, n] (or, with `w_dims`, an input of
// those dims), bias a constant [n] added on the right (on the left with `bias_first`).
Graph mlp_layer(DType t, const Shape& x, int64_t k, int64_t n, Activation act,
                bool bias_first = false, const Shape& w_dims = Shape{}) {
  std::mt19937 rng(static_cast<uint32_t>(k * 31 + n));
  GraphBuilder b(std::string("mlp_") + activation_name(act));
  const ValueId x_in = b.input("x", t, x);  // first: mlp_inputs scales the second input, W
  const ValueId w = w_dims.rank() > 0
                        ? b.input("w", t, w_dims)
                        : b.constant("w", scaled(random_matrix(rng, t, {k, n}), w_scale(k)));
  const ValueId product = b.matmul(x_in, w);
  const ValueId row = b.constant("bias", scaled(random_matrix(rng, t, {n}), 0.5f));
  const ValueId sum = bias_first ? b.add(row, product) : b.add(product, row);
  b.output(act == Activation::kRelu ? b.unary(Op::kRelu, sum)
                                    : b.gelu(sum, act == Activation::kGeluTanh),
           "y");
  return b.build();
}

// Inputs x in [-1, 1]; an input W scaled like the constant one.
std::vector<Tensor> mlp_inputs(const Graph& g, int64_t k) {
  std::vector<Tensor> in = testing::random_inputs(g, {-1, 1}, 7);
  if (in.size() > 1) in[1] = scaled(in[1], w_scale(k));
  return in;
}

// The reference rounds the product, the sum and the GELU each to 16 bits; cuBLASLt rounds once.
double mlp_tolerance_scale(DType t, Activation act) {
  return t != DType::kF32 && act != Activation::kRelu ? 2 : 1;
}

// Runs `g` on the device in graph and eager mode against the reference, the products through
// `library`; the stats must show one library call and `kernels` generated kernels.
void expect_mlp_layer(const Graph& g, const std::vector<Tensor>& inputs, double tol_scale,
                      int kernels, GemmLibrary library = GemmLibrary::kCublasLt) {
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
    SCOPED_TRACE(mode == ExecutionMode::kGraph ? "graph mode" : "eager");
    SessionOptions o{Device::kCuda};
    o.mode = mode;
    o.gemm_library = library;
    const Session s(g, o);
    const std::vector<Tensor> got = s.run(inputs);
    ASSERT_EQ(got.size(), 1u);
    testing::expect_matches(got[0], want[0], tol_scale);
    const SessionStats st = s.stats();
    EXPECT_EQ(st.library_calls, 1);
    EXPECT_EQ(st.fused_kernels, kernels);
    EXPECT_EQ(st.reference_steps, 0);
  }
}

class CublasLtEpilogueSessions : public testing::CudaDeviceTest {};

TEST_F(CublasLtEpilogueSessions, BiasAndReluOrTanhGeluNeedNoKernelAndMatchTheReference) {
  struct Size {
    int64_t m, k, n;
  };
  // Odd sizes (rows and features off every tile), and the bench's MLP shape at 256 rows.
  for (const Size& z : {Size{37, 64, 200}, Size{256, 768, 3072}}) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (Activation act : {Activation::kRelu, Activation::kGeluTanh, Activation::kGeluErf}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + activation_name(act) + " m " +
                     std::to_string(z.m) + " k " + std::to_string(z.k) + " n " +
                     std::to_string(z.n));
        const Graph g = mlp_layer(t, Shape{z.m, z.k}, z.k, z.n, act, act == Activation::kRelu);
        // An erf GELU is no cuBLASLt epilogue: it stays the group's generated kernel.
        expect_mlp_layer(g, mlp_inputs(g, z.k), mlp_tolerance_scale(t, act),
                         act == Activation::kGeluErf ? 1 : 0);
      }
    }
  }
}

// A product of 1e8 flops or more gets its algorithm by timing (gemm_tuning.h), a smaller one the
// heuristic's first; both match the reference.
TEST_F(CublasLtEpilogueSessions, LargeProductsTimeTheirAlgorithmSmallOnesDoNot) {
  for (const auto& [m, tuned] : {std::pair<int64_t, int>{256, 1}, {8, 0}}) {
    SCOPED_TRACE("m " + std::to_string(m));
    const Graph g = mlp_layer(DType::kF16, Shape{m, 768}, 768, 3072, Activation::kGeluTanh);
    const std::vector<Tensor> inputs = mlp_inputs(g, 768);
    SessionOptions options{Device::kCuda};
    options.skinny_gemm = SkinnyGemm::kOff;  // 8 rows would otherwise take the skinny kernel
    const Session s(g, options);
    testing::expect_matches(s.run(inputs)[0], ref::run_graph(g, inputs)[0], 2);
    EXPECT_EQ(s.stats().library_calls, 1);
    EXPECT_EQ(s.stats().tuned_gemms, tuned);
  }
}

TEST_F(CublasLtEpilogueSessions, BatchedProductsAddTheRowToEveryEntry) {
  // A strided batch of three products (bias batch stride 0), and a broadcast batch run as six
  // calls at offsets, each with the same row.
  const Graph strided = mlp_layer(DType::kF16, Shape{3, 37, 64}, 64, 200, Activation::kGeluTanh,
                                  false, Shape{3, 64, 200});
  expect_mlp_layer(strided, mlp_inputs(strided, 64), 2, 0);
  const Graph broadcast = mlp_layer(DType::kBF16, Shape{2, 1, 32, 64}, 64, 200, Activation::kRelu,
                                    true, Shape{3, 64, 200});
  expect_mlp_layer(broadcast, mlp_inputs(broadcast, 64), 1, 0);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
