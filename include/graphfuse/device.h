// What compute devices this process can use.
//
// Thread safety: probe_cuda() keeps no state of its own; both functions may be called from any
// thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gf {

enum class Device { kCpu, kCuda };

std::string_view device_name(Device d);

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
};

struct CudaProbe {
  std::vector<CudaDeviceInfo> devices;
  std::string reason;  // why there are none: "no CUDA device", "built without CUDA", a driver error
};

// Never throws and never aborts: a machine without a GPU or driver gets an empty list and a
// reason.
CudaProbe probe_cuda();

// Starts what a process pays once before its first CUDA program can run, on a thread of its
// own, and returns at once: the CUDA context, then cuBLASLt's set-up (its first call in a
// process takes about 0.12 s on an H200, however small the product). A process that calls it
// before loading its model overlaps the two; a program compiled meanwhile waits inside the
// library for what it needs. Later calls do nothing. Never throws: without a device it does
// nothing, and the first CUDA session reports why.
void start_cuda_setup();

}  // namespace gf
