#include "runtime/cuda/device_buffer.h"

#include <utility>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

void DeviceMemoryBudget::charge(uint64_t bytes, const std::string& what) {
  uint64_t used = used_.load();
  do {
    if (limit_ != 0 && (bytes > limit_ || used > limit_ - bytes)) {
      throw Error(ErrorCode::kOutOfMemory,
                  "cannot allocate " + std::to_string(bytes) + " bytes of GPU memory for " + what +
                      ": the session's device memory limit is " + std::to_string(limit_) +
                      " bytes and " + std::to_string(used) + " are in use");
    }
  } while (!used_.compare_exchange_weak(used, used + bytes));
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what,
                           std::shared_ptr<DeviceMemoryBudget> budget)
    : bytes_(bytes) {
  if (bytes == 0) return;
  if (budget) budget->charge(bytes, what);
  const CUresult r = cuda_driver().cuMemAlloc(&ptr_, bytes);
  if (r != CUDA_SUCCESS) {
    ptr_ = 0;
    if (budget) budget->refund(bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(bytes) +
                                               " bytes of GPU memory for " + what);
    }
    check_cu(r, "cuMemAlloc (" + std::to_string(bytes) + " bytes for " + what + ")");
  }
  budget_ = std::move(budget);
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (ptr_) {
    cuda_driver().cuMemFree(ptr_);  // errors cannot leave a destructor
    if (budget_) budget_->refund(bytes_);
  }
  ptr_ = 0;
  bytes_ = 0;
  budget_.reset();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      budget_(std::move(other.budget_)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    budget_ = std::move(other.budget_);
  }
  return *this;
}

}  // namespace gf::cuda
