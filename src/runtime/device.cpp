#include "graphfuse/device.h"

namespace gf {

std::string_view device_name(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }

#ifndef GF_HAVE_CUDA
CudaProbe probe_cuda() { return CudaProbe{{}, "no CUDA device (graphfuse was built without CUDA)"}; }
void start_cuda_setup() {}
#endif

}  // namespace gf
