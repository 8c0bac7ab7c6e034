// Shared by the libFuzzer targets: a gf::Error is the expected answer to bad input; anything
// else (another exception, a crash, a sanitizer report, a broken invariant) is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "graphfuse/error.h"

namespace gf::fuzz {

// Runs `fn`; swallows gf::Error, aborts (a finding libFuzzer saves) on any other exception.
template <class Fn>
void expect_only_gf_errors(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
    // The documented outcome for malformed input.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: escaped a non-gf exception: %s\n", what, e.what());
    std::abort();
  }
}

// A property that must hold on every accepted input; abort names it.
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace gf::fuzz
