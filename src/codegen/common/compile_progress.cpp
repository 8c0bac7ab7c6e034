#include "codegen/common/compile_progress.h"

#include <unistd.h>

namespace gf::codegen {

CompileProgress::CompileProgress(std::string what, size_t total, CompileProgressOptions options)
    : what_(std::move(what)),
      total_(total),
      options_(options),
      enabled_(options.out != nullptr && total > 0 &&
               (options.force || isatty(fileno(options.out)) == 1)) {}

double CompileProgress::seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void CompileProgress::done_one() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  ++done_;
  const Clock::time_point now = Clock::now();
  if (now - start_ < options_.delay) return;
  if (printed_ && now - last_print_ < options_.interval && done_ < total_) return;
  // \r and "erase to the end of the line": the count only grows, but the seconds may shrink.
  std::fprintf(options_.out, "\rgraphfuse: compiling %s %zu/%zu (%.0f s)\033[K", what_.c_str(),
               done_, total_, seconds());
  std::fflush(options_.out);
  printed_ = true;
  last_print_ = now;
}

CompileProgress::~CompileProgress() {
  if (!printed_) return;
  std::fprintf(options_.out, "\rgraphfuse: %zu of %zu %s done in %.1f s\033[K\n", done_, total_,
               what_.c_str(), seconds());
  std::fflush(options_.out);
}

}  // namespace gf::codegen
