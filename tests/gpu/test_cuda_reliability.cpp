// Reliability of the CUDA executor (label gpu): sessions and evicted programs give their device
// memory back, threads sharing one session get the bits of a single thread, the program cache
// stays within its bounds over a thousand shapes, and an allocation the device cannot satisfy is
// kOutOfMemory after which the session still runs. Skips without a GPU.
//
// Free memory is read with cudaMemGetInfo (device-wide, so the GPU must not be shared with
// other work while these run).
//
// GF_STRESS_DIVISOR=N (default 1) divides the repeat counts of the stress tests (shapes, session
// cycles, runs per thread) and drops their wall-clock bound: compute-sanitizer's racecheck slows
// every kernel down a hundredfold, and the kernels it checks are the same at any count.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cuda_backend_util.h"
#ifdef GF_HAVE_ONNX
#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "recorded_models.h"
#endif

namespace gf {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// Allowed drift of free memory: the driver maps device memory in 2 MiB pages and may keep one
// partly used page of its own (streams, graph executables) mapped after everything of ours is
// freed. Each test checks that what it would catch (one program's buffers leaked per cycle, or
// the evicted programs kept) is many times this.
constexpr uint64_t kSlack = 2 * kMiB;
// What a program may hold beyond the bytes the cache counts (arena, weights, workspace): each
// allocation rounded up to a 2 MiB page, its pointer tables, stream and CUDA graph executable.
constexpr uint64_t kProgramOverhead = 8 * kMiB;
// Library kernels load lazily (CUDA's lazy module loading) and stay loaded for the process:
// shapes that make cuBLASLt pick kernels it had not used yet take a little device memory for
// good. Measured on an H200 over 1000 GEMM shapes: 4 MiB.
constexpr uint64_t kLibraryCodeSlack = 16 * kMiB;

// GF_STRESS_DIVISOR, read once: 1 when unset or not a positive number.
int64_t stress_divisor() {
  static const int64_t divisor = [] {
    const char* v = std::getenv("GF_STRESS_DIVISOR");
    const int64_t d = v ? std::atoll(v) : 1;
    return d > 0 ? d : int64_t{1};
  }();
  return divisor;
}
// `full` repeats, divided by GF_STRESS_DIVISOR, never below `floor`.
int64_t stress_count(int64_t full, int64_t floor = 1) { return std::max(floor, full / stress_divisor()); }

class CudaReliability : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
  }

  static uint64_t free_bytes() {
    size_t free = 0, total = 0;
    const cudaError_t e = cudaMemGetInfo(&free, &total);
    EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
    return free;
  }
  // Device memory taken since `start` (0 when more is free now).
  static uint64_t used_since(uint64_t start) {
    const uint64_t now = free_bytes();
    return start > now ? start - now : 0;
  }
};

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// y = x @ w, x: f32[n, 64], w: f32[64, 32]: one cuBLASLt GEMM and no generated kernel, so a new
// shape costs no NVRTC compile (a program is about 2 ms to build, mostly the GEMM heuristic and
// the graph's instantiation), and a thousand shapes take seconds.
Graph gemm_graph() {
  GraphBuilder b("gemm");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 64});
  Tensor w(DType::kF32, {64, 32});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.03f * static_cast<float>(i % 29) - 0.4f;
  b.output(b.matmul(x, b.constant("w", w)), "y");
  return b.build();
}

Tensor gemm_input(int64_t n) {
  Tensor x(DType::kF32, {n, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.01f * static_cast<float>((i * 7 + n) % 101) - 0.5f;
  return x;
}

// x @ w on the host in double, the oracle of gemm_graph().
Tensor gemm_oracle(const Graph& g, const Tensor& x) {
  const Tensor& w = g.value(g.find_value("w")).constant;
  const int64_t n = x.dims()[0];
  Tensor y(DType::kF32, {n, 32});
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < 32; ++c) {
      double acc = 0;
      for (int64_t k = 0; k < 64; ++k) acc += double{x.data<float>()[r * 64 + k]} * w.data<float>()[k * 32 + c];
      y.data<float>()[r * 32 + c] = static_cast<float>(acc);
    }
  return y;
}

SessionOptions cuda_graph_mode() {
  SessionOptions o{Device::kCuda};
  o.mode = ExecutionMode::kGraph;
  return o;
}

// For the one-GEMM graphs below: cuBLASLt at every n, so that no shape compiles a kernel (n <= 16
// would be a skinny GEMM kernel) and the library's one-time state is made by the first run.
SessionOptions cublas_graph_mode() {
  SessionOptions o = cuda_graph_mode();
  o.skinny_gemm = SkinnyGemm::kOff;
  return o;
}

TEST_F(CudaReliability, ThousandShapesKeepDeviceMemoryWithinTheCacheAndGiveItAllBack) {
  const Graph g = gemm_graph();
  SessionOptions o = cublas_graph_mode();
  o.max_cached_programs = 8;
  {
    Session warm_up(g, o);  // the context and the libraries' one-time state
    warm_up.run({gemm_input(1)});
  }
  // Past the cache's 8 programs, so that evictions happen at any divisor.
  const int64_t shapes = stress_count(1000, 20);
  const uint64_t start = free_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  {
    Session s(g, o);
    uint64_t used_full = 0, counted_full = 0, worst_excess = 0;
    for (int64_t n = 1; n <= shapes; ++n) {
      const Tensor x = gemm_input(n);
      const Tensor y = s.run({x})[0];
      if (n % 10 == 0 || n <= 8) {
        testing::expect_matches(y, gemm_oracle(g, x));
        if (HasFatalFailure()) return;
      }
      const uint64_t used = used_since(start);
      const uint64_t counted = s.stats().cached_program_bytes;
      if (n == 8) {  // the cache is full: the first measurement
        used_full = used;
        counted_full = counted;
        ASSERT_LE(used_full, counted_full + 8 * kProgramOverhead);
      }
      // Eight programs at most, whose arenas grow with n: what they hold beyond the first
      // measurement is what their counted bytes grew, rounded up to pages.
      if (n > 8 && used + counted_full > used_full + counted)
        worst_excess = std::max(worst_excess, used + counted_full - used_full - counted);
    }
    EXPECT_LE(worst_excess, 8 * 2 * kMiB + kSlack);
    const SessionStats st = s.stats();
    EXPECT_EQ(st.programs_compiled, shapes);
    EXPECT_EQ(st.program_cache_misses, shapes);
    EXPECT_EQ(st.program_evictions, shapes - 8);
    EXPECT_EQ(st.cached_programs, 8);
    EXPECT_EQ(st.cuda_graph_programs, shapes);
    // Keeping the evicted programs would hold a hundred times the slack.
    EXPECT_GT(st.program_evictions * (st.cached_program_bytes / 8), 100 * kSlack);
  }
  EXPECT_LE(used_since(start), kSlack + kLibraryCodeSlack);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("shapes", std::to_string(shapes));
  RecordProperty("seconds", std::to_string(seconds));
  if (stress_divisor() == 1) {
    EXPECT_LT(seconds, 60);
  }
}

// With arenas of their own, programs of one size add up: the byte bound keeps two of them. (On
// the shared arena they would all fit: ShapesShareOneArenaAsLargeAsTheLargest.)
TEST_F(CudaReliability, ByteBoundEvictsProgramsOnTheDevice) {
  const Graph g = gemm_graph();
  const auto own_arenas = [] {
    SessionOptions o = cublas_graph_mode();
    o.share_device_arena = false;
    return o;
  };
  uint64_t program_bytes = 0;
  {
    Session probe(g, own_arenas());
    probe.run({gemm_input(64)});
    program_bytes = probe.stats().cached_program_bytes;
  }
  ASSERT_GT(program_bytes, 10 * kSlack);  // the 32 MiB cuBLASLt workspace dominates
  const uint64_t start = free_bytes();
  {
    SessionOptions o = own_arenas();
    o.max_cached_program_bytes = 2 * program_bytes + program_bytes / 2;  // two fit, three do not
    Session s(g, o);
    for (int64_t n : {64, 65, 66, 64}) {
      const Tensor x = gemm_input(n);
      testing::expect_matches(s.run({x})[0], gemm_oracle(g, x));
    }
    const SessionStats st = s.stats();
    EXPECT_EQ(st.programs_compiled, 4);  // 64 was evicted by 66, then compiled again
    EXPECT_EQ(st.program_evictions, 2);
    EXPECT_EQ(st.cached_programs, 2);
    EXPECT_LE(st.cached_program_bytes, o.max_cached_program_bytes);
    const uint64_t used = used_since(start);
    EXPECT_GE(used + kSlack, st.cached_program_bytes);
    EXPECT_LE(used, st.cached_program_bytes + 2 * kProgramOverhead + kSlack);
  }
  EXPECT_LE(used_since(start), kSlack);
  {
    // A bound below one program: each run compiles, runs and frees its program.
    SessionOptions o = own_arenas();
    o.max_cached_program_bytes = program_bytes / 2;
    Session s(g, o);
    for (int run = 0; run < 2; ++run) {
      const Tensor x = gemm_input(64);
      testing::expect_matches(s.run({x})[0], gemm_oracle(g, x));
      EXPECT_LE(used_since(start), kSlack);
    }
    EXPECT_EQ(s.stats().programs_compiled, 2);
    EXPECT_EQ(s.stats().cached_programs, 0);
    EXPECT_EQ(s.stats().cached_program_bytes, 0u);
  }
}

TEST_F(CudaReliability, DeviceOutOfMemoryIsAnErrorAndTheSessionRunsAfterwards) {
  // y = sum over m of (x @ w), x: f32[n, 1], w: f32[1, 2^18]: the GEMM's output is an
  // intermediate of n * 2^18 floats, 256 GiB for n = 2^18, more than any GPU holds.
  constexpr int64_t kM = int64_t{1} << 18;
  GraphBuilder b("oom");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 1});
  Tensor w(DType::kF32, {1, kM});
  for (int64_t i = 0; i < kM; ++i) w.data<float>()[i] = (i % 4 == 0) ? 1.0f : 0.0f;  // sums to 2^16
  b.output(b.reduce(Op::kReduceSum, b.op1(Op::kMatMul, {x, b.constant("w", w)}, {}, "outer"), {1}, false), "y");
  Session s(b.build(), cublas_graph_mode());
  s.run({testing::f32({1, 1}, {1})});  // the context and libraries, outside the measurement
  const uint64_t start = free_bytes();
  testing::expect_error([&] { s.run({Tensor(DType::kF32, {kM, 1})}); }, ErrorCode::kOutOfMemory,
                        {"cannot allocate", "bytes of GPU memory"});
  EXPECT_LE(used_since(start), kSlack);  // what the failed compile had allocated is back
  const Tensor y = s.run({testing::f32({3, 1}, {1, -2, 0.5f})})[0];
  testing::expect_values(y, {3}, {65536, -131072, 32768});
  EXPECT_EQ(s.stats().programs_compiled, 2);
}

// y = x @ w with a 128 MiB weight (f32[1024, 32768]): every shape's program reads it.
Graph big_weight_graph() {
  GraphBuilder b("big_weight");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 1024});
  Tensor w(DType::kF32, {1024, 32768});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.001f * static_cast<float>(i % 61) - 0.03f;
  b.output(b.matmul(x, b.constant("w", w)), "y");
  return b.build();
}

Tensor rows(int64_t n, int64_t width) {
  Tensor x(DType::kF32, {n, width});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.02f * static_cast<float>((i * 5 + n) % 37) - 0.3f;
  return x;
}

// Programs for other shapes read the device copy of the weights the first one uploaded (f32
// weights by the session graph's storage, f16 ones through the conversion memo), here a MatMul
// weight that every program stores transposed (runtime/cuda/weight_layout.h).
TEST_F(CudaReliability, ProgramsOfOneSessionShareTheirWeights) {
  const Graph g = big_weight_graph();
  constexpr uint64_t kWeightBytes = uint64_t{1024} * 32768 * 4;
  for (const Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(precision_name(p));
    SessionOptions o = cuda_graph_mode();
    o.precision = p;
    const uint64_t weight = p == Precision::kFp32 ? kWeightBytes : kWeightBytes / 2;
    const uint64_t start = free_bytes();
    {
      Session s(g, o);
      const Session reference(g, SessionOptions{});
      std::vector<uint64_t> in_use;
      for (int64_t n : {4, 5, 6}) {
        const Tensor x = rows(n, 1024);
        testing::expect_matches(s.run({x})[0], reference.run({x})[0], p == Precision::kFp32 ? 4 : 50);
        in_use.push_back(s.device_bytes_in_use());
      }
      EXPECT_EQ(s.stats().cached_programs, 3);
      EXPECT_GE(in_use[0], weight);
      // Each further program adds its arena and workspace, not another copy of the weight (which
      // alone would add `weight`).
      EXPECT_LT(in_use[1] - in_use[0], weight);
      EXPECT_LT(in_use[2] - in_use[1], weight);
      // What the session counts is what the device lost.
      EXPECT_LE(used_since(start), in_use[2] + 3 * kProgramOverhead);
      EXPECT_GE(used_since(start) + kSlack, in_use[2]);
    }
    EXPECT_LE(used_since(start), kLibraryCodeSlack);  // GEMM shapes new to the process
  }
}

void expect_device_memory_limit_kept(SessionOptions o, int programs_compiled) {
  const Graph g = gemm_graph();
  uint64_t one_program = 0;
  {
    Session probe(g, o);
    probe.run({gemm_input(64)});
    one_program = probe.device_bytes_in_use();
  }
  ASSERT_GT(one_program, 0u);
  o.device_memory_limit_bytes = one_program + one_program / 2;
  Session s(g, o);
  for (int64_t n : {64, 65, 64}) {
    const Tensor x = gemm_input(n);
    testing::expect_matches(s.run({x})[0], gemm_oracle(g, x));
    EXPECT_LE(s.device_bytes_in_use(), o.device_memory_limit_bytes);
  }
  EXPECT_EQ(s.stats().programs_compiled, programs_compiled);
  // 2^21 rows: an arena of 768 MiB, over the cap by itself.
  testing::expect_error([&] { s.run({Tensor(DType::kF32, {int64_t{1} << 21, 64})}); }, ErrorCode::kOutOfMemory,
                        {"device memory limit", std::to_string(o.device_memory_limit_bytes), "arena"});
  EXPECT_LE(s.device_bytes_in_use(), o.device_memory_limit_bytes);
  const Tensor x = gemm_input(66);
  testing::expect_matches(s.run({x})[0], gemm_oracle(g, x));
}

// A session capped at one and a half programs: with arenas of their own, it drops its cached
// programs to compile a new shape; on the shared arena a second shape of about the same size
// fits beside the first. Either way it refuses a shape that does not fit alone (naming the cap),
// and runs afterwards.
TEST_F(CudaReliability, DeviceMemoryLimitIsKeptAndTheSessionRunsAfterwards) {
  for (const bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared arena" : "own arenas");
    SessionOptions o = cuda_graph_mode();
    o.share_device_arena = shared;
    expect_device_memory_limit_kept(o, shared ? 2 : 3);  // own arenas: 64 is dropped for 65
  }
}

// y = tanh(x) + x, x: f32[n, 4096]: one generated kernel; its arena holds x and y (32 KiB a row).
Graph wide_rows_graph() {
  GraphBuilder b("wide_rows");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 4096});
  b.output(b.add(b.unary(Op::kTanh, x), x), "y");
  return b.build();
}

// The programs of three shapes hold one arena as large as the largest needs, not the sum of
// three; evicting the largest gives its part back; the session gives all of it back. With
// share_device_arena off, the arenas add up.
TEST_F(CudaReliability, ShapesShareOneArenaAsLargeAsTheLargest) {
  const Graph g = wide_rows_graph();
  const Session reference(g, SessionOptions{});
  constexpr uint64_t kRowBytes = 2 * 4096 * 4;             // x and y
  const std::vector<int64_t> shapes = {2048, 4096, 3072};  // arenas of 64, 128 and 96 MiB
  {
    Session warm_up(g, cuda_graph_mode());
    warm_up.run({rows(1, 4096)});
  }
  for (const bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "shared" : "own arenas");
    const uint64_t start = free_bytes();
    {
      SessionOptions o = cuda_graph_mode();
      o.share_device_arena = shared;
      o.max_cached_programs = 3;
      Session s(g, o);
      for (int64_t n : shapes) {
        const Tensor x = rows(n, 4096);
        testing::expect_matches(s.run({x})[0], reference.run({x})[0]);
      }
      const uint64_t largest = 4096 * kRowBytes, sum = (2048 + 4096 + 3072) * kRowBytes;
      const uint64_t in_use = s.device_bytes_in_use();
      if (shared) {
        EXPECT_GE(s.stats().shared_arena_bytes, largest);
        EXPECT_LE(s.stats().shared_arena_bytes, largest + kSlack);
        EXPECT_LE(in_use, largest + 3 * kProgramOverhead);
        EXPECT_LE(s.stats().cached_program_bytes, largest + 3 * kProgramOverhead);
        EXPECT_GE(s.stats().cached_program_bytes, largest);
      } else {
        EXPECT_EQ(s.stats().shared_arena_bytes, 0u);
        EXPECT_GE(in_use, sum);
      }
      EXPECT_LE(used_since(start), in_use + 3 * kProgramOverhead);
      EXPECT_GE(used_since(start) + kSlack, in_use);
      // Two more shapes push out the two least recently used (2048 and 4096): what stays is
      // 3072, 1024 and 512 rows.
      for (int64_t n : {1024, 512}) {
        const Tensor x = rows(n, 4096);
        testing::expect_matches(s.run({x})[0], reference.run({x})[0]);
      }
      EXPECT_EQ(s.stats().cached_programs, 3);
      if (shared) {
        EXPECT_LE(s.stats().shared_arena_bytes, 3072 * kRowBytes + kSlack);
        EXPECT_LE(used_since(start), 3072 * kRowBytes + 3 * kProgramOverhead);
      }
    }
    EXPECT_LE(used_since(start), kSlack);
  }
}

#ifdef GF_HAVE_ONNX
// The GPT-2 tiny export (torch.onnx, TorchScript exporter) with its recorded input_ids [2, 16].
struct Gpt2Export {
  Graph graph;
  std::vector<Tensor> inputs;
};

Gpt2Export load_gpt2_export() {
  testing::RecordedModel m = testing::load_recorded_model("gpt2_tiny.torchscript.onnx", "gpt2_tiny", {"input_ids"});
  return Gpt2Export{std::move(m.graph), std::move(m.inputs)};
}

TEST_F(CudaReliability, HundredSessionCyclesOnGpt2GiveBackDeviceMemory) {
  const Gpt2Export m = load_gpt2_export();
  Tensor first;
  uint64_t program_bytes = 0;
  {
    // Made once per process, so left out of the measurement: the context, library state, and
    // the kernels' cubins (NVRTC's memory and disk caches).
    Session s(m.graph, cuda_graph_mode());
    first = s.run(m.inputs)[0];
    program_bytes = s.stats().cached_program_bytes;
  }
  testing::expect_matches(first, ref::run_graph(m.graph, m.inputs)[0], 5);
  // One program's buffers leaked per cycle would pass the slack many times over.
  ASSERT_GT(static_cast<uint64_t>(stress_count(100)) * program_bytes, 10 * kSlack);
  const uint64_t start = free_bytes();
  const int64_t cycles = stress_count(100);
  for (int64_t cycle = 0; cycle < cycles; ++cycle) {
    Session s(m.graph, cuda_graph_mode());
    ASSERT_TRUE(bitwise_equal(s.run(m.inputs)[0], first)) << "cycle " << cycle;
  }
  EXPECT_LE(used_since(start), kSlack);
}

TEST_F(CudaReliability, EightThreadsOnOneGpt2SessionGiveTheBitsOfOneThread) {
  const Gpt2Export m = load_gpt2_export();
  const Session s(m.graph, cuda_graph_mode());
  const Tensor want = s.run(m.inputs)[0];
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  const int64_t runs = stress_count(100);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int64_t i = 0; i < runs; ++i) {
        try {
          if (!bitwise_equal(s.run(m.inputs)[0], want)) ++mismatches;
        } catch (const Error&) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  const SessionStats st = s.stats();
  EXPECT_EQ(st.programs_compiled, 1);
  EXPECT_EQ(st.program_cache_hits, 8 * runs);
}
#endif  // GF_HAVE_ONNX

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
