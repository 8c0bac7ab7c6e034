// DeviceProgram (label gpu): a CUDA session's program run on caller buffers and embedded in a
// caller's CUDA graph. The oracle is the same session's host-tensor run, bit for bit (the same
// kernels compute both; only the buffers at the edges differ).
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>

#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"
#include "gpu_test_util.h"
#include "runtime/cuda/cuda_program_graph.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf {
namespace {

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call

class DeviceProgramTest : public testing::CudaDeviceTest {};

Tensor normal(std::mt19937& rng, std::vector<int64_t> dims) {
  return testing::normal_f32(rng, std::move(dims));
}

Tensor normal_f16(std::mt19937& rng, std::vector<int64_t> dims, float scale = 1.0f) {
  const Tensor f = normal(rng, dims);
  Tensor h(DType::kF16, dims);
  for (int64_t i = 0; i < f.numel(); ++i) h.data<Half>()[i] = Half(scale * f.data<float>()[i]);
  return h;
}

// Two inputs, two outputs; the inputs feed cuBLASLt GEMMs directly (library calls must never
// see a caller's address) and a generated kernel; one output is a GEMM's, one a kernel's.
Graph two_branch_model(std::mt19937& rng) {
  GraphBuilder b("two_branches");
  const ValueId x = b.input("x", DType::kF32, Shape{48, 80});
  const ValueId y = b.input("y", DType::kF32, Shape{48, 80});
  const ValueId w = b.constant("w", normal(rng, {80, 72}));
  const ValueId bias = b.constant("bias", normal(rng, {72}));
  const ValueId left = b.gelu(b.add(b.matmul(x, w), bias), false);
  const ValueId right = b.matmul(b.mul(y, y), w);
  b.output(b.add(left, right), "sum");
  b.output(b.unary(Op::kTanh, x), "tanh_x");
  return b.build();
}

// Device memory with an offset (so that caller buffers need not be aligned), freed at exit.
class DeviceMemory {
 public:
  DeviceMemory(size_t bytes, size_t offset) : offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, bytes + offset), cudaSuccess);
    EXPECT_EQ(cudaMemset(base_, 0, bytes + offset), cudaSuccess);
  }
  ~DeviceMemory() { cudaFree(base_); }
  void* get() const { return static_cast<char*>(base_) + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_;
};

struct Buffers {
  std::vector<std::unique_ptr<DeviceMemory>> in, out;
  DeviceBindings bindings() const {
    DeviceBindings b;
    for (const auto& m : in) b.inputs.push_back(m->get());
    for (const auto& m : out) b.outputs.push_back(m->get());
    return b;
  }
};

Buffers make_buffers(const std::vector<Tensor>& inputs, const DeviceProgram& p, size_t offset) {
  Buffers b;
  for (const Tensor& t : inputs) {
    b.in.push_back(std::make_unique<DeviceMemory>(t.nbytes(), offset));
    EXPECT_EQ(cudaMemcpy(b.in.back()->get(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  for (const TensorType& t : p.output_types()) {
    b.out.push_back(std::make_unique<DeviceMemory>(
        static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype), offset));
  }
  // The memsets and copies above go on the legacy default stream, which the tests' non-blocking
  // streams do not wait for (and a copy from pageable memory may return before its DMA lands):
  // without this, a zeroing memset could land after a run wrote its outputs.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return b;
}

void expect_device_equals(const void* device, const Tensor& want) {
  std::vector<char> got(want.nbytes());
  ASSERT_EQ(cudaMemcpy(got.data(), device, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.raw(), got.size()), 0);
}

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
  const Buffers a = make_buffers({Tensor(DType::kF32, {48, 80}), Tensor(DType::kF32, {48, 80})},
                                 program, 0);
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

bool node_enabled(cudaGraphExec_t exec, cudaGraphNode_t node) {
  unsigned int enabled = 0;
  EXPECT_EQ(cudaGraphNodeGetEnabled(exec, node, &enabled), cudaSuccess);
  return enabled != 0;
}

// A caller's graph holding the program populated once, instantiated; released with it. check()
// launches it and compares each output buffer of `bufs` with the session's run of `in`.
class CallerGraph {
 public:
  CallerGraph(const Session& session, const DeviceProgram& program, const DeviceBindings& first)
      : session_(session) {
    EXPECT_EQ(cudaGraphCreate(&graph_, 0), cudaSuccess);
    seg = program.populate(graph_, nullptr, 0, first);
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph_, 0), cudaSuccess);
  }
  ~CallerGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph_) cudaGraphDestroy(graph_);
  }
  CallerGraph(const CallerGraph&) = delete;
  CallerGraph& operator=(const CallerGraph&) = delete;

  void check(const Buffers& bufs, const std::vector<Tensor>& in) {
    EXPECT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<Tensor> want = session_.run(in);
    for (size_t i = 0; i < want.size(); ++i) expect_device_equals(bufs.out[i]->get(), want[i]);
  }

  GraphSegment seg;
  cudaGraphExec_t exec = nullptr;

 private:
  const Session& session_;
  cudaGraph_t graph_ = nullptr;
};

// Buffers from cudaMalloc (256-byte aligned) are read and written in place: the exit node, which
// copies outputs, has nothing to do and is disabled; at an odd offset they are copied through the
// arena. Either way the results are the session's own, and a re-binding leaves the buffers of
// the previous binding alone.
TEST_F(DeviceProgramTest, AlignedBuffersAreBoundDirectlyAndOthersCopied) {
  std::mt19937 rng(11);
  Session session(two_branch_model(rng), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  EXPECT_EQ(program.stats().direct_bindings, 4);  // x, y, sum, tanh_x
  std::vector<std::vector<Tensor>> inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back({normal(rng, {48, 80}), normal(rng, {48, 80})});
  const Buffers a = make_buffers(inputs[0], program, 0), odd = make_buffers(inputs[1], program, 4),
                c = make_buffers(inputs[2], program, 0);
  CallerGraph g(session, program, a.bindings());
  g.check(a, inputs[0]);  // as populated, the binding kernels on
  program.update(g.exec, g.seg, a.bindings());
  EXPECT_TRUE(node_enabled(g.exec, g.seg.entry));  // points the kernels' tables at a's buffers
  EXPECT_FALSE(node_enabled(g.exec, g.seg.exit));
  g.check(a, inputs[0]);
  program.update(g.exec, g.seg, odd.bindings());
  EXPECT_TRUE(node_enabled(g.exec, g.seg.exit));
  g.check(odd, inputs[1]);
  program.update(g.exec, g.seg, c.bindings());
  EXPECT_FALSE(node_enabled(g.exec, g.seg.exit));
  g.check(c, inputs[2]);
  const std::vector<Tensor> want_odd = session.run(inputs[1]);
  for (size_t i = 0; i < want_odd.size(); ++i) expect_device_equals(odd.out[i]->get(), want_odd[i]);
}

// Byte-sized values at odd addresses are copied like any unaligned buffer (an address's low bits
// carry nothing but the address).
TEST_F(DeviceProgramTest, ByteBuffersAtOddAddressesAreCopied) {
  GraphBuilder b("bytes");
  const ValueId x = b.input("x", DType::kBool, Shape{999});
  b.output(b.unary(Op::kNot, x), "not_x");
  Session session(b.build(), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{999}});
  EXPECT_EQ(program.stats().direct_bindings, 2);
  Tensor x_host(DType::kBool, {999});
  for (int64_t i = 0; i < 999; ++i) x_host.data<bool>()[i] = (i * 7) % 3 == 0;
  const Tensor want = session.run({x_host})[0];
  for (size_t offset : {1, 3, 0}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    DeviceMemory in(999, offset), out(999, offset == 0 ? 0 : offset + 2);
    CK(cudaMemcpy(in.get(), x_host.raw(), 999, cudaMemcpyHostToDevice));
    program.run({{in.get()}, {out.get()}}, nullptr);
    CK(cudaDeviceSynchronize());
    expect_device_equals(out.get(), want);
  }
}

// y = Gelu(x W + b) in f16: the caller's x and y are cuBLASLt's operands themselves. Re-binding
// captures the call again and moves its nodes to the new buffers; an output at an odd offset
// is written through the arena by the exit node instead.
TEST_F(DeviceProgramTest, AGemmReadsAndWritesCallerBuffersInPlace) {
  std::mt19937 rng(12);
  GraphBuilder b("gemm_gelu");
  const ValueId x = b.input("x", DType::kF16, Shape{64, 96});
  const ValueId w = b.constant("w", normal_f16(rng, {96, 200}, 0.1f));
  const ValueId bias = b.constant("bias", normal_f16(rng, {200}));
  b.output(b.gelu(b.add(b.matmul(x, w), bias), true), "y");
  Session session(b.build(), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{64, 96}});
  const SessionStats stats = program.stats();
  EXPECT_EQ(stats.library_calls, 1);
  EXPECT_EQ(stats.direct_bindings, 2);
  std::vector<std::vector<Tensor>> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back({normal_f16(rng, {64, 96})});
  const Buffers a = make_buffers(inputs[0], program, 0), bb = make_buffers(inputs[1], program, 0),
                odd = make_buffers(inputs[2], program, 2);
  {
    CallerGraph g(session, program, a.bindings());
    g.check(a, inputs[0]);
    program.update(g.exec, g.seg, bb.bindings());
    // Nothing to copy; with the epilogue in cuBLASLt no kernel of ours reads a table either.
    EXPECT_FALSE(node_enabled(g.exec, g.seg.exit));
    if (stats.fused_kernels == 0) {
      EXPECT_FALSE(node_enabled(g.exec, g.seg.entry));
    }
    std::printf("GEMM + GELU: %d generated kernels; entry node %s\n", stats.fused_kernels,
                node_enabled(g.exec, g.seg.entry) ? "on" : "off");
    g.check(bb, inputs[1]);
    expect_device_equals(a.out[0]->get(), session.run(inputs[0])[0]);  // left alone
    program.update(g.exec, g.seg, odd.bindings());
    EXPECT_TRUE(node_enabled(g.exec, g.seg.exit));
    g.check(odd, inputs[2]);
    program.update(g.exec, g.seg, a.bindings());
    g.check(a, inputs[0]);
  }
  // The program's own graph goes the same way.
  for (const Buffers* bufs : {&bb, &odd, &a}) {
    program.run(bufs->bindings(), nullptr);
    CK(cudaDeviceSynchronize());
  }
  expect_device_equals(a.out[0]->get(), session.run(inputs[0])[0]);
  expect_device_equals(odd.out[0]->get(), session.run(inputs[2])[0]);
}

// An output bound to an input's buffer is copied out at the end, after every kernel that reads
// the input (which is still read in place) is done.
TEST_F(DeviceProgramTest, AnOutputOnAnInputsBufferWaitsForTheInputsReaders) {
  GraphBuilder b("overwrite");
  const ValueId x = b.input("x", DType::kF32, Shape{256, 300});
  b.output(b.unary(Op::kExp, x), "exp_x");
  b.output(b.softmax(b.mul(x, x)), "softmax_x2");
  const Graph model = b.build();
  Session session(model, SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{256, 300}});
  std::mt19937 rng(13);
  const Tensor x_host = normal(rng, {256, 300});
  const std::vector<Tensor> want = session.run({x_host});
  DeviceMemory buffer(x_host.nbytes(), 0), other(x_host.nbytes(), 0);
  for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
    SessionOptions o{Device::kCuda};
    o.mode = mode;
    Session s(model, o);
    DeviceProgram p(s, {{256, 300}});
    CK(cudaMemcpy(buffer.get(), x_host.raw(), x_host.nbytes(), cudaMemcpyHostToDevice));
    p.run({{buffer.get()}, {buffer.get(), other.get()}}, nullptr);
    CK(cudaDeviceSynchronize());
    expect_device_equals(buffer.get(), want[0]);
    expect_device_equals(other.get(), want[1]);
  }
}

TEST_F(DeviceProgramTest, BadBindingsAreRefusedNamingTheValue) {
  std::mt19937 rng(5);
  Session session(two_branch_model(rng), SessionOptions{Device::kCuda});
  DeviceProgram program(session, {{48, 80}, {48, 80}});
  DeviceMemory m(48 * 80 * 4, 0);
  testing::expect_error([&] { program.run({{m.get()}, {m.get(), m.get()}}, nullptr); },
                        ErrorCode::kInvalidArgument, {"2 inputs and 2 outputs, got 1 and 2"});
  testing::expect_error(
      [&] { program.run({{m.get(), nullptr}, {m.get(), m.get()}}, nullptr); },
      ErrorCode::kInvalidArgument, {"input 'y' (f32[48,80]) is bound to a null device address"});
  testing::expect_error([&] { DeviceProgram(session, {{48, 81}, {48, 80}}); },
                        ErrorCode::kShapeMismatch,
                        {"input 'x' (declared f32[48,80]) got f32[48,81]"});
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
  const ValueId scaled = b.add(b.mul(x, b.constant_scalar(0.9f, DType::kF32)),
                               b.constant_scalar(0.1f, DType::kF32));
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
    EXPECT_EQ(cudaMemcpy(out[i].raw(), buffers.out[i]->get(), out[i].nbytes(),
                         cudaMemcpyDeviceToHost),
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
      [&](cudaGraph_t g) { return seg = program.populate_loop(g, nullptr, 0, buffers.bindings(), loop); },
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
  for (int i = 0; i < 3; ++i) inputs.push_back(testing::to_dtype(normal(rng, {2, 4, 96, 64}), DType::kF16));
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
    const std::pair<size_t, size_t> want = keep ? std::pair{size_t{4}, size_t{3}} : std::pair{size_t{2}, size_t{1}};
    EXPECT_EQ(counts(), want);
  }
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
