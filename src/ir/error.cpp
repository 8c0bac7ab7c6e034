#include "graphfuse/error.h"

#include <cstdio>
#include <cstdlib>

namespace gf {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidGraph: return "invalid graph";
    case ErrorCode::kShapeMismatch: return "shape mismatch";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kCompileError: return "compile error";
    case ErrorCode::kDeviceError: return "device error";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kParseError: return "parse error";
  }
  return "unknown error";
}

namespace detail {
void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "graphfuse internal error at %s:%d: %s %s\n", file, line, expr,
               msg.c_str());
  std::abort();
}
}  // namespace detail

}  // namespace gf
