// Errors: user-facing failures throw gf::Error (a code plus a message that names the node, op and
// shapes); broken internal invariants abort with file:line through GF_ASSERT.
//
// Thread safety: an Error does not change once made; it may be read and copied on any thread.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gf {

enum class ErrorCode {
  kInvalidArgument,  // a bad value passed through the API or CLI
  kInvalidGraph,     // malformed graph: dangling value, cycle, wrong arity, bad attribute
  kShapeMismatch,    // shapes or dtypes that do not fit an op
  kUnsupported,      // valid input that graphfuse does not handle (yet)
  kOutOfMemory,      // an allocation was refused or exceeded a configured cap
  kCompileError,     // generated code failed to compile
  kDeviceError,      // a CUDA call failed, or no usable device
  kIoError,          // a file could not be read or written
  kParseError,       // a model or data file is malformed
};

std::string_view to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

namespace detail {
[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace detail

}  // namespace gf

// Internal invariant; never for user input.
#define GF_ASSERT(cond, ...)                                                  \
  do {                                                                        \
    if (!(cond)) ::gf::detail::assert_fail(#cond, __FILE__, __LINE__, "" __VA_ARGS__); \
  } while (0)
