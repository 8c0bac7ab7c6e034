// Anchor kernels: dispatch by op to the family emitters (anchor_attention.cpp,
// anchor_window.cpp).
#include "codegen/cuda/anchor_kernels.h"

#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/anchor_kernels_impl.h"
#include "graphfuse/error.h"

namespace gf::codegen {

std::vector<ValueId> anchor_kernel_buffers(const Node& node) {
  std::vector<ValueId> buffers;
  for (ValueId v : node.inputs)
    if (v != kNoValue) buffers.push_back(v);
  for (ValueId v : node.outputs) buffers.push_back(v);
  return buffers;
}

bool has_cuda_anchor_kernel(Op op) {
  switch (op) {
    case Op::kAttention:
    case Op::kMaxPool:
    case Op::kAveragePool:
    case Op::kGlobalMaxPool:
    case Op::kGlobalAveragePool:
    case Op::kConv:
      return true;
    default:
      return false;
  }
}

CudaKernelSource emit_anchor_kernel(const Node& node, const Graph& g, const std::string& name,
                                    const CudaEmitOptions& options) {
  if (options.sm_count < 1) {
    throw Error(ErrorCode::kInvalidArgument, "node '" + node.name + "' (" +
                                                 std::string(op_name(node.op)) + "): sm_count " +
                                                 std::to_string(options.sm_count) +
                                                 " is not positive");
  }
  check_attention_options(node, options);
  switch (node.op) {
    case Op::kAttention:
      return emit_attention_kernel(node, g, name, options);
    case Op::kMaxPool:
    case Op::kAveragePool:
    case Op::kGlobalMaxPool:
    case Op::kGlobalAveragePool:
      return emit_pool_kernel(node, g, name, options);
    case Op::kConv:
      return emit_conv_kernel(node, g, name, options);
    default:
      throw Error(ErrorCode::kUnsupported, describe_node(g, node) + ": no CUDA kernel for this op");
  }
}

}  // namespace gf::codegen
