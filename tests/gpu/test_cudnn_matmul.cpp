// cuDNN's matmul with a fused bias + activation epilogue (runtime/cuda/cudnn_matmul.h) on the
// device against the reference interpreter's MatMul, Add and Relu / Gelu (erf and tanh): f16
// and bf16, B as [k, n] and as [n, k], sizes off any tile, every candidate plan; the native CUDA
// graph path (populate into a child graph of ours, then update to new buffers in place); Sessions
// whose products go through it (SessionOptions::gemm_library); and clear refusals. Skips without a
// device or without cuDNN.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>

#include "cuda_backend_util.h"
#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/device.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/cudnn_matmul.h"
#include "test_util.h"

namespace gf {
namespace {

using cuda::MatmulActivation;

class CudnnMatmulTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cudnn_available()) GTEST_SKIP() << "built without cuDNN";
    if (probe_cuda().devices.empty()) GTEST_SKIP() << "no CUDA device";
    cuda::CudaContext::get().make_current();
  }
  static cuda::CudnnHandle& handle() {
    static cuda::CudnnHandle h;
    return h;
  }
};

// W scaled so that x W has a standard deviation of about 1.5, where GELU bends.
Tensor random_matrix(std::mt19937& rng, DType dtype, std::vector<int64_t> dims, float scale) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return testing::to_dtype(t, dtype);
}

using testing::DeviceCopy;

// Operands of one spec and the reference result from f32 copies through the interpreter.
struct Operands {
  Tensor a, b, bias, want;

  Operands(std::mt19937& rng, const cuda::CudnnMatmulSpec& s) {
    a = random_matrix(rng, s.dtype, {s.m, s.k}, 1.0f);
    const float w = 4.5f / std::sqrt(static_cast<float>(s.k));
    b = random_matrix(
        rng, s.dtype,
        s.b_transposed ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n}, w);
    if (s.bias) bias = random_matrix(rng, s.dtype, {s.n}, 1.0f);
    const Tensor b32 = testing::to_dtype(b, DType::kF32);
    want = testing::run_op1(
        Op::kMatMul, {testing::to_dtype(a, DType::kF32),
                      s.b_transposed ? testing::run_op1(Op::kTranspose, {b32},
                                                        {{"perm", std::vector<int64_t>{1, 0}}})
                                     : b32});
    if (s.bias) want = testing::run_op1(Op::kAdd, {want, testing::to_dtype(bias, DType::kF32)});
    if (s.activation == MatmulActivation::kRelu) want = testing::run_op1(Op::kRelu, {want});
    if (s.activation == MatmulActivation::kGeluErf) want = testing::run_op1(Op::kGelu, {want});
    if (s.activation == MatmulActivation::kGeluTanh)
      want = testing::run_op1(Op::kGelu, {want}, {{"approximate", std::string("tanh")}});
  }
};

// Device buffers of one set of operands and a NaN-poisoned output.
struct Buffers {
  DeviceCopy a, b, bias, c, workspace;
  Buffers(const Operands& o, size_t workspace_bytes)
      : a(o.a),
        b(o.b),
        bias(o.bias.defined() ? o.bias : Tensor(o.a.dtype(), {1})),
        c(static_cast<size_t>(o.want.numel()) * dtype_size(o.a.dtype())),
        workspace(workspace_bytes) {
    EXPECT_EQ(cudaMemset(c.p, 0xff, static_cast<size_t>(o.want.numel()) * dtype_size(o.a.dtype())),
              cudaSuccess);
  }
  cuda::CudnnMatmulBuffers view() const { return {a.p, b.p, bias.p, c.p, workspace.p}; }
  Tensor result(const Operands& o) const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    Tensor t(o.a.dtype(), o.want.dims());
    EXPECT_EQ(cudaMemcpy(t.raw(), c.p, t.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return t;
  }
};

// The relative error norm, every element written.
void expect_close(const Tensor& got, const Tensor& want, DType dtype) {
  testing::expect_relative_norm_within(got, want, dtype == DType::kF16 ? 2e-3 : 1e-2);
}

cuda::CudnnMatmulSpec spec_of(DType dtype, int64_t m, int64_t n, int64_t k, bool b_transposed,
                              bool bias, MatmulActivation act) {
  cuda::CudnnMatmulSpec s;
  s.dtype = dtype, s.m = m, s.n = n, s.k = k, s.b_transposed = b_transposed, s.bias = bias;
  s.activation = act;
  return s;
}

TEST_F(CudnnMatmulTest, EveryCandidateMatchesTheReference) {
  std::mt19937 rng(5);
  const DType f16 = DType::kF16, bf16 = DType::kBF16;
  for (const cuda::CudnnMatmulSpec& s : {
           spec_of(f16, 128, 3072, 768, true, true, MatmulActivation::kGeluErf),  // BERT MLP
           spec_of(f16, 77, 136, 264, true, true, MatmulActivation::kGeluTanh),   // odd rows
           spec_of(bf16, 200, 96, 40, false, true, MatmulActivation::kGeluErf),   // B [k, n]
           spec_of(bf16, 33, 520, 128, true, false, MatmulActivation::kRelu),
           spec_of(f16, 1, 768, 768, true, true, MatmulActivation::kNone),  // one row
       }) {
    SCOPED_TRACE(s.to_string());
    cuda::CudnnMatmul mm(handle(), s, "test");
    ASSERT_GE(mm.candidates(), 1u);
    const Operands o(rng, s);
    for (size_t i = 0; i < mm.candidates(); ++i) {
      mm.choose(i);
      SCOPED_TRACE("candidate " + std::to_string(i) + ": " + mm.engine());
      const Buffers b(o, mm.workspace_bytes());
      mm.run(b.view(), nullptr);
      expect_close(b.result(o), o.want, s.dtype);
    }
  }
}

TEST_F(CudnnMatmulTest, PopulatesAChildGraphAndUpdatesItInPlace) {
  const cuda::CudnnMatmulSpec s =
      spec_of(DType::kF16, 256, 1024, 512, true, true, MatmulActivation::kGeluErf);
  cuda::CudnnMatmul mm(handle(), s, "test");
  size_t native = mm.candidates();
  for (size_t i = 0; i < mm.candidates() && native == mm.candidates(); ++i) {
    mm.choose(i);
    if (mm.native_graph()) native = i;
  }
  if (native == mm.candidates())
    GTEST_SKIP() << "no candidate supports cuDNN's native CUDA graph API";
  mm.choose(native);
  std::mt19937 rng(6);
  const Operands first(rng, s), second(rng, s);
  const Buffers bf(first, mm.workspace_bytes()), bs(second, mm.workspace_bytes());
  cudaGraph_t child = nullptr, parent = nullptr;
  ASSERT_EQ(cudaGraphCreate(&child, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphCreate(&parent, 0), cudaSuccess);
  mm.populate(bf.view(), child);
  cudaGraphNode_t node = nullptr;
  ASSERT_EQ(cudaGraphAddChildGraphNode(&node, parent, nullptr, 0, child), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, parent, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  expect_close(bf.result(first), first.want, s.dtype);

  ASSERT_EQ(cudaMemset(bf.c.p, 0, static_cast<size_t>(first.want.numel()) * dtype_size(s.dtype)),
            cudaSuccess);
  mm.update(bs.view(), child);
  ASSERT_EQ(cudaGraphExecChildGraphNodeSetParams(exec, node, child), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  expect_close(bs.result(second), second.want, s.dtype);
  const Tensor untouched = bf.result(first);
  for (int64_t i = 0; i < untouched.numel(); ++i)
    ASSERT_EQ(untouched.element_as_double(i), 0.0) << i;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(parent);
  cudaGraphDestroy(child);
}

// Calls of one spec on one handle (the same product in every layer of a model) share their
// plans: one build, and each call still reads and writes its own buffers, eagerly and as child
// graphs of one parent graph.
TEST_F(CudnnMatmulTest, CallsOfOneSpecShareTheirPlans) {
  const cuda::CudnnHandle h;  // a handle of this test alone: its plan count starts at 0
  const cuda::CudnnMatmulSpec s =
      spec_of(DType::kF16, 96, 512, 256, true, true, MatmulActivation::kGeluErf);
  cuda::CudnnMatmul first(h, s, "layer 1"), second(h, s, "layer 2");
  EXPECT_EQ(h.shared_plans(), 1u);
  const cuda::CudnnMatmul other(
      h, spec_of(DType::kF16, 96, 512, 256, true, true, MatmulActivation::kGeluTanh), "other");
  EXPECT_EQ(h.shared_plans(), 2u);
  ASSERT_EQ(first.candidates(), second.candidates());
  std::mt19937 rng(9);
  const Operands o1(rng, s), o2(rng, s);
  const Buffers b1(o1, first.workspace_bytes()), b2(o2, second.workspace_bytes());
  first.run(b1.view(), nullptr);
  second.run(b2.view(), nullptr);
  expect_close(b1.result(o1), o1.want, s.dtype);
  expect_close(b2.result(o2), o2.want, s.dtype);

  for (size_t i = 0; i < first.candidates(); ++i) {
    first.choose(i);
    second.choose(i);
    if (!first.native_graph()) continue;
    SCOPED_TRACE("candidate " + std::to_string(i) + ": " + first.engine());
    for (const Buffers* b : {&b1, &b2})
      ASSERT_EQ(cudaMemset(b->c.p, 0xff, static_cast<size_t>(o1.want.numel()) * 2), cudaSuccess);
    cudaGraph_t c1 = nullptr, c2 = nullptr, parent = nullptr;
    ASSERT_EQ(cudaGraphCreate(&c1, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphCreate(&c2, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphCreate(&parent, 0), cudaSuccess);
    first.populate(b1.view(), c1);
    second.populate(b2.view(), c2);
    cudaGraphNode_t n1 = nullptr, n2 = nullptr;
    ASSERT_EQ(cudaGraphAddChildGraphNode(&n1, parent, nullptr, 0, c1), cudaSuccess);
    ASSERT_EQ(cudaGraphAddChildGraphNode(&n2, parent, &n1, 1, c2), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, parent, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
    expect_close(b1.result(o1), o1.want, s.dtype);
    expect_close(b2.result(o2), o2.want, s.dtype);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(parent);
    cudaGraphDestroy(c2);
    cudaGraphDestroy(c1);
    break;  // one native candidate is enough
  }
}

// act(x W + bias) in a Session: x an input [m, k], W a constant [k, n], bias a constant [n].
Graph mlp_layer(DType t, int64_t m, int64_t k, int64_t n, MatmulActivation act) {
  std::mt19937 rng(static_cast<uint32_t>(k * 31 + n));
  GraphBuilder b("mlp");
  const ValueId x = b.input("x", t, Shape{m, k});
  const ValueId w =
      b.constant("w", random_matrix(rng, t, {k, n}, 4.5f / std::sqrt(static_cast<float>(k))));
  const ValueId sum = b.add(b.matmul(x, w), b.constant("bias", random_matrix(rng, t, {n}, 0.5f)));
  const ValueId y = act == MatmulActivation::kRelu ? b.unary(Op::kRelu, sum)
                    : act == MatmulActivation::kNone
                        ? b.unary(Op::kIdentity, sum)
                        : b.gelu(sum, act == MatmulActivation::kGeluTanh);
  b.output(y, "y");
  return b.build();
}

// An exact GELU after a product: with GemmLibrary::kCudnn or kTimed the product, its bias and
// the GELU are one cuDNN call and no kernel of ours, in graph and eager mode, f16 and bf16, odd
// sizes and the BERT MLP shape (timed: cuDNN is the only library that fuses it, its candidates
// are timed against each other); with kCublasLt the GELU is a kernel of its own.
TEST_F(CudnnMatmulTest, SessionsFuseAnExactGeluIntoTheProduct) {
  struct Size {
    int64_t m, k, n;
  };
  for (const Size& z : {Size{37, 64, 200}, Size{256, 768, 3072}}) {
    for (DType t : {DType::kF16, DType::kBF16}) {
      const Graph g = mlp_layer(t, z.m, z.k, z.n, MatmulActivation::kGeluErf);
      const std::vector<Tensor> inputs = testing::random_inputs(g, {-1, 1}, 7);
      const std::vector<Tensor> want = ref::run_graph(g, inputs);
      for (GemmLibrary library :
           {GemmLibrary::kTimed, GemmLibrary::kCudnn, GemmLibrary::kCublasLt}) {
        for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
          SCOPED_TRACE(std::string(dtype_name(t)) + " m " + std::to_string(z.m) + " " +
                       std::string(gemm_library_name(library)) +
                       (mode == ExecutionMode::kGraph ? " graph" : " eager"));
          SessionOptions o{Device::kCuda};
          o.mode = mode;
          o.gemm_library = library;
          const Session s(g, o);
          // The reference rounds the product, the sum and the GELU each to 16 bits.
          testing::expect_matches(s.run(inputs)[0], want[0], 2);
          const SessionStats st = s.stats();
          EXPECT_EQ(st.library_calls, 1);
          EXPECT_EQ(st.cudnn_gemm_steps, library != GemmLibrary::kCublasLt ? 1 : 0);
          EXPECT_EQ(st.fused_kernels, library != GemmLibrary::kCublasLt ? 0 : 1);
        }
      }
    }
  }
}

// GemmLibrary::kCudnn takes every epilogue cuBLASLt would (none, bias, Relu, tanh GELU); kTimed
// keeps whichever library timed faster, and a second session of the shape makes the same choice.
TEST_F(CudnnMatmulTest, SessionsRunEveryEpilogueThroughEitherLibrary) {
  for (MatmulActivation act :
       {MatmulActivation::kNone, MatmulActivation::kRelu, MatmulActivation::kGeluTanh}) {
    const Graph g = mlp_layer(DType::kF16, 512, 768, 3072, act);
    const std::vector<Tensor> inputs = testing::random_inputs(g, {-1, 1}, 8);
    const std::vector<Tensor> want = ref::run_graph(g, inputs);
    int auto_choice = -1;
    for (GemmLibrary library : {GemmLibrary::kCudnn, GemmLibrary::kTimed, GemmLibrary::kTimed}) {
      SCOPED_TRACE(std::string(matmul_activation_name(act)) + " " +
                   std::string(gemm_library_name(library)));
      SessionOptions o{Device::kCuda};
      o.gemm_library = library;
      const Session s(g, o);
      testing::expect_matches(s.run(inputs)[0], want[0], 2);
      const SessionStats st = s.stats();
      EXPECT_EQ(st.library_calls, 1);
      EXPECT_EQ(st.fused_kernels, 0);
      if (library == GemmLibrary::kCudnn) {
        EXPECT_EQ(st.cudnn_gemm_steps, 1);
      } else if (auto_choice < 0) {
        auto_choice = st.cudnn_gemm_steps;
        std::printf("%s: kTimed chose %s\n", matmul_activation_name(act),
                    auto_choice ? "cuDNN" : "cuBLASLt");
      } else {
        EXPECT_EQ(st.cudnn_gemm_steps, auto_choice);
      }
    }
  }
}

TEST_F(CudnnMatmulTest, RefusesWhatItCannotRunByName) {
  testing::expect_error(
      [&] {
        cuda::CudnnMatmul(handle(),
                          spec_of(DType::kF32, 4, 8, 8, false, false, MatmulActivation::kNone),
                          "node 'fc'");
      },
      ErrorCode::kUnsupported, {"node 'fc'", "f32"});
  testing::expect_error(
      [&] {
        cuda::CudnnMatmul(handle(),
                          spec_of(DType::kF16, 4, 8, 12, false, true, MatmulActivation::kGeluErf),
                          "node 'fc'");
      },
      ErrorCode::kUnsupported, {"node 'fc'", "4x12x8", "multiples of 8"});
  testing::expect_error(
      [&] {
        cuda::CudnnMatmul(handle(),
                          spec_of(DType::kF16, 0, 8, 8, false, false, MatmulActivation::kNone),
                          "node 'fc'");
      },
      ErrorCode::kInvalidArgument, {"node 'fc'", "positive"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
