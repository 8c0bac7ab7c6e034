// The process's CUDA device: the primary context of device 0, retained once through the driver
// API (cuda_module.h) and kept for the life of the process (released at exit, it would race
// with static destructors of modules and buffers), the process-wide NVRTC compiler, and a stream
// owner. Every entry point of the executor makes the context current on its thread first, so a
// Session may be used from any thread.
#pragma once

#include <cuda.h>

#include <string>

namespace gf::codegen {
class NvrtcCompiler;
}

namespace gf::cuda {

class CudaContext {
 public:
  // The device, its context retained on first use. Throws kDeviceError naming the reason
  // (no driver, no device) every time it is called on a machine without one.
  static CudaContext& get();

  // Makes the primary context current on the calling thread (cheap; call at every entry).
  void make_current() const;
  CUcontext context() const { return context_; }
  CUdevice device() const { return device_; }
  int compute_capability() const { return compute_capability_; }  // major * 10 + minor
  int sm_count() const { return sm_count_; }
  const std::string& name() const { return name_; }

 private:
  CudaContext();
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  int compute_capability_ = 0;
  int sm_count_ = 0;
  std::string name_;
};

// One NVRTC compiler for the process, its cubin cache on disk beside the CPU JIT's
// (nvrtc_options_from_environment): a second start compiles nothing.
codegen::NvrtcCompiler& process_nvrtc();

// A non-blocking stream of the current context, destroyed with the object.
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  CUstream get() const { return stream_; }
  // Waits for all work on the stream; throws kDeviceError naming `what` when a kernel failed.
  void synchronize(const std::string& what) const;

 private:
  CUstream stream_ = nullptr;
};

}  // namespace gf::cuda
