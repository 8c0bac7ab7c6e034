#include "runtime/cuda/cuda_context.h"

#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

CudaContext::CudaContext() {
  const CudaDriverApi& cu = cuda_driver();
  int count = 0;
  check_cu(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw Error(ErrorCode::kDeviceError, "no CUDA device");
  check_cu(cu.cuDeviceGet(&device_, 0), "cuDeviceGet(0)");
  int major = 0, minor = 0;
  check_cu(cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  check_cu(cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  check_cu(cu.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
           "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  compute_capability_ = major * 10 + minor;
  check_cu(cu.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  const CudaProbe probe = probe_cuda();
  name_ = probe.devices.empty() ? "CUDA device 0" : probe.devices.front().name;
}

CudaContext& CudaContext::get() {
  // Never destroyed (see the header). A failed construction is retried by the next call and
  // fails again with its reason.
  static CudaContext* context = new CudaContext();
  context->make_current();
  return *context;
}

void CudaContext::make_current() const {
  // Reading the thread's current context is cheaper than setting it, and every run starts here.
  CUcontext current = nullptr;
  if (cuda_driver().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_) return;
  check_cu(cuda_driver().cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

codegen::NvrtcCompiler& process_nvrtc() {
  static codegen::NvrtcCompiler* compiler = new codegen::NvrtcCompiler();
  return *compiler;
}

CudaStream::CudaStream() {
  check_cu(cuda_driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

CudaStream::~CudaStream() {
  if (stream_) cuda_driver().cuStreamDestroy(stream_);  // errors cannot leave a destructor
}

void CudaStream::synchronize(const std::string& what) const {
  check_cu(cuda_driver().cuStreamSynchronize(stream_), "cuStreamSynchronize (" + what + ")");
}

}  // namespace gf::cuda
