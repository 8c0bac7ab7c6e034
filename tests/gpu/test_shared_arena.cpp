// The session arena (label gpu): the programs of all shapes of a CUDA session compute at the
// same device addresses, so their runs must take turns on every path: runs on caller buffers
// queued on different streams without a host wait, Session::run from several threads, graph and
// eager mode. Overlapping runs would overwrite each other's values; the oracle is exact
// arithmetic (y = 2 relu(x) + x: the product is exact, so the sum is one rounding on any
// device). Skips without a GPU. The memory figures are in test_cuda_reliability.cpp.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cstring>
#include <thread>

#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"

namespace gf {
namespace {

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call

constexpr int64_t kWidth = 1024;

Graph doubled_relu_plus_x() {
  GraphBuilder b("doubled_relu_plus_x");
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), kWidth});
  b.output(b.add(b.mul(b.unary(Op::kRelu, x), b.constant_scalar(2.0f, DType::kF32)), x), "y");
  return b.build();
}

// Distinct values per (n, round), so a run that read another run's input shows.
Tensor input(int64_t n, int round) {
  Tensor t(DType::kF32, {n, kWidth});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = 0.25f * static_cast<float>((i * 7 + n * 3 + round * 11) % 61) - 7.5f;
  return t;
}

Tensor oracle(const Tensor& x) {
  Tensor y(DType::kF32, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    y.data<float>()[i] = 2.0f * (v > 0 ? v : 0.0f) + v;
  }
  return y;
}

bool equal(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// One run on caller buffers: its program, input, oracle and device buffers.
struct CallerRun {
  size_t program = 0;
  Tensor x, want;
  void* in = nullptr;
  void* out = nullptr;
};

CallerRun caller_run(size_t program, int64_t rows, int round) {
  CallerRun r;
  r.program = program;
  r.x = input(rows, round);
  r.want = oracle(r.x);
  EXPECT_EQ(cudaMalloc(&r.in, r.x.nbytes()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&r.out, r.x.nbytes()), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(r.in, r.x.raw(), r.x.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
  // The copy is on the legacy default stream, which the runs' non-blocking streams do not wait
  // for, and from pageable memory it may return before its DMA lands.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return r;
}

// How many runs' outputs differ from their oracle; frees every run's buffers.
int wrong_outputs(std::vector<CallerRun>& runs) {
  int wrong = 0;
  for (CallerRun& r : runs) {
    Tensor got(DType::kF32, r.x.dims());
    EXPECT_EQ(cudaMemcpy(got.raw(), r.out, got.nbytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    wrong += equal(got, r.want) ? 0 : 1;
    cudaFree(r.in);
    cudaFree(r.out);
  }
  return wrong;
}

std::vector<std::unique_ptr<DeviceProgram>> programs_for(const Session& session,
                                                         const std::vector<int64_t>& rows) {
  std::vector<std::unique_ptr<DeviceProgram>> programs;
  for (int64_t n : rows)
    programs.push_back(
        std::make_unique<DeviceProgram>(session, std::vector<std::vector<int64_t>>{{n, kWidth}}));
  return programs;
}

class SharedArena : public testing::CudaDeviceTest,
                    public ::testing::WithParamInterface<ExecutionMode> {
 protected:
  SessionOptions options() const {
    SessionOptions o{Device::kCuda};
    o.mode = GetParam();
    return o;
  }
};

// Two shapes' programs on two streams, queued alternately with no host wait between: each run
// must wait for the other program's run before it, or its input copy overwrites the values the
// other is computing with.
TEST_P(SharedArena, RunsOfTwoShapesOnTwoStreamsTakeTurns) {
  Session session(doubled_relu_plus_x(), options());
  const std::vector<int64_t> rows = {4096, 2048};
  const std::vector<std::unique_ptr<DeviceProgram>> programs = programs_for(session, rows);
  ASSERT_TRUE(programs[0]->stats().arena_bytes > 0);
  cudaStream_t streams[2];
  for (cudaStream_t& s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  constexpr int kRounds = 12;
  std::vector<CallerRun> runs;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t p = 0; p < 2; ++p) runs.push_back(caller_run(p, rows[p], round));
  }
  ASSERT_FALSE(HasFailure());
  for (size_t i = 0; i < runs.size(); ++i) {
    programs[i % 2]->run(DeviceBindings{{runs[i].in}, {runs[i].out}}, streams[i % 2]);
  }
  for (cudaStream_t s : streams) CK(cudaStreamSynchronize(s));
  EXPECT_EQ(wrong_outputs(runs), 0) << "of " << runs.size() << " runs";
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
  EXPECT_EQ(session.stats().cached_programs, 2);
  EXPECT_GE(session.stats().shared_arena_bytes, programs[0]->stats().arena_bytes);
}

// Runs on one stream record nothing for other streams; the first run on another stream must
// still follow them, though the caller destroyed their stream as soon as it queued them (work
// queued on a destroyed stream still runs). Then runs alternate between two more streams.
TEST_P(SharedArena, ARunOnANewStreamFollowsRunsOnAStreamSinceDestroyed) {
  Session session(doubled_relu_plus_x(), options());
  const std::vector<int64_t> rows = {4096, 2048};
  const std::vector<std::unique_ptr<DeviceProgram>> programs = programs_for(session, rows);
  std::vector<CallerRun> runs;
  for (int round = 0; round < 11; ++round)
    runs.push_back(caller_run(round % 2, rows[round % 2], round));
  cudaStream_t gone, streams[2];
  CK(cudaStreamCreateWithFlags(&gone, cudaStreamNonBlocking));
  for (cudaStream_t& s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (size_t i = 0; i < 3; ++i) {
    programs[runs[i].program]->run(DeviceBindings{{runs[i].in}, {runs[i].out}}, gone);
  }
  CK(cudaStreamDestroy(gone));
  for (size_t i = 3; i < runs.size(); ++i) {
    programs[runs[i].program]->run(DeviceBindings{{runs[i].in}, {runs[i].out}}, streams[i % 2]);
  }
  for (cudaStream_t s : streams) CK(cudaStreamSynchronize(s));
  EXPECT_EQ(wrong_outputs(runs), 0) << "of " << runs.size() << " runs";
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
}

// Session::run from four threads, each on a shape of its own.
TEST_P(SharedArena, ThreadsOnShapesOfTheirOwnGetExactResults) {
  Session session(doubled_relu_plus_x(), options());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const int64_t n = 512 * (t + 1) + t;
      for (int round = 0; round < 10; ++round) {
        const Tensor x = input(n, round);
        if (!equal(session.run({x})[0], oracle(x))) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(session.stats().cached_programs, 4);
}

INSTANTIATE_TEST_SUITE_P(, SharedArena,
                         ::testing::Values(ExecutionMode::kGraph, ExecutionMode::kEager));

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
