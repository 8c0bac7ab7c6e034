#include <atomic>
#include <cstring>
#include <thread>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;

TEST(Session, RunsAndChecksInputs) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 2});
  ValueId y = b.input("y", DType::kF32, Shape{Dim(std::string("n")), 2});
  b.output(b.op1(Op::kRelu, {b.add(x, y)}), "out");
  Session s(b.build());
  auto out = s.run({testing::f32({2, 2}, {1, -5, 3, 4}), testing::f32({2, 2}, {1, 2, -9, 4})});
  testing::expect_values(out[0], {2, 2}, {2, 0, 0, 8});
  // Wrong dtype, wrong rank and an inconsistent symbolic dim are clear errors.
  expect_error([&] { s.run({testing::i64({2, 2}, {1, 2, 3, 4}), testing::f32({2, 2}, {1, 2, 3, 4})}); },
               ErrorCode::kShapeMismatch, {"input 'x'", "i64[2,2]"});
  expect_error([&] { s.run({testing::f32({4}, {1, 2, 3, 4}), testing::f32({2, 2}, {1, 2, 3, 4})}); },
               ErrorCode::kShapeMismatch, {"input 'x'"});
  expect_error([&] { s.run({testing::f32({2, 2}, {1, 2, 3, 4}), testing::f32({1, 2}, {1, 2})}); },
               ErrorCode::kShapeMismatch, {"dim 'n'"});
  auto named = s.run_named(std::map<std::string, Tensor>{{"x", testing::f32({1, 2}, {1, 2})},
                                                   {"y", testing::f32({1, 2}, {3, -4})}});
  testing::expect_values(named.at("out"), {1, 2}, {4, 0});
  expect_error([&] { s.run_named(std::map<std::string, Tensor>{{"x", testing::f32({1, 2}, {1, 2})}}); },
               ErrorCode::kInvalidArgument, {"'y'"});
}

TEST(Session, CudaWithoutDeviceIsAClearError) {
  if (!probe_cuda().devices.empty()) GTEST_SKIP() << "a CUDA device is present";
  GraphBuilder b;
  b.output(b.op1(Op::kRelu, {b.input("x", DType::kF32, Shape{2})}));
  expect_error([&] { Session(b.build(), SessionOptions{Device::kCuda}); }, ErrorCode::kDeviceError,
               {"no CUDA device"});
}

TEST(Session, SixteenBitPrecisionOnTheCpuIsAClearError) {
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    GraphBuilder b;
    b.output(b.op1(Op::kRelu, {b.input("x", DType::kF32, Shape{2})}));
    SessionOptions options;
    options.precision = p;
    expect_error([&] { Session(b.build(), options); }, ErrorCode::kInvalidArgument,
                 {std::string(precision_name(p)), "needs device cuda"});
  }
}

TEST(Session, ANegativeSkinnyPrefetchDistanceIsAClearError) {
  EXPECT_EQ(SessionOptions{}.skinny_prefetch_distance, 1);
  GraphBuilder b;
  b.output(b.op1(Op::kRelu, {b.input("x", DType::kF32, Shape{2})}));
  SessionOptions options;
  options.skinny_prefetch_distance = -1;
  expect_error([&] { Session(b.build(), options); }, ErrorCode::kInvalidArgument,
               {"skinny_prefetch_distance", "at least 0", "-1"});
}

TEST(Session, AttentionPathsHaveNamesAndAutoIsTheDefault) {
  EXPECT_EQ(SessionOptions{}.attention, AttentionPath::kAuto);
  for (AttentionPath a : {AttentionPath::kAuto, AttentionPath::kGenerated, AttentionPath::kCudnn})
    EXPECT_EQ(attention_path_from_name(attention_path_name(a)), a);
  EXPECT_EQ(attention_path_name(AttentionPath::kCudnn), "cudnn");
  EXPECT_EQ(attention_path_from_name("generated"), AttentionPath::kGenerated);
  for (const char* bad : {"cuDNN", "ours", "", "auto "})
    EXPECT_FALSE(attention_path_from_name(bad).has_value()) << bad;
}

TEST(Session, SkinnyGemmChoicesHaveNamesAndAutoIsTheDefault) {
  EXPECT_EQ(SessionOptions{}.skinny_gemm, SkinnyGemm::kAuto);
  for (SkinnyGemm c : {SkinnyGemm::kAuto, SkinnyGemm::kAlways, SkinnyGemm::kOff})
    EXPECT_EQ(skinny_gemm_from_name(skinny_gemm_name(c)), c);
  EXPECT_EQ(skinny_gemm_name(SkinnyGemm::kAlways), "always");
  EXPECT_EQ(skinny_gemm_from_name("off"), SkinnyGemm::kOff);
  // The old on/off switch's "on" and other spellings are no choice.
  for (const char* bad : {"on", "Auto", "", "always "}) EXPECT_FALSE(skinny_gemm_from_name(bad).has_value()) << bad;
}

TEST(Session, GemmLibrariesHaveNamesAndAutoIsTheDefault) {
  EXPECT_EQ(SessionOptions{}.gemm_library, GemmLibrary::kAuto);
  for (GemmLibrary l : {GemmLibrary::kAuto, GemmLibrary::kCublasLt, GemmLibrary::kCudnn,
                        GemmLibrary::kTimed, GemmLibrary::kGenerated})
    EXPECT_EQ(gemm_library_from_name(gemm_library_name(l)), l);
  EXPECT_EQ(gemm_library_name(GemmLibrary::kTimed), "timed");
  EXPECT_EQ(gemm_library_name(GemmLibrary::kAuto), "auto");
  EXPECT_EQ(gemm_library_from_name("cudnn"), GemmLibrary::kCudnn);
  EXPECT_EQ(gemm_library_from_name("generated"), GemmLibrary::kGenerated);
  for (const char* bad : {"Auto", "cuBLASLt", "cublas", "", "cudnn "})
    EXPECT_FALSE(gemm_library_from_name(bad).has_value()) << bad;
}

TEST(Session, HostMemoryLimitRefusesBeforeAllocatingAndRecovers) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n"))});
  ValueId h = b.op1(Op::kRelu, {x}, {}, "first_relu");
  b.output(b.op1(Op::kAdd, {h, h}, {}, "double_it"), "y");
  // Each intermediate of n floats is 4n bytes; two are live at the Add.
  SessionOptions options;
  options.cpu_backend = CpuBackend::kReference;  // the interpreter checks node by node
  options.host_memory_limit_bytes = 1000;
  Session s(b.build(), options);
  Tensor big(DType::kF32, {200});  // 800 bytes per intermediate: the Add's output passes 1000
  expect_error([&] { s.run({big}); }, ErrorCode::kOutOfMemory,
               {"double_it", "Add", "f32[200]", "1000"});
  EXPECT_EQ(s.host_bytes_in_use(), 0u);  // the failed run gave back what it held
  auto out = s.run({testing::f32({3}, {-1, 2, 3})});
  testing::expect_values(out[0], {3}, {0, 4, 6});
  EXPECT_EQ(s.host_bytes_in_use(), 0u);
  // The refused run got as far as the Relu output (800 bytes); the good run peaks at 24.
  EXPECT_EQ(s.host_bytes_peak(), 800u);
}

TEST(Session, FusedBackendChecksTheHostMemoryCapPerRun) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n"))});
  b.output(b.op1(Op::kExp, {b.op1(Op::kRelu, {x})}), "y");
  SessionOptions options;
  options.host_memory_limit_bytes = 1000;
  Session s(b.build(), options);
  expect_error([&] { s.run({Tensor(DType::kF32, {400})}); }, ErrorCode::kOutOfMemory,
               {"fused CPU program", "1000"});
  EXPECT_EQ(s.host_bytes_in_use(), 0u);
  auto out = s.run({testing::f32({2}, {-1, 0})});
  testing::expect_values(out[0], {2}, {1, 1});
  EXPECT_EQ(s.host_bytes_in_use(), 0u);
}

TEST(Session, FusedProgramsAreCachedPerInputShape) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 3});
  ValueId y = b.op1(Op::kTanh, {b.add(x, b.constant("c", testing::f32({3}, {1, 2, 3})))});
  b.output(b.softmax(y, 1), "y");
  Session fused(b.build());
  Session reference(fused.graph(), SessionOptions{Device::kCpu, CpuBackend::kReference});
  for (int64_t n : {2, 5, 2, 5, 1}) {
    Tensor in(DType::kF32, {n, 3});
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = 0.3f * static_cast<float>(i) - 1;
    const Tensor got = fused.run({in})[0], want = reference.run({in})[0];
    ASSERT_EQ(got.dims(), want.dims());
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-6);
  }
  const SessionStats st = fused.stats();
  EXPECT_EQ(st.programs_compiled, 3);  // n = 2, 5, 1
  EXPECT_EQ(st.program_cache_hits, 2);
  EXPECT_GE(st.fused_kernels, 1);
  EXPECT_EQ(st.fallback_nodes, 0);
  // The last compile's time: its passes, then the program (a JIT compile or a cache read).
  EXPECT_GT(st.compile_seconds.passes, 0);
  EXPECT_GT(st.compile_seconds.total, st.compile_seconds.passes);
  EXPECT_EQ(st.compile_seconds.graph, 0);  // CUDA parts stay 0 on the CPU
}

TEST(Session, ConcurrentRunsGiveBitwiseEqualResults) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{64});
  ValueId y = b.input("y", DType::kF32, Shape{64});
  b.output(b.op1(Op::kRelu, {b.add(x, y)}), "z");
  const Session s(b.build());
  Tensor xs(DType::kF32, {64}), ys(DType::kF32, {64});
  for (int i = 0; i < 64; ++i) {
    xs.data<float>()[i] = 0.37f * static_cast<float>(i - 30);
    ys.data<float>()[i] = 0.11f * static_cast<float>(7 - i);
  }
  const Tensor expected = s.run({xs, ys})[0];
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        Tensor got = s.run({xs, ys})[0];
        if (std::memcmp(got.raw(), expected.raw(), expected.nbytes()) != 0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST(Session, FusedIntegerDivisionByZeroFailsLikeTheReference) {
  // Generated kernels cannot report errors, so a run-time integer divisor keeps the division
  // on the reference kernel, which names the node.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kI64, Shape{3});
  ValueId d = b.input("d", DType::kI64, Shape{3});
  b.output(b.op1(Op::kDiv, {b.add(x, x), d}, {}, "int_div"), "y");
  Session s(b.build());
  testing::expect_error([&] { s.run({testing::i64({3}, {1, 2, 3}), testing::i64({3}, {1, 0, 1})}); },
                        ErrorCode::kInvalidArgument, {"int_div", "Div"});
  auto out = s.run({testing::i64({3}, {4, 5, 6}), testing::i64({3}, {2, 5, -4})});
  testing::expect_values(out[0], {3}, {4, 2, -3});
  EXPECT_GE(s.stats().fallback_nodes, 1);
}

}  // namespace
}  // namespace gf
