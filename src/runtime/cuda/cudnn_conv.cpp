// cuDNN convolution (not yet built in: every entry refuses with kUnsupported).
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
