// The Session's program cache: least-recently-used eviction by count and by bytes, its counters,
// and shape buckets (padded runs against unpadded ones as the oracle).
#include <array>
#include <atomic>
#include <cmath>
#include <map>
#include <thread>

#include "runtime/shape_buckets.h"
#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;

// x: f32[n, 16] -> softmax(relu(x) @ w): the MatMul is a BLAS anchor, so relu(x) and the product
// live in the CPU program's arena, whose size grows with n.
Graph rows_graph() {
  GraphBuilder b("rows");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 16});
  Tensor w(DType::kF32, {16, 16});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  b.output(b.softmax(b.matmul(b.unary(Op::kRelu, x), b.constant("w", w)), 1), "y");
  return b.build();
}

Tensor rows(int64_t n, float offset = 0) {
  Tensor t(DType::kF32, {n, 16});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.07f * static_cast<float>(i % 23) - 0.6f + offset;
  return t;
}

void expect_near(const Tensor& got, const Tensor& want, double tol = 1e-6) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(got.element_as_double(i), want.element_as_double(i), tol) << "element " << i;
}

// The reference interpreter's outputs, the oracle for every fused run below.
std::vector<Tensor> reference(const Graph& g, const std::vector<Tensor>& inputs) {
  return Session(g, SessionOptions{Device::kCpu, CpuBackend::kReference}).run(inputs);
}

TEST(SessionCache, EvictsTheLeastRecentlyUsedProgramAndCountsIt) {
  const Graph g = rows_graph();
  SessionOptions options;
  options.max_cached_programs = 2;
  Session s(g, options);
  std::map<int64_t, uint64_t> arena;  // per n, read after its compile
  auto run = [&](int64_t n) {
    const int compiled = s.stats().programs_compiled;
    expect_near(s.run({rows(n)})[0], reference(g, {rows(n)})[0]);
    if (s.stats().programs_compiled > compiled) arena[n] = s.stats().arena_bytes;
  };
  run(1);  // miss: [1]
  run(2);  // miss: [2, 1]
  run(1);  // hit: [1, 2]
  run(3);  // miss, 2 goes: [3, 1]
  SessionStats st = s.stats();
  EXPECT_EQ(st.program_evictions, 1);
  EXPECT_EQ(st.cached_program_bytes, arena.at(3) + arena.at(1));
  run(1);  // hit (1 was kept): [1, 3]
  run(2);  // miss (2 was dropped), 3 goes: [2, 1]
  st = s.stats();
  EXPECT_EQ(st.programs_compiled, 4);
  EXPECT_EQ(st.program_cache_misses, 4);
  EXPECT_EQ(st.program_cache_hits, 2);
  EXPECT_EQ(st.program_evictions, 2);
  EXPECT_EQ(st.cached_programs, 2);
  EXPECT_EQ(st.cached_program_bytes, arena.at(2) + arena.at(1));
  EXPECT_EQ(st.cuda_graph_programs, 0);  // the CPU has none
  EXPECT_EQ(st.padded_runs, 0);
}

TEST(SessionCache, ByteBoundEvictsAndKeepsNoProgramBiggerThanItself) {
  const Graph g = rows_graph();
  std::map<int64_t, uint64_t> arena;
  {
    Session probe(g);
    for (int64_t n : {16, 32, 64, 256}) {
      probe.run({rows(n)});
      arena[n] = probe.stats().arena_bytes;
      ASSERT_GT(arena[n], 0u);
    }
  }
  const uint64_t bound = arena[32] + arena[64];
  ASSERT_LE(arena[16], arena[64]);
  ASSERT_GT(arena[256], bound);
  SessionOptions options;
  options.max_cached_program_bytes = bound;
  Session s(g, options);
  auto run = [&](int64_t n) { expect_near(s.run({rows(n)})[0], reference(g, {rows(n)})[0]); };
  run(16);
  run(32);
  SessionStats st = s.stats();
  EXPECT_EQ(st.cached_programs, 2);
  EXPECT_EQ(st.cached_program_bytes, arena[16] + arena[32]);
  EXPECT_EQ(st.program_evictions, 0);
  run(64);  // 16 + 32 + 64 pass the bound: 16, the least recently used, goes
  st = s.stats();
  EXPECT_EQ(st.cached_program_bytes, arena[32] + arena[64]);
  EXPECT_EQ(st.program_evictions, 1);
  run(16);  // compiled again; now 32 goes
  st = s.stats();
  EXPECT_EQ(st.programs_compiled, 4);
  EXPECT_EQ(st.cached_program_bytes, arena[64] + arena[16]);
  EXPECT_EQ(st.program_evictions, 2);
  // Too big to keep: it runs, the cache stays as it was, and the next run compiles it again.
  run(256);
  run(256);
  st = s.stats();
  EXPECT_EQ(st.programs_compiled, 6);
  EXPECT_EQ(st.program_cache_misses, 6);
  EXPECT_EQ(st.cached_programs, 2);
  EXPECT_EQ(st.cached_program_bytes, arena[64] + arena[16]);
  EXPECT_EQ(st.program_evictions, 4);
  run(64);
  EXPECT_EQ(s.stats().program_cache_hits, 1);
}

TEST(SessionCache, ConcurrentRunsSurviveTheEvictionOfTheirProgram) {
  // One program kept, four threads on three shapes: most runs evict a program another thread
  // may be running; each result must still be right.
  const Graph g = rows_graph();
  std::map<int64_t, Tensor> want;
  for (int64_t n : {3, 5, 8}) want[n] = reference(g, {rows(n, 0.1f * static_cast<float>(n))})[0];
  SessionOptions options;
  options.max_cached_programs = 1;
  const Session s(g, options);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const int64_t n = std::array<int64_t, 3>{3, 5, 8}[static_cast<size_t>(t + i) % 3];
        const Tensor got = s.run({rows(n, 0.1f * static_cast<float>(n))})[0];
        const Tensor& w = want.at(n);
        for (int64_t k = 0; k < w.numel(); ++k)
          if (std::fabs(got.data<float>()[k] - w.data<float>()[k]) > 1e-6f) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const SessionStats st = s.stats();
  EXPECT_EQ(st.cached_programs, 1);
  EXPECT_EQ(st.program_cache_hits + st.program_cache_misses, 48);
}

// ids: i64[batch, seq] -> table[ids] (f32[batch, seq, 4]), its running sum along seq, and the
// per-token sum over the 4 features transposed to [seq, batch]: every position depends only on
// its own row and the earlier positions of its sequence, so padding at the end is harmless.
Graph causal_graph() {
  GraphBuilder b("causal");
  ValueId ids = b.input("ids", DType::kI64, Shape{Dim(std::string("batch")), Dim(std::string("seq"))});
  Tensor table(DType::kF32, {10, 4});
  for (int64_t i = 0; i < table.numel(); ++i) table.data<float>()[i] = 0.25f * static_cast<float>(i) - 3;
  ValueId emb = b.op1(Op::kGather, {b.constant("table", table), ids}, {{"axis", int64_t{0}}});
  ValueId running = b.op1(Op::kCumSum, {emb, b.constant("axis", Tensor::scalar<int64_t>(1))});
  b.output(b.unary(Op::kTanh, running), "running");
  b.output(b.transpose(b.reduce(Op::kReduceSum, emb, {2}, false), {1, 0}), "per_token");
  return b.build();
}

Tensor token_ids(int64_t batch, int64_t seq) {
  Tensor t(DType::kI64, {batch, seq});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7 + batch + seq) % 10;
  return t;
}

TEST(SessionCache, BucketedRunsEqualUnbucketedOnesWithOneProgramPerBucket) {
  const Graph g = causal_graph();
  SessionOptions options;
  options.shape_buckets = {{"batch", {2, 4}}, {"seq", {4, 8}}};
  Session bucketed(g, options);
  Session plain(g);  // the oracle: one program per exact shape
  ASSERT_EQ(bucketed.graph().value(bucketed.graph().outputs()[1]).type.to_string(), "f32[seq,batch]");
  auto check = [&](int64_t batch, int64_t seq) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", seq " + std::to_string(seq));
    const std::vector<Tensor> got = bucketed.run({token_ids(batch, seq)});
    const std::vector<Tensor> want = plain.run({token_ids(batch, seq)});
    ASSERT_EQ(got.size(), 2u);
    expect_near(got[0], want[0], 1e-5);
    expect_near(got[1], want[1], 1e-5);
  };
  // Every (batch, seq) within the buckets (2, 4): one program.
  for (int64_t batch : {1, 2})
    for (int64_t seq : {1, 3, 4}) check(batch, seq);
  SessionStats st = bucketed.stats();
  EXPECT_EQ(st.programs_compiled, 1);
  EXPECT_EQ(st.padded_runs, 5);  // all but (2, 4)
  // seq 5..8 in bucket 8, batch 3 in bucket 4: one more program.
  for (int64_t seq : {5, 7, 8}) check(3, seq);
  st = bucketed.stats();
  EXPECT_EQ(st.programs_compiled, 2);
  EXPECT_EQ(st.padded_runs, 8);
  // Above the largest bucket: unpadded, a program of its own.
  check(2, 11);
  check(6, 2);
  st = bucketed.stats();
  EXPECT_EQ(st.programs_compiled, 4);
  EXPECT_EQ(st.padded_runs, 9);  // (6, 2) still pads seq to 4
  EXPECT_EQ(plain.stats().programs_compiled, 11);
}

TEST(SessionCache, BadBucketsAreClearErrors) {
  SessionOptions options;
  options.shape_buckets = {{"sequence", {8, 16}}};
  expect_error([&] { Session(causal_graph(), options); }, ErrorCode::kInvalidArgument,
               {"shape_buckets['sequence']", "no input", "'batch', 'seq'"});
  options.shape_buckets = {{"seq", {16, 8}}};
  expect_error([&] { Session(causal_graph(), options); }, ErrorCode::kInvalidArgument,
               {"shape_buckets['seq']", "strictly ascending", "8 at position 1"});
  options.shape_buckets = {{"seq", {0, 8}}};
  expect_error([&] { Session(causal_graph(), options); }, ErrorCode::kInvalidArgument,
               {"shape_buckets['seq']", "positive"});
  options.shape_buckets = {{"batch", {}}};
  expect_error([&] { Session(causal_graph(), options); }, ErrorCode::kInvalidArgument,
               {"shape_buckets['batch']", "no sizes"});
  // An output-only or static dim is no bucket either: only the inputs' symbolic dims count.
  options.shape_buckets = {{"4", {8}}};
  expect_error([&] { Session(causal_graph(), options); }, ErrorCode::kInvalidArgument,
               {"no input", "dim named '4'"});
}

TEST(SessionCache, ResizeAxisPadsWithZerosAndCuts) {
  const Tensor t = testing::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  testing::expect_values(resize_axis(t, 1, 5), {2, 5}, {1, 2, 3, 0, 0, 4, 5, 6, 0, 0});
  testing::expect_values(resize_axis(t, 0, 3), {3, 3}, {1, 2, 3, 4, 5, 6, 0, 0, 0});
  testing::expect_values(resize_axis(t, 1, 1), {2, 1}, {1, 4});
}

}  // namespace
}  // namespace gf
