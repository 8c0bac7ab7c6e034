// Whole models on the CUDA executor against the reference interpreter: the built-in GPT-2
// stack in every precision, the torch.onnx exports of tests/models/data (with the ONNX front
// end), and the program's own accounting (device paths taken, arena against its lower bound).
// Skips without a GPU.
#ifdef GF_HAVE_CUDA

#include <cstdio>
#include <filesystem>

#include "cuda_backend_util.h"
#include "graphfuse/models.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/session_programs.h"
#ifdef GF_HAVE_ONNX
#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "recorded_models.h"
#endif

namespace gf {
namespace {

class CudaModels : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
  }
};

// Largest difference relative to the largest reference magnitude.
double max_relative_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dims(), want.dims());
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, std::fabs(got.element_as_double(i) - want.element_as_double(i)));
    scale = std::max(scale, std::fabs(want.element_as_double(i)));
  }
  return scale > 0 ? err / scale : err;
}

models::Gpt2Config small_gpt2(DType dtype) {
  models::Gpt2Config c;
  c.layers = 2;
  c.d_model = 96;
  c.heads = 3;
  c.dtype = dtype;
  return c;
}

TEST_F(CudaModels, Gpt2StackInEveryPrecisionMatchesTheReference) {
  const Graph g = models::gpt2_stack(small_gpt2(DType::kF32));
  Tensor x(DType::kF32, {2, 13, 96});
  {
    std::mt19937 rng(5);
    std::normal_distribution<float> d;
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  }
  const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
  const std::pair<Precision, double> cases[] = {
      {Precision::kFp32, 1e-4}, {Precision::kTf32, 2e-2}, {Precision::kFp16, 5e-2}, {Precision::kBf16, 1e-1}};
  for (const auto& [precision, tol] : cases) {
    SCOPED_TRACE(std::string(precision_name(precision)));
    SessionOptions o{Device::kCuda};
    o.precision = precision;
    Session s(g, o);
    const Tensor got = s.run({x})[0];
    ASSERT_EQ(got.dtype(), DType::kF32);
    EXPECT_LE(max_relative_error(got, want), tol);
    EXPECT_GT(s.stats().library_calls, 0);
  }
}

TEST_F(CudaModels, Gpt2StackStoredInSixteenBitsMatchesTheReference) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Graph g = models::gpt2_stack(small_gpt2(t));
    Tensor xf(DType::kF32, {1, 9, 96});
    std::mt19937 rng(6);
    std::normal_distribution<float> d;
    for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] = d(rng);
    const Tensor x = testing::to_dtype(xf, t);
    const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
    Session s(g, SessionOptions{Device::kCuda});
    EXPECT_LE(max_relative_error(s.run({x})[0], want), t == DType::kF16 ? 3e-2 : 8e-2);
  }
}

TEST_F(CudaModels, Gpt2ProgramTakesDevicePathsAndPlacesItsArenaNearTheBound) {
  const Graph g = models::gpt2_stack(small_gpt2(DType::kF32));
  const Tensor x(DType::kF32, {2, 16, 96});
  const SessionOptions o{Device::kCuda};
  cuda::CudaProgram program(specialise(g, {x}, o));
  const cuda::CudaProgramStats& st = program.stats();
  EXPECT_GT(st.generated_kernels, 0);
  EXPECT_GT(st.library_calls, 0);
  EXPECT_EQ(st.host_steps, 0);
  EXPECT_LE(static_cast<double>(st.arena_bytes), 1.1 * static_cast<double>(st.arena_lower_bound));
  std::string reasons;
  for (const std::string& r : st.fallback_reasons) reasons += "\n  " + r;
  RecordProperty("host_steps", st.host_steps);
  std::printf("gpt2: %d generated kernels, %d anchor kernels, %d library calls, %d host steps%s\n",
              st.generated_kernels, st.anchor_kernels, st.library_calls, st.host_steps, reasons.c_str());
  const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
  EXPECT_LE(max_relative_error(program.run(std::vector<Tensor>{x})[0], want), 1e-4);
}

// y = Gelu(x W + b): with tanh, cuBLASLt's bias+GELU epilogue computes all of it in one call;
// with erf (no cuBLASLt epilogue) the Gelu is one generated kernel after it. The skinny GEMM
// kernel takes either whole.
TEST_F(CudaModels, MatMulBiasGeluIsOneGemmWithItsEpilogueWhereTheLibraryHasIt) {
  for (const bool tanh : {true, false}) {
    SCOPED_TRACE(tanh ? "tanh" : "erf");
    GraphBuilder b("mlp");
    Tensor w(DType::kF32, {32, 48}), bias(DType::kF32, {48});
    const ValueId x = b.input("x", DType::kF32, Shape{4, 32});
    b.output(b.gelu(b.add(b.matmul(x, b.constant("w", w)), b.constant("bias", bias)), tanh));
    const Graph g = b.build();
    const Tensor in(DType::kF32, {4, 32});
    cuda::CudaProgramOptions cublas;
    cublas.skinny_gemm =
        SkinnyGemm::kOff;  // 4 rows would be a skinny GEMM kernel with the epilogue in it
    cuda::CudaProgram program(specialise(g, {in}, SessionOptions{Device::kCuda}), cublas);
    EXPECT_EQ(program.stats().library_calls, 1);
    EXPECT_EQ(program.stats().generated_kernels, tanh ? 0 : 1);
    EXPECT_EQ(program.stats().host_steps, 0);
    cuda::CudaProgramOptions always;
    always.skinny_gemm = SkinnyGemm::kAlways;
    cuda::CudaProgram skinny(specialise(g, {in}, SessionOptions{Device::kCuda}), always);
    EXPECT_EQ(skinny.stats().library_calls, 0);
    EXPECT_EQ(skinny.stats().generated_kernels, 1);
    EXPECT_EQ(skinny.stats().skinny_gemm_steps, 1);
  }
}

TEST_F(CudaModels, ReshapeOfAnInputAliasesItsStorage) {
  GraphBuilder b("view");
  b.output(b.reshape(b.input("x", DType::kF32, Shape{3, 4}), {2, 6}), "y");
  const Graph g = b.build();
  const Tensor x = testing::random_inputs(g, {}, 1)[0];
  cuda::CudaProgram program(specialise(g, {x}, SessionOptions{Device::kCuda}));
  // The Reshape (and any Identity the passes leave at the output) share the input's storage:
  // no copy kernel.
  EXPECT_GE(program.stats().aliased_views, 1);
  EXPECT_EQ(program.stats().generated_kernels, 0);
  const Tensor y = program.run(std::vector<Tensor>{x})[0];
  testing::expect_matches(y, x.reshaped({2, 6}));
}

#ifdef GF_HAVE_ONNX

struct OnnxCase {
  std::string file, prefix;
  std::vector<std::string> inputs;
};

void PrintTo(const OnnxCase& c, std::ostream* os) { *os << c.file; }

class CudaOnnxModels : public CudaModels, public ::testing::WithParamInterface<OnnxCase> {};

TEST_P(CudaOnnxModels, MatchTheReferenceInterpreter) {
  const OnnxCase& c = GetParam();
  const testing::RecordedModel m = testing::load_recorded_model(c.file, c.prefix, c.inputs);
  const Graph& g = m.graph;
  const std::vector<Tensor>& inputs = m.inputs;
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  Session s(g, SessionOptions{Device::kCuda});
  const std::vector<Tensor> got = s.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_relative_error(got[i], want[i]), 1e-3) << "output " << i;
  // Every node on the device (the gathers of the embeddings and of BERT's mask read their
  // indices in generated kernels), so the program runs as one CUDA graph.
  const SessionStats st = s.stats();
  std::string reasons;
  for (const std::string& r : st.fallback_reasons) reasons += "\n  " + r;
  EXPECT_EQ(st.fallback_nodes, 0) << reasons;
  EXPECT_EQ(st.cuda_graph_programs, st.programs_compiled) << reasons;
}

// The same in fp16 (--precision fp16): attention runs on tensor cores (head size 16, at least 8
// query rows), within the tolerance of the GPT-2 stack's fp16 run.
TEST_P(CudaOnnxModels, InHalfPrecisionMatchTheReferenceWithinItsTolerance) {
  const OnnxCase& c = GetParam();
  const testing::RecordedModel m = testing::load_recorded_model(c.file, c.prefix, c.inputs);
  const std::vector<Tensor> want = ref::run_graph(m.graph, m.inputs);
  SessionOptions o{Device::kCuda};
  o.precision = Precision::kFp16;
  Session s(m.graph, o);
  const std::vector<Tensor> got = s.run(m.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_relative_error(got[i], want[i]), 5e-2) << "output " << i;
  EXPECT_EQ(s.stats().fallback_nodes, 0);
}

// The same through cuDNN's fused attention (SessionOptions::attention = kCudnn): every attention
// without a mask goes to cuDNN, populated into the program's CUDA graph through cuDNN's native
// graph API where the engine has it, reading its operands where the views put them.
TEST_P(CudaOnnxModels, ThroughCudnnAttentionInHalfPrecisionMatchTheReference) {
  if (!cuda::cudnn_available()) GTEST_SKIP() << "built without cuDNN";
  const OnnxCase& c = GetParam();
  const testing::RecordedModel m = testing::load_recorded_model(c.file, c.prefix, c.inputs);
  const std::vector<Tensor> want = ref::run_graph(m.graph, m.inputs);
  SessionOptions o{Device::kCuda};
  o.precision = Precision::kFp16;
  o.attention = AttentionPath::kCudnn;
  Session s(m.graph, o);
  const std::vector<Tensor> got = s.run(m.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(max_relative_error(got[i], want[i]), 5e-2) << "output " << i;
  const SessionStats st = s.stats();
  EXPECT_EQ(st.fallback_nodes, 0);
  EXPECT_EQ(st.cuda_graph_programs, st.programs_compiled);
  // ViT's attention has no mask: all of it is cuDNN's. (BERT's has a padding mask: none is.)
  if (c.prefix == "vit_tiny") {
    EXPECT_GT(st.cudnn_attention_steps, 0);
  }
  if (c.prefix == "bert_tiny") {
    EXPECT_EQ(st.cudnn_attention_steps, 0);
  }
  std::printf("%s: %d attention steps through cuDNN\n", c.file.c_str(), st.cudnn_attention_steps);
}

INSTANTIATE_TEST_SUITE_P(
    TorchExports, CudaOnnxModels,
    ::testing::Values(OnnxCase{"gpt2_tiny.torchscript.onnx", "gpt2_tiny", {"input_ids"}},
                      OnnxCase{"gpt2_tiny.dynamo.onnx", "gpt2_tiny", {"input_ids"}},
                      OnnxCase{"bert_tiny.torchscript.onnx", "bert_tiny", {"input_ids", "attention_mask"}},
                      // The ResNet-50 files keep no weights (tests/models/fill_weights.py fills
                      // them); tests/models/check_torch_exports.py --device cuda runs those.
                      OnnxCase{"bert_tiny.dynamo.onnx", "bert_tiny", {"input_ids", "attention_mask"}},
                      OnnxCase{"vit_tiny.torchscript.onnx", "vit_tiny", {"pixel_values"}},
                      OnnxCase{"vit_tiny.dynamo.onnx", "vit_tiny", {"pixel_values"}},
                      OnnxCase{"llama_tiny.torchscript.onnx", "llama_tiny", {"input_ids"}},
                      OnnxCase{"llama_tiny.dynamo.onnx", "llama_tiny", {"input_ids"}}),
    [](const ::testing::TestParamInfo<OnnxCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.size() - 5);
      for (char& ch : name)
        if (ch == '.') ch = '_';
      return name;
    });
#endif

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
