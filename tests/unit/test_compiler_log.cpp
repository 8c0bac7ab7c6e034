// What a failed kernel compile shows of the compiler's log (codegen/common/compiler_log.h).
#include "codegen/common/compiler_log.h"

#include <gtest/gtest.h>

#include <string>

namespace gf::codegen {
namespace {

TEST(CompilerLog, ShowsTheLinesFromTheFirstErrorOnUpToTheLimit) {
  const std::string log =
      "k.cu(3): warning: unused variable\n"
      "k.cu(7): error: identifier \"x\" is undefined\n"
      "  x = 1;\n"
      "  ^\n"
      "k.cu(9): error: expected a \";\"\n";
  EXPECT_EQ(first_error_lines(log, 12),
            "\n  k.cu(7): error: identifier \"x\" is undefined\n    x = 1;\n    ^\n  k.cu(9): "
            "error: expected a \";\"");
  EXPECT_EQ(first_error_lines(log, 2),
            "\n  k.cu(7): error: identifier \"x\" is undefined\n    x = 1;");
}

TEST(CompilerLog, WithoutAnErrorShowsTheStartAndWithoutALogNothing) {
  EXPECT_EQ(first_error_lines("one\ntwo\nthree\n", 2), "\n  one\n  two");
  EXPECT_EQ(first_error_lines("", 12), "");
  EXPECT_EQ(first_error_lines("error", 0), "");
}

}  // namespace
}  // namespace gf::codegen
