// The CUDA executor's skinny GEMM steps on the GPU (label gpu), against the reference
// interpreter: every case of skinny_gemm_step_cases.h (M = 1..16 in one graph; f32, f16, bf16;
// MatMul W [K, N], stored [N, K] when constant, and Gemm transB W [N, K]; no epilogue, bias,
// bias + Relu, bias + GELU, residual; K and N off the tiles) with SessionOptions::skinny_gemm
// forced to always, in graph and eager mode, twice each (the second run finds the k-split
// workspaces as the first left them), with stats that show sixteen skinny kernels and nothing
// else; with skinny_gemm off the same products run through cuBLASLt, and with auto the products
// of W [N, K] and few rows take the kernel, the others cuBLASLt.
// In graph mode the sixteen independent products may run concurrently: each step's workspace
// is its own. Skips without a GPU.
#ifdef GF_HAVE_CUDA

#include "cuda_backend_util.h"
#include "gpu_test_util.h"
#include "runtime/cuda/skinny_gemm_step.h"
#include "skinny_gemm_step_cases.h"

namespace gf {
namespace {

class CudaSkinnyGemmSteps : public testing::CudaDeviceTest {};

// The reference rounds every op of a decomposed GELU to 16 bits; the kernel rounds once.
double tolerance_scale(const testing::SkinnyStepCase& c) {
  return c.epilogue == testing::SkinnyEpilogue::kBiasGelu && c.dtype != DType::kF32 ? 2 : 1;
}

void expect_outputs_match(const Session& s, const std::vector<Tensor>& inputs,
                          const std::vector<Tensor>& want, double tol_scale) {
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::vector<Tensor> got = s.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("output y" + std::to_string(i + 1));
      testing::expect_matches(got[i], want[i], tol_scale);
    }
  }
}

TEST_F(CudaSkinnyGemmSteps, EveryRowCountDtypeLayoutAndEpilogueMatchesTheReference) {
  const std::vector<testing::SkinnyStepCase> cases = testing::skinny_step_cases();
  uint32_t seed = 1;
  for (const testing::SkinnyStepCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> inputs = testing::random_inputs(c.graph, {-1, 1}, seed++);
    const std::vector<Tensor> want = ref::run_graph(c.graph, inputs);
    for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
      SCOPED_TRACE(mode == ExecutionMode::kGraph ? "graph mode" : "eager");
      SessionOptions o{Device::kCuda};
      o.mode = mode;
      o.skinny_gemm = SkinnyGemm::kAlways;
      const Session s(c.graph, o);
      expect_outputs_match(s, inputs, want, tolerance_scale(c));
      const SessionStats st = s.stats();
      EXPECT_EQ(st.skinny_gemm_steps, 16);
      EXPECT_EQ(st.fused_kernels, 16) << "an epilogue kernel is left";
      EXPECT_EQ(st.library_calls, 0);
      EXPECT_EQ(st.reference_steps, 0);
      EXPECT_EQ(st.graph_nodes > 0, mode == ExecutionMode::kGraph);
    }
    SessionOptions off{Device::kCuda};
    off.skinny_gemm = SkinnyGemm::kOff;
    const Session s(c.graph, off);
    expect_outputs_match(s, inputs, want, tolerance_scale(c));
    const SessionStats st = s.stats();
    EXPECT_EQ(st.skinny_gemm_steps, 0);
    // cuBLASLt, or our tensor-core GEMM for an exact Gelu after a constant weight on sm_90
    // (GemmLibrary::kAuto).
    EXPECT_EQ(st.library_calls + st.tensor_core_gemm_steps, 16);
    // auto: the kernel for W stored [N, K] (a Gemm's, or a constant MatMul weight) up to
    // kSkinnyGemmAutoMaxRows rows.
    int taken = 0;
    for (int64_t m = 1; m <= cuda::kSkinnyGemmAutoMaxRows; ++m)
      taken += c.gemm || !testing::skinny_case_w_is_input(m);
    const Session chosen(c.graph, SessionOptions{Device::kCuda});
    expect_outputs_match(chosen, inputs, want, tolerance_scale(c));
    EXPECT_EQ(chosen.stats().skinny_gemm_steps, taken);
    EXPECT_EQ(chosen.stats().library_calls + chosen.stats().tensor_core_gemm_steps, 16 - taken);
  }
}

// A LayerNormalization or RMSNormalization alone before a product goes into the skinny kernel
// (it normalizes A's rows as it reads them): one kernel for norm, product, bias and GELU, in
// every dtype, with K a multiple of the vector width or not, in graph and eager mode, against
// the reference interpreter (which stores the norm's output, rounded, as the kernel rounds it).
TEST_F(CudaSkinnyGemmSteps, ANormBeforeTheProductRunsInsideItsKernel) {
  std::mt19937 rng(11);
  uint32_t seed = 20;
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kF32}) {
    for (Op norm : {Op::kLayerNormalization, Op::kRMSNormalization}) {
      for (int64_t k : {768, 203}) {
        for (int64_t m : {1, 3}) {
          const int64_t n = 136;
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(op_name(norm)) + " m " +
                       std::to_string(m) + " k " + std::to_string(k));
          GraphBuilder b("norm_product");
          const ValueId x = b.input("x", dtype, Shape{m, k});
          const ValueId scale = b.constant("scale", testing::skinny_uniform(rng, {k}, 1.0f, dtype));
          const ValueId y =
              norm == Op::kLayerNormalization
                  ? b.layer_norm(x, scale,
                                 b.constant("beta", testing::skinny_uniform(rng, {k}, 0.5f, dtype)))
                  : b.op1(Op::kRMSNormalization, {x, scale},
                          {{"axis", int64_t{-1}}, {"epsilon", 1e-6f}});
          const ValueId w = b.constant(
              "w", testing::skinny_uniform(rng, {k, n}, 1.0f / std::sqrt(float(k)), dtype));
          const ValueId bias = b.constant("bias", testing::skinny_uniform(rng, {n}, 0.1f, dtype));
          b.output(b.gelu(b.add(b.matmul(y, w), bias), false), "out");
          const Graph g = b.build();
          const std::vector<Tensor> inputs = testing::random_inputs(g, {-2, 2}, seed++);
          const std::vector<Tensor> want = ref::run_graph(g, inputs);
          for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
            SessionOptions o{Device::kCuda};
            o.mode = mode;
            const Session s(g, o);
            // The reference rounds every op of its decomposed GELU to 16 bits; the kernel once.
            expect_outputs_match(s, inputs, want, dtype == DType::kF32 ? 1 : 2);
            EXPECT_EQ(s.stats().skinny_gemm_steps, 1);
            EXPECT_EQ(s.stats().fused_kernels, 1) << "the norm kept a kernel";
          }
        }
      }
    }
  }
}

TEST_F(CudaSkinnyGemmSteps, SeventeenRowsRunThroughCublasLt) {
  GraphBuilder b("rows17");
  std::mt19937 rng(3);
  b.output(b.matmul(b.input("x", DType::kF16, Shape{17, 96}),
                    b.constant("w", testing::skinny_uniform(rng, {96, 80}, 0.1f, DType::kF16))),
           "y");
  const Graph g = b.build();
  const std::vector<Tensor> inputs = testing::random_inputs(g, {-1, 1}, 4);
  const Session s(g, SessionOptions{Device::kCuda});
  expect_outputs_match(s, inputs, ref::run_graph(g, inputs), 1);
  EXPECT_EQ(s.stats().skinny_gemm_steps, 0);
  EXPECT_EQ(s.stats().library_calls, 1);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
