// Device memory owned by one object (a program's arena, its weights, its pointer tables, its
// library workspace): allocated in the current context, freed on destruction.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gf::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws kOutOfMemory naming `what` and the size when the device has no room, kDeviceError
  // for other failures. Zero bytes allocate nothing (ptr() is 0).
  DeviceBuffer(size_t bytes, const std::string& what);
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
};

}  // namespace gf::cuda
