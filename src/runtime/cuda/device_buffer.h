// Device memory owned by one object (a program's arena, its weights, its pointer tables, its
// library workspace): allocated in the current context, freed on destruction.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gf::cuda {

// A cap on the device memory that a group of buffers (one session's) holds together.
// Thread-safe.
class DeviceMemoryBudget {
 public:
  explicit DeviceMemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}  // 0: no cap
  // Throws kOutOfMemory naming `what`, the size, the cap and what is in use when `bytes` more
  // would pass the cap; nothing is charged then.
  void charge(uint64_t bytes, const std::string& what);
  void refund(uint64_t bytes) noexcept { used_.fetch_sub(bytes); }
  uint64_t used() const { return used_.load(); }
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws kOutOfMemory naming `what` and the size when the device has no room or `budget`
  // (null: none) would be passed, kDeviceError for other failures. Zero bytes allocate nothing
  // (ptr() is 0).
  DeviceBuffer(size_t bytes, const std::string& what,
               std::shared_ptr<DeviceMemoryBudget> budget = nullptr);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void* address(size_t offset = 0) const {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr_ + offset));
  }

 private:
  void release();
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
  std::shared_ptr<DeviceMemoryBudget> budget_;  // refunded on release
};

}  // namespace gf::cuda
