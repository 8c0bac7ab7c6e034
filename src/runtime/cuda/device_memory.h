// Small RAII holders for driver-API objects that the GPU tests and the kernel benchmark share:
// device memory, the primary context of a device, an event. Every call is checked
// (kDeviceError naming the call); destructors release what they hold and never throw.
#pragma once

#include <cuda.h>

#include <cstddef>

#include "runtime/cuda/cuda_module.h"

namespace gf {

#define GF_CU(call) ::gf::check_cu((call), #call)

// Device memory from cuMemAlloc (256-byte aligned), freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    // cuMemAlloc refuses 0 bytes; an empty tensor still gets a distinct, never-read address.
    GF_CU(cuda_driver().cuMemAlloc(&ptr_, bytes == 0 ? 1 : bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) cuda_driver().cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
};

// The primary context of device `index`, retained and made current; released on destruction.
class PrimaryContext {
 public:
  explicit PrimaryContext(int index) {
    const CudaDriverApi& cu = cuda_driver();
    GF_CU(cu.cuDeviceGet(&device_, index));
    GF_CU(cu.cuDevicePrimaryCtxRetain(&context_, device_));
    GF_CU(cu.cuCtxSetCurrent(context_));
  }
  ~PrimaryContext() {
    if (context_) cuda_driver().cuDevicePrimaryCtxRelease(device_);
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// A timing event (cuEventCreate with default flags).
class CudaEvent {
 public:
  CudaEvent() { GF_CU(cuda_driver().cuEventCreate(&event_, CU_EVENT_DEFAULT)); }
  ~CudaEvent() {
    if (event_) cuda_driver().cuEventDestroy(event_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  void record(CUstream stream = nullptr) { GF_CU(cuda_driver().cuEventRecord(event_, stream)); }
  // Milliseconds from `start` to this event; waits for this one.
  float elapsed_ms_since(const CudaEvent& start) const {
    GF_CU(cuda_driver().cuEventSynchronize(event_));
    float ms = 0;
    GF_CU(cuda_driver().cuEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  CUevent event_ = nullptr;
};

}  // namespace gf
