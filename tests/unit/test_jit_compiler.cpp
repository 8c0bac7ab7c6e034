// The CPU JIT: compiling, the in-memory and on-disk caches, corrupt cache files, compiler
// errors and parallel compiles. Sources are tiny so each compile is quick.
#include <thread>
#include "codegen/cpu/jit_compiler.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codegen/common/hash.h"
#include "test_util.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using codegen::JitCompiler;
using codegen::JitOptions;

// A fresh cache directory per test, removed afterwards.
class JitCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gf_test_jit_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  JitOptions options() const {
    JitOptions o;
    o.cache_dir = dir_;
    return o;
  }
  // A kernel that writes `value` into its first buffer's first int.
  static std::string source(int value, const std::string& name = "k") {
    return "extern \"C\" void " + name +
           "(void* const* b) { *static_cast<int*>(b[0]) = " + std::to_string(value) + "; }\n";
  }
  static int call(const codegen::JitLibraryPtr& lib, const std::string& name = "k") {
    int out = 0;
    void* buffers[] = {&out};
    lib->kernel(name)(buffers);
    return out;
  }
  std::vector<fs::path> files_with_extension(const std::string& ext) const {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ext) found.push_back(e.path());
    }
    return found;
  }

  fs::path dir_;
};

TEST(JitHash, Fnv1a64MatchesPublishedValues) {
  EXPECT_EQ(codegen::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(codegen::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(codegen::fnv1a64("foobar"), 0x85944171f73967e8ull);
  // Field separators keep ("ab", "c") and ("a", "bc") apart.
  EXPECT_NE(codegen::Fnv1a64().add_field("ab").add_field("c").value(),
            codegen::Fnv1a64().add_field("a").add_field("bc").value());
}

TEST_F(JitCompilerTest, SecondCompileOfTheSameSourceIsServedFromMemory) {
  JitCompiler jit(options());
  const auto first = jit.compile(source(7));
  const auto second = jit.compile(source(7));
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(jit.compiler_runs(), 1);
  EXPECT_EQ(call(first), 7);
  EXPECT_NE(jit.cache_key(source(7)), jit.cache_key(source(8)));
}

TEST_F(JitCompilerTest, FreshCompilerLoadsFromDiskWithoutCompiling) {
  {
    JitCompiler jit(options());
    EXPECT_EQ(call(jit.compile(source(11))), 11);
    EXPECT_EQ(jit.compiler_runs(), 1);
  }
  JitCompiler again(options());
  EXPECT_EQ(call(again.compile(source(11))), 11);
  EXPECT_EQ(again.compiler_runs(), 0);
  EXPECT_EQ(files_with_extension(".so").size(), 1u);
  EXPECT_EQ(files_with_extension(".cpp").size(), 1u);  // the source stays beside its library
}

TEST_F(JitCompilerTest, CompilersSharingACacheDirectoryCompileTheSameSourceAtOnce) {
  // Separate compiler objects stand for separate processes: neither may pull the other's
  // files away mid-compile.
  for (int round = 0; round < 3; ++round) {
    JitCompiler a(options()), b(options());
    int ra = 0, rb = 0;
    std::thread ta([&] { ra = call(a.compile(source(40 + round))); });
    std::thread tb([&] { rb = call(b.compile(source(40 + round))); });
    ta.join();
    tb.join();
    EXPECT_EQ(ra, 40 + round);
    EXPECT_EQ(rb, 40 + round);
  }
}

TEST_F(JitCompilerTest, CorruptCachedLibraryIsRecompiled) {
  {
    JitCompiler jit(options());
    jit.compile(source(5));
  }
  const auto libs = files_with_extension(".so");
  ASSERT_EQ(libs.size(), 1u);
  {
    std::ofstream truncate(libs[0], std::ios::binary | std::ios::trunc);
    truncate << "\x7f"
                "ELF garbage";
  }
  JitCompiler again(options());
  EXPECT_EQ(call(again.compile(source(5))), 5);
  EXPECT_EQ(again.compiler_runs(), 1);
}

TEST_F(JitCompilerTest, DiskCacheCanBeTurnedOff) {
  {
    JitCompiler jit(options());
    jit.compile(source(3));
  }
  JitOptions o = options();
  o.use_disk_cache = false;
  JitCompiler no_disk(o);
  EXPECT_EQ(call(no_disk.compile(source(3))), 3);
  EXPECT_EQ(no_disk.compiler_runs(), 1);
}

TEST_F(JitCompilerTest, CompileErrorNamesTheErrorAndKeepsTheSource) {
  JitCompiler jit(options());
  const std::string bad = "extern \"C\" void k(void* const* b) { undeclared_thing(b); }\n";
  std::string message;
  try {
    jit.compile(bad);
    ADD_FAILURE() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompileError);
    message = e.what();
  }
  EXPECT_NE(message.find("undeclared_thing"), std::string::npos) << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  const auto kept = files_with_extension(".cpp");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(message.find(kept[0].string()), std::string::npos) << message;
  EXPECT_TRUE(files_with_extension(".so").empty());
  // A failed compile is not cached: the next call runs the compiler again.
  EXPECT_THROW(jit.compile(bad), Error);
  EXPECT_EQ(jit.compiler_runs(), 2);
}

TEST_F(JitCompilerTest, MissingCompilerAndMissingSymbolAreCompileErrors) {
  JitOptions o = options();
  o.compiler = "/nonexistent/graphfuse-c++";
  JitCompiler missing(o);
  testing::expect_error([&] { missing.compile(source(1)); }, ErrorCode::kCompileError,
                        {"/nonexistent/graphfuse-c++"});
  JitCompiler jit(options());
  const auto lib = jit.compile(source(1));
  testing::expect_error([&] { lib->symbol("not_there"); }, ErrorCode::kCompileError, {"not_there"});
}

TEST_F(JitCompilerTest, CompileAllKeepsOrderAndSharesDuplicates) {
  JitCompiler jit(options());
  const auto libs = jit.compile_all({source(1, "a"), source(2, "b"), source(1, "a")});
  ASSERT_EQ(libs.size(), 3u);
  EXPECT_EQ(call(libs[0], "a"), 1);
  EXPECT_EQ(call(libs[1], "b"), 2);
  EXPECT_EQ(libs[0].get(), libs[2].get());
  EXPECT_EQ(jit.compiler_runs(), 2);
  testing::expect_error(
      [&] {
        jit.compile_all({source(4), "this is not C++"});
      },
      ErrorCode::kCompileError, {"error"});
}

TEST(JitOptions, DefaultCacheDirFollowsXdgCacheHome) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_CACHE_HOME", "/tmp/gf-xdg-test", 1);
  EXPECT_EQ(codegen::jit_options_from_environment().cache_dir,
            fs::path("/tmp/gf-xdg-test/graphfuse"));
  if (old) {
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_CACHE_HOME");
  }
}

}  // namespace
}  // namespace gf
