#include <array>

#include "graphfuse/op.h"

namespace gf {

namespace {
constexpr std::array<OpInfo, kNumOps> kOpInfos = {{
#define GF_OP_INFO(name, kind, min_in, max_in, min_out, max_out) \
  OpInfo{#name, OpKind::kind, min_in, max_in, min_out, max_out},
    GF_OP_LIST(GF_OP_INFO)
#undef GF_OP_INFO
}};
}  // namespace

const OpInfo& op_info(Op op) { return kOpInfos[static_cast<size_t>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  for (int i = 0; i < kNumOps; ++i) {
    if (kOpInfos[static_cast<size_t>(i)].name == name) return static_cast<Op>(i);
  }
  return std::nullopt;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kInjective: return "injective";
    case OpKind::kReduction: return "reduction";
    case OpKind::kGemmLike: return "gemm-like";
    case OpKind::kAttention: return "attention";
    case OpKind::kOpaque: return "opaque";
  }
  return "?";
}

}  // namespace gf
