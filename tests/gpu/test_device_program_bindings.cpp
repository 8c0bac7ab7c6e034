// DeviceProgram (label gpu) on caller buffers used in place (runtime/cuda/program_bindings.h):
// aligned buffers that only kernels and cuBLASLt GEMMs touch are read and written directly,
// others are copied through the program's arena. The oracle is the same session's host-tensor
// run, bit for bit.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "device_program_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf {
namespace {

class DeviceBindingTest : public testing::CudaDeviceTest {};

Tensor normal_f16(std::mt19937& rng, std::vector<int64_t> dims, float scale = 1.0f) {
  const Tensor f = normal(rng, dims);
  Tensor h(DType::kF16, dims);
  for (int64_t i = 0; i < f.numel(); ++i) h.data<Half>()[i] = Half(scale * f.data<float>()[i]);
  return h;
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
TEST_F(DeviceBindingTest, AlignedBuffersAreBoundDirectlyAndOthersCopied) {
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
TEST_F(DeviceBindingTest, ByteBuffersAtOddAddressesAreCopied) {
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
void gemm_reads_and_writes_caller_buffers_in_place(GemmLibrary library, bool tanh, bool cudnn) {
  std::mt19937 rng(12);
  GraphBuilder b("gemm_gelu");
  const ValueId x = b.input("x", DType::kF16, Shape{64, 96});
  const ValueId w = b.constant("w", normal_f16(rng, {96, 200}, 0.1f));
  const ValueId bias = b.constant("bias", normal_f16(rng, {200}));
  b.output(b.gelu(b.add(b.matmul(x, w), bias), tanh), "y");
  SessionOptions options{Device::kCuda};
  options.gemm_library = library;
  Session session(b.build(), options);
  DeviceProgram program(session, {{64, 96}});
  const SessionStats stats = program.stats();
  EXPECT_EQ(stats.library_calls, 1);
  EXPECT_EQ(stats.cudnn_gemm_steps, cudnn ? 1 : 0);
  EXPECT_EQ(stats.direct_bindings, 2);
  std::vector<std::vector<Tensor>> inputs;
  for (int i = 0; i < 4; ++i) inputs.push_back({normal_f16(rng, {64, 96})});
  const Buffers a = make_buffers(inputs[0], program, 0), bb = make_buffers(inputs[1], program, 0),
                odd = make_buffers(inputs[2], program, 2);
  {
    CallerGraph g(session, program, a.bindings());
    g.check(a, inputs[0]);
    program.update(g.exec, g.seg, bb.bindings());
    // Nothing to copy; with the epilogue in the library no kernel of ours reads a table either.
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

// Through cuBLASLt (tanh GELU in its epilogue) and through cuDNN's fused matmul (with the tanh
// and the exact GELU), whose captured nodes move the same way.
TEST_F(DeviceBindingTest, AGemmReadsAndWritesCallerBuffersInPlace) {
  struct Case {
    GemmLibrary library;
    bool tanh;
  };
  for (const Case c : {Case{GemmLibrary::kCublasLt, true}, Case{GemmLibrary::kCudnn, true},
                       Case{GemmLibrary::kTimed, false}}) {
    const bool cudnn = c.library != GemmLibrary::kCublasLt;
    if (cudnn && !cuda::cudnn_available()) continue;
    SCOPED_TRACE(std::string(gemm_library_name(c.library)) + (c.tanh ? " tanh" : " erf"));
    gemm_reads_and_writes_caller_buffers_in_place(c.library, c.tanh, cudnn);
  }
}

// An output bound to an input's buffer is copied out at the end, after every kernel that reads
// the input (which is still read in place) is done.
TEST_F(DeviceBindingTest, AnOutputOnAnInputsBufferWaitsForTheInputsReaders) {
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

// A run on the buffers of the run before it leaves the kernels' pointer tables as they are (they
// point there already) and reads what the buffers hold now; a run on other buffers, on copied
// ones, and any run after a caller's graph holding the program ran (its entry node points the
// tables at that graph's buffers) points them again. Graph and eager runs alike.
TEST_F(DeviceBindingTest, RunsOnTheBuffersOfTheRunBeforeKeepTheTables) {
  std::mt19937 rng(14);
  const Graph model = two_branch_model(rng);
  for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
    SCOPED_TRACE(mode == ExecutionMode::kGraph ? "graph" : "eager");
    SessionOptions options{Device::kCuda};
    options.mode = mode;
    Session session(model, options);
    DeviceProgram program(session, {{48, 80}, {48, 80}});
    std::vector<std::vector<Tensor>> inputs, want;
    for (int i = 0; i < 5; ++i) {
      inputs.push_back({normal(rng, {48, 80}), normal(rng, {48, 80})});
      want.push_back(session.run(inputs.back()));
    }
    const Buffers a = make_buffers(inputs[0], program, 0), b = make_buffers(inputs[1], program, 0),
                  odd = make_buffers(inputs[2], program, 4);
    const auto fill = [&](const Buffers& bufs, size_t k) {
      for (size_t i = 0; i < bufs.in.size(); ++i)
        CK(cudaMemcpy(bufs.in[i]->get(), inputs[k][i].raw(), inputs[k][i].nbytes(),
                      cudaMemcpyHostToDevice));
      CK(cudaDeviceSynchronize());
    };
    const auto run_and_check = [&](const Buffers& bufs, size_t k) {
      SCOPED_TRACE("inputs " + std::to_string(k));
      program.run(bufs.bindings(), nullptr);
      CK(cudaDeviceSynchronize());
      for (size_t i = 0; i < bufs.out.size(); ++i)
        expect_device_equals(bufs.out[i]->get(), want[k][i]);
    };
    run_and_check(a, 0);
    fill(a, 3);
    run_and_check(a, 3);  // the same buffers, new values
    run_and_check(b, 1);
    fill(a, 4);
    run_and_check(a, 4);    // back to a's buffers
    run_and_check(odd, 2);  // copied through the arena
    fill(a, 0);
    run_and_check(a, 0);
    const std::vector<Tensor> own = session.run(inputs[3]);  // the session's host path between
    for (size_t i = 0; i < own.size(); ++i)
      EXPECT_EQ(std::memcmp(own[i].raw(), want[3][i].raw(), own[i].nbytes()), 0);
    fill(a, 3);
    run_and_check(a, 3);
    if (mode != ExecutionMode::kGraph) continue;
    CallerGraph g(session, program, b.bindings());
    g.check(b, inputs[1]);
    fill(a, 4);
    run_and_check(a, 4);
    g.check(b, inputs[1]);
    run_and_check(a, 4);
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
