// cuDNN convolution in a build without cuDNN (GF_HAVE_CUDNN unset): every entry refuses with
// kUnsupported, so the executor runs Conv with the direct CUDA kernel instead.
#ifndef GF_HAVE_CUDNN

#include "runtime/cuda/cudnn_conv.h"

#include "graphfuse/error.h"

namespace gf::cuda {

struct CudnnConv::State {};

bool cudnn_available() { return false; }

CudnnHandle::CudnnHandle() {
  throw Error(ErrorCode::kUnsupported, "this build of graphfuse has no cuDNN");
}
CudnnHandle::~CudnnHandle() = default;

CudnnConv::CudnnConv(const CudnnHandle& handle, const Node& conv, const Graph&, bool)
    : handle_(handle) {
  throw Error(ErrorCode::kUnsupported, "node '" + conv.name + "' (Conv): this build has no cuDNN");
}
CudnnConv::~CudnnConv() = default;
size_t CudnnConv::workspace_bytes() const { return 0; }
void CudnnConv::run(const void*, const void*, const void*, void*, void*, cudaStream_t) const {}

}  // namespace gf::cuda

#endif  // GF_HAVE_CUDNN
