#include "runtime/cpu/anchor_kernel.h"

namespace gf::cpu {

std::unique_ptr<AnchorKernel> make_anchor_kernel(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  for (ValueId v : n.inputs) {
    if (v != kNoValue && !g.value(v).type.shape.is_static()) return nullptr;
  }
  if (n.inputs.empty() || g.value(n.inputs[0]).type.dtype != DType::kF32) return nullptr;
  switch (n.op) {
    case Op::kConv:
      return make_conv_kernel(g, n);
    case Op::kMatMul:
      return make_matmul_kernel(g, n);
    case Op::kGemm:
      return make_gemm_kernel(g, n);
    case Op::kAttention:
      return make_attention_kernel(g, n);
    case Op::kMaxPool:
      return make_max_pool_kernel(g, n);
    default:
      return nullptr;
  }
}

}  // namespace gf::cpu
