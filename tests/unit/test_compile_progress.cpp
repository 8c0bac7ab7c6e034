// The progress line of long kernel compiles (codegen/common/compile_progress.h).
#include "codegen/common/compile_progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "codegen/common/parallel_compile.h"

namespace gf::codegen {
namespace {

// What was written to `f`, from its start.
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  return s;
}

CompileProgressOptions at_once(std::FILE* f) {
  CompileProgressOptions o;
  o.out = f;
  o.force = true;
  o.delay = std::chrono::milliseconds(0);
  o.interval = std::chrono::milliseconds(0);
  return o;
}

TEST(CompileProgress, CountsUpOnOneLineThenSummarises) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    CompileProgress p("CPU kernels", 3, at_once(f));
    for (int i = 0; i < 3; ++i) p.done_one();
  }
  const std::string s = contents(f);
  std::fclose(f);
  EXPECT_NE(s.find("\rgraphfuse: compiling CPU kernels 1/3 ("), std::string::npos) << s;
  EXPECT_NE(s.find("\rgraphfuse: compiling CPU kernels 3/3 ("), std::string::npos) << s;
  EXPECT_NE(s.find("\rgraphfuse: 3 of 3 CPU kernels done in "), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(s.find('\n'), s.size() - 1);  // one line, rewritten in place
}

TEST(CompileProgress, SilentOffATerminalAndForQuickCompiles) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    CompileProgressOptions not_forced = at_once(f);
    not_forced.force = false;  // a file is not a terminal
    CompileProgress p("CUDA kernels", 2, not_forced);
    p.done_one();
    p.done_one();
  }
  {
    CompileProgressOptions patient = at_once(f);
    patient.delay = std::chrono::hours(1);  // everything came from the caches
    CompileProgress p("CUDA kernels", 2, patient);
    p.done_one();
    p.done_one();
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
}

TEST(CompileProgress, HearsOfEveryCompileOfAParallelBatch) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  constexpr size_t kCount = 40;
  std::vector<int> results;
  {
    CompileProgress p("CPU kernels", kCount, at_once(f));
    results = compile_in_parallel<int>(
        kCount,
        [](size_t i) {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          return static_cast<int>(i) * 2;
        },
        &p);
  }
  for (size_t i = 0; i < kCount; ++i) EXPECT_EQ(results[i], static_cast<int>(i) * 2);
  const std::string s = contents(f);
  std::fclose(f);
  EXPECT_NE(s.find("compiling CPU kernels 40/40 ("), std::string::npos) << s;
  EXPECT_NE(s.find("40 of 40 CPU kernels done in "), std::string::npos) << s;
}

}  // namespace
}  // namespace gf::codegen
