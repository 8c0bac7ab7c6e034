#include "runtime/cuda/device_buffer.h"

#include <utility>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) : bytes_(bytes) {
  if (bytes == 0) return;
  const CUresult r = cuda_driver().cuMemAlloc(&ptr_, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    ptr_ = 0;
    throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(bytes) +
                                             " bytes of GPU memory for " + what);
  }
  check_cu(r, "cuMemAlloc (" + std::to_string(bytes) + " bytes for " + what + ")");
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (ptr_) cuda_driver().cuMemFree(ptr_);  // errors cannot leave a destructor
  ptr_ = 0;
  bytes_ = 0;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace gf::cuda
