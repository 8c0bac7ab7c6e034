// What a failed kernel compile shows of the compiler's output (the system C++ compiler's or
// NVRTC's log): the part a reader needs, from the first error on.
#pragma once

#include <string>

namespace gf::codegen {

// The lines of `log` from the first one that mentions "error" (else from the start), at most
// `max_lines` of them, each on a line of its own indented by two spaces.
std::string first_error_lines(const std::string& log, int max_lines);

}  // namespace gf::codegen
