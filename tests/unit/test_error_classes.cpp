// One test per class of bad input (bad file, unsupported op, shape mismatch, out of memory,
// kernel compile failure): each asserts the error code and what the message names, then that
// the same Session (or JIT) still runs a good input, since graphfuse lives in long-lived servers.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/cpu/jit_compiler.h"
#include "graphfuse/npy.h"
#include "test_util.h"

#ifdef GF_HAVE_ONNX
#include "test_onnx_util.h"
#endif

namespace gf {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::f32;

// y = Relu(x) @ w with x: f32[n, 4], w: f32[4, 3]; the good input used after each error.
Tensor good_input() {
  return f32({2, 4}, {1, -2, 3, -4, 0.5f, 6, -7, 8});
}
// Relu(x) @ w for good_input(), w = [[1,0,1],[0,1,1],[1,1,0],[2,0,0]] (worked by hand).
void expect_good_output(const Tensor& y) {
  testing::expect_values(y, {2, 3}, {4, 3, 1, 16.5, 6, 6.5});
}
Tensor weights() {
  return f32({4, 3}, {1, 0, 1, 0, 1, 1, 1, 1, 0, 2, 0, 0});
}

Graph relu_matmul_graph() {
  GraphBuilder b("relu_matmul");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 4});
  ValueId h = b.op1(Op::kRelu, {x}, {}, "relu");
  b.output(b.op1(Op::kMatMul, {h, b.constant("w", weights())}, {}, "project"), "y");
  return b.build();
}

#ifdef GF_HAVE_ONNX
testing::OnnxModel relu_matmul_onnx() {
  testing::OnnxModel m;
  m.input("x", onnx::TensorProto::FLOAT, {-1, 4}, {"n"});
  const Tensor w = weights();
  m.initializer_f32("w", {4, 3}, std::vector<float>(w.data<float>(), w.data<float>() + w.numel()));
  m.node("Relu", {"x"}, {"h"}, "relu");
  m.node("MatMul", {"h", "w"}, {"y"}, "project");
  m.output("y");
  return m;
}

TEST(ErrorClasses, BadFileIsAParseErrorAndTheNextModelStillLoads) {
  const std::string bytes = relu_matmul_onnx().bytes();
  // Cut inside the graph (one length-delimited field), as an interrupted download would.
  for (size_t keep : {size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("kept " + std::to_string(keep) + " of " + std::to_string(bytes.size()) + " bytes");
    expect_error([&] { import_onnx_bytes(std::string_view(bytes).substr(0, keep)); },
                 ErrorCode::kParseError, {"not a valid ONNX model", "truncated"});
  }
  // Absurd dims are refused from the declaration, before any allocation of that size.
  testing::OnnxModel huge = relu_matmul_onnx();
  auto* init = huge.graph().add_initializer();
  init->set_name("huge");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(int64_t{1} << 40);
  init->add_dims(int64_t{1} << 40);
  expect_error([&] { huge.import(); }, ErrorCode::kParseError,
               {"initializer 'huge'", "absurd shape"});
  // The same for a .npy header promising 2^80 elements.
  std::string npy = to_npy_bytes(f32({2}, {1, 2}));
  const size_t at = npy.find("(2,)");
  ASSERT_NE(at, std::string::npos);
  npy.replace(at, 4, "(1099511627776, 1099511627776)");
  expect_error([&] { parse_npy(npy, "weights.npy"); }, ErrorCode::kParseError,
               {"weights.npy", "element count overflows"});

  Session s(import_onnx_bytes(bytes));
  expect_good_output(s.run({good_input()})[0]);
}

TEST(ErrorClasses, BadFileOnDiskIsNamedAndTheNextFileStillLoads) {
  const fs::path dir = fs::temp_directory_path() / ("gf_test_bad_file_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string bytes = relu_matmul_onnx().bytes();
  std::ofstream(dir / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(dir / "good.onnx", std::ios::binary) << bytes;
  expect_error([&] { import_onnx((dir / "missing.onnx").string()); }, ErrorCode::kIoError,
               {"cannot open", "missing.onnx"});
  expect_error([&] { import_onnx((dir / "cut.onnx").string()); }, ErrorCode::kParseError,
               {"cut.onnx", "not a valid ONNX model", "truncated"});
  expect_error([&] { read_npy((dir / "missing.npy").string()); }, ErrorCode::kIoError,
               {"cannot open", "missing.npy"});
  Session s(import_onnx((dir / "good.onnx").string()));
  expect_good_output(s.run({good_input()})[0]);
  fs::remove_all(dir);
}

TEST(ErrorClasses, UnsupportedOpNamesTheNodeAndTheNextModelStillRuns) {
  ASSERT_FALSE(onnx_op_is_supported("NonMaxSuppression"));
  testing::OnnxModel m = relu_matmul_onnx();
  m.input("boxes", onnx::TensorProto::FLOAT, {1, 4, 4});
  m.input("scores", onnx::TensorProto::FLOAT, {1, 1, 4});
  m.node("NonMaxSuppression", {"boxes", "scores"}, {"picked"}, "nms");
  m.output("picked", onnx::TensorProto::INT64);
  expect_error([&] { m.import(); }, ErrorCode::kUnsupported,
               {"node 'nms'", "NonMaxSuppression", "ai.onnx", "not supported"});
  // A custom domain is named in the message too.
  testing::OnnxModel custom = relu_matmul_onnx();
  custom.node("Relu", {"y"}, {"z"}, "vendor_relu").set_domain("com.example");
  custom.output("z");
  expect_error([&] { custom.import(); }, ErrorCode::kUnsupported,
               {"node 'vendor_relu'", "com.example"});

  Session s(relu_matmul_onnx().import());
  expect_good_output(s.run({good_input()})[0]);
}
#endif  // GF_HAVE_ONNX

TEST(ErrorClasses, ShapeMismatchAtRunNamesTheInputAndTheSessionStillRuns) {
  for (CpuBackend backend : {CpuBackend::kFused, CpuBackend::kReference}) {
    Session s(relu_matmul_graph(), SessionOptions{Device::kCpu, backend});
    const Tensor flat = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
    const Tensor ints = testing::i64({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    const Tensor narrow = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    expect_error([&] { s.run({flat}); }, ErrorCode::kShapeMismatch,
                 {"input 'x'", "f32[n,4]", "f32[8]"});
    expect_error([&] { s.run({ints}); }, ErrorCode::kShapeMismatch, {"input 'x'", "i64[2,4]"});
    expect_error([&] { s.run({narrow}); }, ErrorCode::kShapeMismatch, {"input 'x'", "f32[2,3]"});
    expect_error([&] { s.run({}); }, ErrorCode::kInvalidArgument, {"takes 1 inputs, got 0"});
    expect_good_output(s.run({good_input()})[0]);
  }
}

TEST(ErrorClasses, OutOfMemoryNamesTheAllocationAndSessionsKeepWorking) {
  const Tensor big(DType::kF32, {4096, 4});  // intermediates of 64 KiB and 48 KiB
  // The fused backend reserves a run's arena and outputs up front.
  SessionOptions capped;
  capped.host_memory_limit_bytes = 16 * 1024;
  Session fused(relu_matmul_graph(), capped);
  // A second session in the same process, without a cap, is not affected by the first's refusal.
  Session uncapped(relu_matmul_graph());
  expect_error([&] { fused.run({big}); }, ErrorCode::kOutOfMemory,
               {"fused CPU program", "bytes, over the host memory limit of 16384 bytes"});
  EXPECT_EQ(fused.host_bytes_in_use(), 0u);
  EXPECT_EQ(uncapped.run({big})[0].dims(), (std::vector<int64_t>{4096, 3}));
  expect_good_output(fused.run({good_input()})[0]);

  // The reference interpreter checks node by node and names the node, op and shape.
  capped.cpu_backend = CpuBackend::kReference;
  Session reference(relu_matmul_graph(), capped);
  expect_error([&] { reference.run({big}); }, ErrorCode::kOutOfMemory,
               {"relu", "Relu", "f32[4096,4]", "16384"});
  EXPECT_EQ(reference.host_bytes_in_use(), 0u);
  expect_good_output(reference.run({good_input()})[0]);
  EXPECT_EQ(reference.host_bytes_in_use(), 0u);
}

// A compiler that fails while `broken` exists beside it, and otherwise is the system's.
class ErrorClassesJit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gf_test_error_classes_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    compiler_ = dir_ / "flaky-c++";
    std::ofstream script(compiler_);
    script << "#!/bin/sh\n"
              "if [ \"$1\" != --version ] && [ -e '"
           << (dir_ / "broken").string()
           << "' ]; then\n"
              "  echo 'flaky-c++: error: simulated internal compiler error' >&2\n"
              "  exit 4\n"
              "fi\n"
              "exec c++ \"$@\"\n";
    script.close();
    fs::permissions(compiler_, fs::perms::owner_all);
    std::ofstream(dir_ / "broken").put('\n');
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_, compiler_;
};

TEST_F(ErrorClassesJit, CompileFailureIsACompileErrorAndTheJitRecovers) {
  codegen::JitOptions options;
  options.compiler = compiler_.string();
  options.cache_dir = dir_ / "cache";
  codegen::JitCompiler jit(options);
  const std::string source =
      "extern \"C\" void k(void* const* b) { *static_cast<int*>(b[0]) = 42; }\n";
  expect_error([&] { jit.compile(source); }, ErrorCode::kCompileError,
               {"flaky-c++", "failed (exit 4)", "simulated internal compiler error", ".cpp"});
  // Broken source through a working compiler: the compiler's own error is quoted.
  fs::remove(dir_ / "broken");
  expect_error(
      [&] { jit.compile("extern \"C\" void k(void* const* b) { undeclared_name = 1; }\n"); },
      ErrorCode::kCompileError, {"failed", "undeclared_name"});
  // The failure was not cached: the same JIT compiles the same source once the compiler works.
  const codegen::JitLibraryPtr lib = jit.compile(source);
  int out = 0;
  void* buffers[] = {&out};
  lib->kernel("k")(buffers);
  EXPECT_EQ(out, 42);
  // And a Session (on the process's own JIT) runs as before.
  Session s(relu_matmul_graph());
  expect_good_output(s.run({good_input()})[0]);
}

// stdout of a shell command, trailing newline dropped.
std::string command_output(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, pipe)) out += buf;
    pclose(pipe);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The same failure inside a Session: the process's JIT runs `c++` from PATH, so a PATH whose
// first `c++` is the flaky compiler breaks the Session's compile. The graph's static width is
// new to this process and (almost surely) to the disk cache, so its kernel is compiled.
TEST_F(ErrorClassesJit, CompileFailureInASessionIsACompileErrorAndTheSessionRecovers) {
  const std::string real = command_output("command -v c++");
  ASSERT_FALSE(real.empty());
  std::ofstream script(dir_ / "c++");
  script << "#!/bin/sh\n[ -e '" << (dir_ / "broken").string()
         << "' ] && [ \"$1\" != --version ] && { echo 'c++: error: simulated internal compiler error' >&2; "
            "exit 4; }\nexec '"
         << real << "' \"$@\"\n";
  script.close();
  fs::permissions(dir_ / "c++", fs::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (dir_.string() + ":" + path).c_str(), 1);
  // Only takes effect where this test is the process's first JIT user (ctest runs it alone).
  setenv("XDG_CACHE_HOME", (dir_ / "xdg").c_str(), 1);

  const int64_t width = 1000 + static_cast<int64_t>(getpid() % 30000);
  GraphBuilder b("wide");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), width});
  b.output(b.unary(Op::kExp, b.unary(Op::kRelu, x)), "y");
  Session s(b.build());
  Tensor in(DType::kF32, {2, width});
  in.data<float>()[0] = 1;
  in.data<float>()[width + 1] = -3;
  expect_error([&] { s.run({in}); }, ErrorCode::kCompileError,
               {"failed (exit 4)", "simulated internal compiler error"});
  EXPECT_EQ(s.stats().programs_compiled, 0);
  fs::remove(dir_ / "broken");
  const Tensor y = s.run({in})[0];
  setenv("PATH", path.c_str(), 1);
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, width}));
  EXPECT_FLOAT_EQ(y.data<float>()[0], std::exp(1.0f));
  EXPECT_FLOAT_EQ(y.data<float>()[1], 1.0f);
  EXPECT_FLOAT_EQ(y.data<float>()[width + 1], 1.0f);  // exp(relu(-3))
  EXPECT_EQ(s.stats().programs_compiled, 1);
}

}  // namespace
}  // namespace gf
