// What the CUDA benchmarks that use the runtime API share: a status check that throws naming the
// call, a device allocation released with its owner, and the parsers of comma-separated lists of
// row counts and of names.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "graphfuse/error.h"

namespace gf::bench {

inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw Error(ErrorCode::kDeviceError, std::string(call) + ": " + cudaGetErrorString(e));
}
#define CK(call) ::gf::bench::check((call), #call)

struct DeviceAlloc {
  void* p = nullptr;
  explicit DeviceAlloc(size_t bytes) { CK(cudaMalloc(&p, std::max<size_t>(bytes, 1))); }
  ~DeviceAlloc() { cudaFree(p); }
  DeviceAlloc(const DeviceAlloc&) = delete;
  DeviceAlloc& operator=(const DeviceAlloc&) = delete;
};

// "1,2,8" -> {1, 2, 8}, each in [lo, hi]; throws kInvalidArgument naming `flag` otherwise.
inline std::vector<int64_t> parse_row_counts(const std::string& list, const std::string& flag,
                                             int64_t lo, int64_t hi) {
  std::vector<int64_t> rows;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < lo || v > hi) {
      throw Error(ErrorCode::kInvalidArgument, flag + " '" + list + "': expected row counts in " +
                                                   std::to_string(lo) + ".." + std::to_string(hi) +
                                                   ", comma separated");
    }
    rows.push_back(v);
    at = comma + 1;
  }
  return rows;
}

// "a,c" -> {"a", "c"}, each one of `allowed`; throws kInvalidArgument naming `flag` and the
// allowed names otherwise.
inline std::vector<std::string> parse_names(const std::string& list, const std::string& flag,
                                            const std::vector<std::string>& allowed) {
  std::vector<std::string> names;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    if (std::find(allowed.begin(), allowed.end(), item) == allowed.end()) {
      std::string choices;
      for (const std::string& a : allowed) choices += (choices.empty() ? "" : ", ") + a;
      throw Error(ErrorCode::kInvalidArgument,
                  flag + " takes " + choices + ", comma separated, not '" + item + "'");
    }
    names.push_back(item);
    at = comma + 1;
  }
  return names;
}

}  // namespace gf::bench
