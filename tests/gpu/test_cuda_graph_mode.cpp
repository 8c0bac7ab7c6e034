// Graph mode of the CUDA executor (label gpu): a program's steps as one CUDA graph give the
// same bits as running them eagerly, over new inputs each run, with library calls (cuBLASLt)
// captured in place beside generated kernels on independent branches.
#ifdef GF_HAVE_CUDA

#include <cstring>
#include <random>

#include "graphfuse/builder.h"
#include "graphfuse/models.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "gpu_test_util.h"

namespace gf {
namespace {

class CudaGraphMode : public testing::CudaDeviceTest {};

Tensor normal(std::mt19937& rng, std::vector<int64_t> dims) {
  return testing::normal_f32(rng, std::move(dims));
}

void expect_bitwise_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dims(), b.dims());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0);
}

TEST_F(CudaGraphMode, Gpt2StackInAGraphEqualsEagerBitForBitOverNewInputs) {
  models::Gpt2Config c;
  c.layers = 2;
  c.d_model = 96;
  c.heads = 3;
  const Graph g = models::gpt2_stack(c);
  SessionOptions graph_options{Device::kCuda};
  graph_options.mode = ExecutionMode::kGraph;
  SessionOptions eager_options = graph_options;
  eager_options.mode = ExecutionMode::kEager;
  Session graph_session(g, graph_options), eager_session(g, eager_options);
  std::mt19937 rng(3);
  for (int run = 0; run < 3; ++run) {  // new data each run through the same instantiated graph
    const Tensor x = normal(rng, {2, 16, 96});
    const Tensor in_graph = graph_session.run({x})[0];
    expect_bitwise_equal(in_graph, eager_session.run({x})[0]);
    const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
    double err = 0, scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      err = std::max(err, std::fabs(in_graph.element_as_double(i) - want.element_as_double(i)));
      scale = std::max(scale, std::fabs(want.element_as_double(i)));
    }
    EXPECT_LE(err / scale, 1e-4) << "run " << run;
  }
  EXPECT_GT(graph_session.stats().graph_nodes, 0);
  EXPECT_EQ(eager_session.stats().graph_nodes, 0);
}

TEST_F(CudaGraphMode, ProgrammaticLaunchGivesTheBitsOfPlainEdgesAndOfEagerRuns) {
  // A decode-shaped stack in f16 (4 rows: skinny GEMMs, norms, attention, elementwise chains),
  // so nearly every edge is kernel to kernel: with programmatic edges each kernel starts while
  // the one before it finishes and waits for its inputs inside. Any missing wait would read
  // inputs not yet written, so the outputs would differ from plain edges and from eager runs.
  models::Gpt2Config c;
  c.layers = 3;
  c.d_model = 128;
  c.heads = 4;
  const Graph g = models::gpt2_stack(c);
  SessionOptions early{Device::kCuda};
  early.precision = Precision::kFp16;
  SessionOptions plain = early;
  plain.programmatic_launch = false;
  SessionOptions eager = early;
  eager.mode = ExecutionMode::kEager;
  Session early_session(g, early), plain_session(g, plain), eager_session(g, eager);
  std::mt19937 rng(11);
  for (int run = 0; run < 20; ++run) {
    const Tensor x = normal(rng, {1, 4, 128});
    const Tensor got = early_session.run({x})[0];
    SCOPED_TRACE("run " + std::to_string(run));
    expect_bitwise_equal(got, plain_session.run({x})[0]);
    expect_bitwise_equal(got, eager_session.run({x})[0]);
  }
  const SessionStats st = early_session.stats();
  EXPECT_GT(st.graph_nodes, 0);
  if (testing::cuda_compute_capability() >= 90) {
    // Every kernel-to-kernel edge can be one: at least one per layer's chain of kernels.
    EXPECT_GE(st.programmatic_edges, c.layers) << st.graph_nodes << " nodes";
  } else {
    EXPECT_EQ(st.programmatic_edges, 0);
  }
  EXPECT_EQ(plain_session.stats().programmatic_edges, 0);
  EXPECT_GT(plain_session.stats().graph_nodes, 0);
}

TEST_F(CudaGraphMode, IndependentLibraryBranchesAreCapturedInPlace) {
  // Two MatMul + bias + GELU branches on two inputs (one input would let the sibling-MatMul pass
  // merge them), joined by an add: cuBLASLt calls and generated kernels on two branches that the
  // graph may run side by side.
  std::mt19937 rng(9);
  GraphBuilder b("branches");
  auto branch = [&](const std::string& name) {
    const ValueId x = b.input(name, DType::kF32, Shape{64, 80});
    const ValueId w = b.constant(name + ".w", normal(rng, {80, 72}));
    const ValueId bias = b.constant(name + ".b", normal(rng, {72}));
    return b.gelu(b.add(b.matmul(x, w), bias), false);
  };
  const ValueId left = branch("left");
  const ValueId right = branch("right");
  b.output(b.add(left, b.op1(Op::kTanh, {right})), "y");
  const Graph g = b.build();
  Session session(g, SessionOptions{Device::kCuda});
  for (int run = 0; run < 2; ++run) {
    const std::vector<Tensor> in = {normal(rng, {64, 80}), normal(rng, {64, 80})};
    const Tensor got = session.run(in)[0];
    const Tensor want = ref::run_graph(g, in)[0];
    std::vector<double> expected(static_cast<size_t>(want.numel()));
    for (int64_t i = 0; i < want.numel(); ++i) expected[static_cast<size_t>(i)] = want.element_as_double(i);
    testing::expect_values(got, want.dims(), expected, 1e-4, 1e-4);
  }
  const SessionStats st = session.stats();
  EXPECT_EQ(st.library_calls, 2);
  EXPECT_GT(st.graph_nodes, 3) << "library calls " << st.library_calls << ", kernels " << st.fused_kernels;
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
