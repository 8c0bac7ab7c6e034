// What the builders of a program's steps share (cuda_program_builder.cpp, gemm_steps.cpp).
#pragma once

#include <chrono>

#include "graphfuse/error.h"

namespace gf::cuda {

// Adds the time its scope took to `into` (the compile's split of library plans and choices).
class ScopeClock {
 public:
  explicit ScopeClock(double& into) : into_(into), start_(std::chrono::steady_clock::now()) {}
  ~ScopeClock() {
    into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  ScopeClock(const ScopeClock&) = delete;
  ScopeClock& operator=(const ScopeClock&) = delete;

 private:
  double& into_;
  std::chrono::steady_clock::time_point start_;
};

// A path refused the work (the builder tries the next one); other errors propagate.
inline bool is_unsupported(const Error& e) {
  return e.code() == ErrorCode::kUnsupported;
}

}  // namespace gf::cuda
