// A progress line for long kernel compiles: "graphfuse: compiling CUDA kernels 37/111 (12 s)",
// rewritten in place on a terminal, then replaced by one summary line. A compile that finishes
// within `delay` (kernels read from the caches) prints nothing, and so does one whose stream is
// not a terminal (logs and pipes stay clean).
//
// Thread safety: done_one() may be called from several compile workers at once.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace gf::codegen {

struct CompileProgressOptions {
  std::FILE* out = stderr;
  // Print even when `out` is not a terminal (tests).
  bool force = false;
  std::chrono::milliseconds delay{500};     // nothing before this much time has passed
  std::chrono::milliseconds interval{100};  // at most one update per interval
};

class CompileProgress {
 public:
  // `what` names the kernels ("CUDA kernels"); `total` is how many will be compiled or read.
  CompileProgress(std::string what, size_t total, CompileProgressOptions options = {});
  // Ends the line with the summary, if anything was printed.
  ~CompileProgress();
  CompileProgress(const CompileProgress&) = delete;
  CompileProgress& operator=(const CompileProgress&) = delete;

  void done_one();

 private:
  using Clock = std::chrono::steady_clock;
  double seconds() const;

  std::string what_;
  size_t total_;
  CompileProgressOptions options_;
  bool enabled_;
  Clock::time_point start_ = Clock::now();
  std::mutex mutex_;
  size_t done_ = 0;
  bool printed_ = false;
  Clock::time_point last_print_{};
};

}  // namespace gf::codegen
