// Device discovery through the CUDA runtime. On a machine with no GPU or no driver the runtime
// reports an error code; that becomes the probe's reason, never an exception.
#include <cuda_runtime_api.h>

#include "graphfuse/device.h"

namespace gf {

CudaProbe probe_cuda() {
  CudaProbe probe;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    probe.reason = err == cudaErrorNoDevice ? std::string("no CUDA device")
                                            : std::string("no CUDA device (") +
                                                  cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return probe;
  }
  if (count == 0) {
    probe.reason = "no CUDA device";
    return probe;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    probe.devices.push_back(CudaDeviceInfo{i, prop.name, prop.major, prop.minor,
                                           prop.multiProcessorCount,
                                           static_cast<int64_t>(prop.totalGlobalMem)});
  }
  if (probe.devices.empty()) probe.reason = "no CUDA device could be queried";
  return probe;
}

}  // namespace gf
