// Anchor kernels: dispatch by op.
#include "codegen/cuda/anchor_kernels.h"

#include "graphfuse/error.h"

namespace gf::codegen {

std::vector<ValueId> anchor_kernel_buffers(const Node& node) {
  std::vector<ValueId> buffers;
  for (ValueId v : node.inputs)
    if (v != kNoValue) buffers.push_back(v);
  for (ValueId v : node.outputs) buffers.push_back(v);
  return buffers;
}

bool has_cuda_anchor_kernel(Op) { return false; }

CudaKernelSource emit_anchor_kernel(const Node& node, const Graph&, const std::string&,
                                    const CudaEmitOptions&) {
  throw Error(ErrorCode::kUnsupported, "node '" + node.name + "' (" + std::string(op_name(node.op)) +
                                           "): no CUDA kernel for this op");
}

}  // namespace gf::codegen
