// DeviceProgram (label gpu): a CUDA session's program run on caller buffers and embedded in a
// caller's CUDA graph. The oracle is the same session's host-tensor run, bit for bit (the same
// kernels compute both; only the buffers at the edges differ).
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

#include "device_program_util.h"
#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"
#include "runtime/cuda/cuda_program_graph.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf {
namespace {

class DeviceProgramTest : public testing::CudaDeviceTest {};

std::vector<cudaGraphNodeType> node_types(cudaGraph_t graph) {
  size_t count = 0;
  EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &count), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(count);
  EXPECT_EQ(cudaGraphGetNodes(graph, nodes.data(), &count), cudaSuccess);
  std::vector<cudaGraphNodeType> types;
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType t;
    EXPECT_EQ(cudaGraphNodeGetType(n, &t), cudaSuccess);
    types.push_back(t);
  }
  return types;
}

class DeviceProgramModes : public DeviceProgramTest,
                           public ::testing::WithParamInterface<ExecutionMode> {};

TEST_P(DeviceProgramModes, RunsOnCallerBuffersAndRebindsToNewOnes) {
  std::mt19937 rng(1);
  SessionOptions o{Device::kCuda};
  o.mode = GetParam();
  Session session(two_branch_model(rng), o);
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  ASSERT_EQ(program.output_types().size(), 2u);
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Three buffer sets, one of them at odd offsets: each run writes its own outputs.
  for (size_t offset : {0, 4, 0}) {
    const std::vector<Tensor> inputs = {normal(rng, {48, 80}), normal(rng, {48, 80})};
    const std::vector<Tensor> want = session.run(inputs);
    const Buffers buffers = make_buffers(inputs, program, offset);
    program.run(buffers.bindings(), stream);
    CK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < want.size(); ++i) expect_device_equals(buffers.out[i]->get(), want[i]);
  }
  CK(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(, DeviceProgramModes,
                         ::testing::Values(ExecutionMode::kGraph, ExecutionMode::kEager));

// Eager runs start a kernel while ours before it finishes, as graph mode does through
// programmatic edges: capturing an eager run shows those edges (sm_90 and later), none with
// programmatic_launch off, and the captured work gives the same bits as the run without early
// starts.
TEST_F(DeviceProgramTest, EagerRunsStartKernelsEarlyAndCaptureAsProgrammaticEdges) {
  GraphBuilder b("softmax_chain");
  ValueId h = b.input("x", DType::kF32, Shape{64, 256});
  for (int i = 0; i < 4; ++i) h = b.softmax(b.mul(h, b.constant_scalar(3.0f, DType::kF32)));
  b.output(h, "y");
  const Graph g = b.build();
  int major = 0;
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  std::mt19937 rng(4);
  const std::vector<Tensor> inputs = {normal(rng, {64, 256})};
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<char>> results;
  for (bool early : {true, false}) {
    SCOPED_TRACE(early ? "early launches" : "plain launches");
    SessionOptions o{Device::kCuda};
    o.mode = ExecutionMode::kEager;
    o.programmatic_launch = early;
    Session session(g, o);
    DeviceProgram program(session, {{64, 256}});
    ASSERT_GE(program.stats().fused_kernels, 4);
    const Buffers buffers = make_buffers(inputs, program, 0);
    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    program.run(buffers.bindings(), stream);
    CK(cudaStreamEndCapture(stream, &graph));
    size_t count = 0;
    CK(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &count));
    std::vector<cudaGraphNode_t> from(count), to(count);
    std::vector<cudaGraphEdgeData> data(count);
    CK(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count));
    const auto programmatic = std::count_if(
        data.begin(), data.end(),
        [](const cudaGraphEdgeData& d) { return d.type == cudaGraphDependencyTypeProgrammatic; });
    if (early && major >= 9) {
      EXPECT_GE(programmatic, 4);
    } else {
      EXPECT_EQ(programmatic, 0);
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    results.emplace_back(inputs[0].nbytes());
    CK(cudaMemcpy(results.back().data(), buffers.out[0]->get(), results.back().size(),
                  cudaMemcpyDeviceToHost));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  EXPECT_EQ(results[0], results[1]);
  CK(cudaStreamDestroy(stream));
}

TEST_F(DeviceProgramTest, OutputMayBeTheInputBuffer) {
  GraphBuilder b("in_place");
  const ValueId x = b.input("x", DType::kF32, Shape{1000});
  b.output(b.mul(b.unary(Op::kExp, x), x), "y");
  Session session(b.build(), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{1000}});
  std::mt19937 rng(2);
  const Tensor x_host = normal(rng, {1000});
  const Tensor want = session.run({x_host})[0];
  DeviceMemory buffer(x_host.nbytes(), 0);
  CK(cudaMemcpy(buffer.get(), x_host.raw(), x_host.nbytes(), cudaMemcpyHostToDevice));
  program.run({{buffer.get()}, {buffer.get()}}, nullptr);
  CK(cudaDeviceSynchronize());
  expect_device_equals(buffer.get(), want);
}

TEST_F(DeviceProgramTest, PopulatesFlatIntoACallerGraphAndUpdatesInPlace) {
  std::mt19937 rng(3);
  Session session(two_branch_model(rng), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  const std::vector<Tensor> first = {normal(rng, {48, 80}), normal(rng, {48, 80})};
  const std::vector<Tensor> second = {normal(rng, {48, 80}), normal(rng, {48, 80})};
  const Buffers a =
      make_buffers({Tensor(DType::kF32, {48, 80}), Tensor(DType::kF32, {48, 80})}, program, 0);
  const Buffers b = make_buffers(second, program, 0);

  // The caller's graph: its own copy into our input before us, and a copy of our output after.
  DeviceMemory staged(first[0].nbytes(), 0), staged_y(first[1].nbytes(), 0), result(48 * 72 * 4, 0);
  CK(cudaMemcpy(staged.get(), first[0].raw(), first[0].nbytes(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(staged_y.get(), first[1].raw(), first[1].nbytes(), cudaMemcpyHostToDevice));
  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t before[2], after;
  CK(cudaGraphAddMemcpyNode1D(&before[0], graph, nullptr, 0, a.in[0]->get(), staged.get(),
                              first[0].nbytes(), cudaMemcpyDeviceToDevice));
  CK(cudaGraphAddMemcpyNode1D(&before[1], graph, nullptr, 0, a.in[1]->get(), staged_y.get(),
                              first[1].nbytes(), cudaMemcpyDeviceToDevice));
  const GraphSegment seg = program.populate(graph, before, 2, a.bindings());
  CK(cudaGraphAddMemcpyNode1D(&after, graph, &seg.exit, 1, result.get(), a.out[0]->get(),
                              48 * 72 * 4, cudaMemcpyDeviceToDevice));

  // Flat: our kernels are the caller's nodes; no child graph anywhere.
  const std::vector<cudaGraphNodeType> types = node_types(graph);
  EXPECT_EQ(types.size(), 3 + seg.node_count);
  size_t kernels = 0;
  for (cudaGraphNodeType t : types) {
    EXPECT_NE(t, cudaGraphNodeTypeGraph);
    kernels += t == cudaGraphNodeTypeKernel;
  }
  EXPECT_GE(kernels, 4u);  // the two binding kernels, generated kernels, cuBLASLt's kernels

  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, nullptr));
  CK(cudaDeviceSynchronize());
  const std::vector<Tensor> want_first = session.run(first);
  expect_device_equals(result.get(), want_first[0]);
  expect_device_equals(a.out[1]->get(), want_first[1]);

  // Re-bound to b's buffers: our segment reads and writes them; the caller's nodes are as they
  // were (they still copy a's output, which no longer changes).
  program.update(exec, seg, b.bindings());
  CK(cudaGraphLaunch(exec, nullptr));
  CK(cudaDeviceSynchronize());
  const std::vector<Tensor> want_second = session.run(second);
  expect_device_equals(b.out[0]->get(), want_second[0]);
  expect_device_equals(b.out[1]->get(), want_second[1]);
  expect_device_equals(result.get(), want_first[0]);

  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
}

TEST_F(DeviceProgramTest, ChildGraphFormIsOneNodeAndUpdates) {
  std::mt19937 rng(4);
  Session session(two_branch_model(rng), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  const std::vector<Tensor> first = {normal(rng, {48, 80}), normal(rng, {48, 80})};
  const std::vector<Tensor> second = {normal(rng, {48, 80}), normal(rng, {48, 80})};
  const Buffers a = make_buffers(first, program, 0), b = make_buffers(second, program, 0);
  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  const GraphSegment seg = program.populate_child(graph, nullptr, 0, a.bindings());
  EXPECT_EQ(node_types(graph), std::vector<cudaGraphNodeType>{cudaGraphNodeTypeGraph});
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, nullptr));
  CK(cudaDeviceSynchronize());
  expect_device_equals(a.out[0]->get(), session.run(first)[0]);
  program.update(exec, seg, b.bindings());
  CK(cudaGraphLaunch(exec, nullptr));
  CK(cudaDeviceSynchronize());
  expect_device_equals(b.out[0]->get(), session.run(second)[0]);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
}

TEST_F(DeviceProgramTest, BadBindingsAreRefusedNamingTheValue) {
  std::mt19937 rng(5);
  Session session(two_branch_model(rng), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  DeviceMemory m(48 * 80 * 4, 0);
  testing::expect_error(
      [&] {
        program.run({{m.get()}, {m.get(), m.get()}}, nullptr);
      },
      ErrorCode::kInvalidArgument, {"2 inputs and 2 outputs, got 1 and 2"});
  testing::expect_error(
      [&] {
        program.run({{m.get(), nullptr}, {m.get(), m.get()}}, nullptr);
      },
      ErrorCode::kInvalidArgument, {"input 'y' (f32[48,80]) is bound to a null device address"});
  testing::expect_error(
      [&] {
        DeviceProgram(session, {{48, 81}, {48, 80}});
      },
      ErrorCode::kShapeMismatch, {"input 'x' (declared f32[48,80]) got f32[48,81]"});
  // Still usable.
  const std::vector<Tensor> inputs = {normal(rng, {48, 80}), normal(rng, {48, 80})};
  const Buffers buffers = make_buffers(inputs, program, 0);
  program.run(buffers.bindings(), nullptr);
  CK(cudaDeviceSynchronize());
  expect_device_equals(buffers.out[0]->get(), session.run(inputs)[0]);
}

// One step of an iteration: x' = softmax(x * 0.9 + 0.1) * 256, t' = t + 1, and whether t' < limit.
Graph iteration_model(float limit) {
  GraphBuilder b("iteration");
  const ValueId x = b.input("x", DType::kF32, Shape{256});
  const ValueId t = b.input("t", DType::kF32, Shape{1});
  const ValueId scaled =
      b.add(b.mul(x, b.constant_scalar(0.9f, DType::kF32)), b.constant_scalar(0.1f, DType::kF32));
  b.output(b.mul(b.softmax(scaled), b.constant_scalar(256.0f, DType::kF32)), "x_next");
  const ValueId t_next = b.add(t, b.constant_scalar(1.0f, DType::kF32));
  b.output(t_next, "t_next");
  b.output(b.binary(Op::kLess, t_next, b.constant_scalar(limit, DType::kF32)), "again");
  return b.build();
}

// Runs a graph holding `populate` once and returns the bound outputs (x, t).
std::vector<Tensor> run_segment_graph(const std::function<GraphSegment(cudaGraph_t)>& populate,
                                      const Buffers& buffers) {
  cudaGraph_t graph;
  EXPECT_EQ(cudaGraphCreate(&graph, 0), cudaSuccess);
  populate(graph);
  cudaGraphExec_t exec;
  EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<Tensor> out = {Tensor(DType::kF32, {256}), Tensor(DType::kF32, {1})};
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(
        cudaMemcpy(out[i].raw(), buffers.out[i]->get(), out[i].nbytes(), cudaMemcpyDeviceToHost),
        cudaSuccess);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return out;
}

std::vector<Tensor> iteration_inputs(std::mt19937& rng) {
  Tensor t(DType::kF32, {1});
  t.data<float>()[0] = 0;
  return {normal(rng, {256}), t};
}

// The oracle: the session's host runs, one per iteration, each fed the last one's outputs.
std::vector<Tensor> host_iterations(const Session& session, std::vector<Tensor> state, int n) {
  for (int i = 0; i < n; ++i) {
    std::vector<Tensor> out = session.run(state);
    state = {out[0], out[1]};
  }
  return state;
}

TEST_F(DeviceProgramTest, LoopRunsUntilTheProgramsConditionTurnsFalse) {
  Session session(iteration_model(37), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{256}, {1}});
  std::mt19937 rng(6);
  const std::vector<Tensor> inputs = iteration_inputs(rng);
  const Buffers buffers = make_buffers(inputs, program, 0);
  LoopSpec loop;
  loop.carry = {{0, 0}, {1, 1}};
  loop.condition_output = 2;
  GraphSegment seg;
  const std::vector<Tensor> got = run_segment_graph(
      [&](cudaGraph_t g) {
        return seg = program.populate_loop(g, nullptr, 0, buffers.bindings(), loop);
      },
      buffers);
  EXPECT_EQ(seg.node_count, 4u);  // gf_bind_in, the counter's reset, the WHILE node, gf_bind_out
  const std::vector<Tensor> want = host_iterations(session, inputs, 37);
  EXPECT_EQ(got[1].data<float>()[0], 37.0f);
  EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes()), 0);
}

TEST_F(DeviceProgramTest, LoopStopsAtMaxIterationsWhenTheConditionStaysTrue) {
  Session session(iteration_model(1e9f), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{256}, {1}});
  std::mt19937 rng(7);
  const std::vector<Tensor> inputs = iteration_inputs(rng);
  const Buffers buffers = make_buffers(inputs, program, 0);
  LoopSpec loop;
  loop.carry = {{0, 0}, {1, 1}};
  loop.condition_output = 2;
  loop.max_iterations = 5;
  const std::vector<Tensor> got = run_segment_graph(
      [&](cudaGraph_t g) { return program.populate_loop(g, nullptr, 0, buffers.bindings(), loop); },
      buffers);
  EXPECT_EQ(got[1].data<float>()[0], 5.0f);
  const std::vector<Tensor> want = host_iterations(session, inputs, 5);
  EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes()), 0);
}

TEST_F(DeviceProgramTest, MalformedLoopsAreRefusedNamingTheValues) {
  Session session(iteration_model(3), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{256}, {1}});
  std::mt19937 rng(8);
  const Buffers buffers = make_buffers(iteration_inputs(rng), program, 0);
  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  LoopSpec loop;
  loop.carry = {{1, 0}};
  loop.condition_output = 2;
  testing::expect_error([&] { program.populate_loop(graph, nullptr, 0, buffers.bindings(), loop); },
                        ErrorCode::kInvalidArgument,
                        {"output 't_next' (f32[1]) cannot feed input 'x' (f32[256])"});
  loop.carry = {{0, 0}};
  loop.condition_output = 1;
  testing::expect_error([&] { program.populate_loop(graph, nullptr, 0, buffers.bindings(), loop); },
                        ErrorCode::kInvalidArgument,
                        {"the condition 't_next' (f32[1]) must be a bool with one element"});
  CK(cudaGraphDestroy(graph));
}

TEST_F(DeviceProgramTest, IfRunsTheProgramOnlyWhenTheFlagIsSet) {
  Session session(iteration_model(3), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{256}, {1}});
  std::mt19937 rng(9);
  const std::vector<Tensor> inputs = iteration_inputs(rng);
  const std::vector<Tensor> want = session.run(inputs);
  DeviceMemory flag(1, 0);
  for (const bool run : {true, false}) {
    const Buffers buffers = make_buffers(inputs, program, 0);  // outputs zeroed
    CK(cudaMemcpy(flag.get(), &run, 1, cudaMemcpyHostToDevice));
    const std::vector<Tensor> got = run_segment_graph(
        [&](cudaGraph_t g) {
          return program.populate_if(g, nullptr, 0, buffers.bindings(),
                                     static_cast<const bool*>(flag.get()));
        },
        buffers);
    if (run) {
      EXPECT_EQ(std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes()), 0);
      EXPECT_EQ(got[1].data<float>()[0], 1.0f);
    } else {
      for (int64_t i = 0; i < got[0].numel(); ++i) ASSERT_EQ(got[0].data<float>()[i], 0.0f);
      EXPECT_EQ(got[1].data<float>()[0], 0.0f);
    }
  }
}

// cuDNN's attention (SessionOptions::attention = kCudnn) fills a child graph of its own; inside
// an IF node's body it runs there like the program's kernels.
TEST_F(DeviceProgramTest, IfRunsCudnnAttentionInItsBody) {
  if (!cuda::cudnn_available()) GTEST_SKIP() << "built without cuDNN";
  Graph g;
  const TensorType type{DType::kF16, Shape::from_static({2, 4, 96, 64})};
  const ValueId q = g.add_input("q", type), k = g.add_input("k", type), v = g.add_input("v", type);
  Attributes causal;
  causal.set("is_causal", int64_t{1});
  const NodeId n = g.add_node(Op::kAttention, "attention", {q, k, v}, {"y"}, std::move(causal));
  g.add_output(g.node(n).outputs[0]);
  infer_shapes(g);
  SessionOptions o{Device::kCuda};
  o.attention = AttentionPath::kCudnn;
  Session session(g, o);
  DeviceProgram program(session, {{2, 4, 96, 64}, {2, 4, 96, 64}, {2, 4, 96, 64}});
  std::mt19937 rng(10);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 3; ++i)
    inputs.push_back(testing::to_dtype(normal(rng, {2, 4, 96, 64}), DType::kF16));
  const std::vector<Tensor> want = session.run(inputs);
  ASSERT_EQ(session.stats().cudnn_attention_steps, 1);
  DeviceMemory flag(1, 0);
  const bool run = true;
  CK(cudaMemcpy(flag.get(), &run, 1, cudaMemcpyHostToDevice));
  const Buffers buffers = make_buffers(inputs, program, 0);
  cudaGraph_t graph;
  CK(cudaGraphCreate(&graph, 0));
  program.populate_if(graph, nullptr, 0, buffers.bindings(), static_cast<const bool*>(flag.get()));
  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, nullptr));
  CK(cudaDeviceSynchronize());
  expect_device_equals(buffers.out[0]->get(), want[0]);
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
}

// A populate that fails part-way removes what it added (GraphRollback), and only that: the
// caller's nodes and edges stay.
TEST_F(DeviceProgramTest, RollbackRemovesOnlyTheNodesAddedSinceIt) {
  cudaGraph_t graph = nullptr;
  CK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t a = nullptr, b = nullptr;
  CK(cudaGraphAddEmptyNode(&a, graph, nullptr, 0));
  CK(cudaGraphAddEmptyNode(&b, graph, &a, 1));
  auto counts = [&] {
    size_t nodes = 0, edges = 0;
    EXPECT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
    EXPECT_EQ(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), cudaSuccess);
    return std::pair{nodes, edges};
  };
  for (const bool keep : {false, true}) {
    {
      cuda::GraphRollback rollback(graph);
      cudaGraphNode_t c = nullptr, d = nullptr;
      CK(cudaGraphAddEmptyNode(&c, graph, &b, 1));
      CK(cudaGraphAddEmptyNode(&d, graph, &c, 1));
      if (keep) rollback.keep();
    }
    const std::pair<size_t, size_t> want =
        keep ? std::pair{size_t{4}, size_t{3}} : std::pair{size_t{2}, size_t{1}};
    EXPECT_EQ(counts(), want);
  }
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
