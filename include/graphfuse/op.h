// Op identifiers and their static properties, generated from the op table (op_list.h).
//
// Thread safety: the op properties are constant tables; safe on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "graphfuse/op_list.h"

namespace gf {

inline constexpr int kVariadic = 1 << 20;

enum class Op : uint16_t {
#define GF_OP_ENUM(name, kind, min_in, max_in, min_out, max_out) k##name,
  GF_OP_LIST(GF_OP_ENUM)
#undef GF_OP_ENUM
};

#define GF_OP_COUNT(...) +1
inline constexpr int kNumOps = 0 GF_OP_LIST(GF_OP_COUNT);
#undef GF_OP_COUNT

// How an op may fuse (TVM's classes): the planner reads these, never op names.
enum class OpKind : uint8_t {
  kElementwise,  // one output element from the same element of each input
  kBroadcast,    // elementwise after numpy broadcasting of its inputs
  kInjective,    // each output element is one input element (reshape, transpose, gather ...)
  kReduction,    // reduces along axes (sums, norms, softmax, pools)
  kGemmLike,     // matmul/conv: accepts a fused elementwise epilogue
  kAttention,    // the fused attention op
  kOpaque,       // everything else
};

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int min_inputs;
  int max_inputs;
  int min_outputs;
  int max_outputs;
};

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
std::optional<Op> parse_op(std::string_view name);  // by ONNX op type name
std::string_view op_kind_name(OpKind kind);

}  // namespace gf
