#include "onnx/onnx_nodes.h"

#include <algorithm>

#include "graphfuse/onnx.h"
#include "ir/dtype_dispatch.h"
#include "ir/infer.h"
#include "onnx/onnx_attributes.h"

namespace gf::onnx_import {

namespace {

bool is_default_domain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

// Cast's `to` (and any dtype-valued attribute) holds a TensorProto code in ONNX and a
// gf::DType value in our IR.
void map_cast_to(PendingNode& n) {
  if (!n.attrs.has("to")) throw Error(ErrorCode::kInvalidGraph, n.what + " has no 'to' attribute");
  const int64_t code = n.attrs.get_int("to", 0);
  const DType to = require_dtype(static_cast<int32_t>(code), n.what + " (target type of the cast)");
  n.attrs.set("to", static_cast<int64_t>(to));
  // saturate / round_mode only change float8 and float4 casts, which graphfuse does not have.
  n.attrs.erase("saturate");
  n.attrs.erase("round_mode");
}

}  // namespace

std::string describe_onnx_node(const onnx::NodeProto& node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

Tensor scalar_tensor(DType dtype, double value) {
  Tensor t(dtype, {});
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    *static_cast<T*>(t.raw()) = static_cast<T>(static_cast<ComputeType<T>>(value));
  });
  return t;
}

void convert_node(const onnx::NodeProto& node, int64_t opset, GraphAssembler& out, TensorReader& reader) {
  const std::string what = describe_onnx_node(node);
  const std::optional<Op> op = onnx_op_to_ir(node.op_type(), node.domain());
  if (!op) {
    throw Error(ErrorCode::kUnsupported, what + " of domain '" + node.domain() + "' is not supported");
  }
  PendingNode n{node, *op, node.name(), what, {}, {}, {}, opset};
  for (const std::string& in : node.input()) n.inputs.push_back(out.value(in));
  while (!n.inputs.empty() && n.inputs.back() == kNoValue) n.inputs.pop_back();
  n.outputs.assign(node.output().begin(), node.output().end());
  while (!n.outputs.empty() && n.outputs.back().empty()) n.outputs.pop_back();
  for (const auto& a : node.attribute()) n.attrs.set(a.name(), convert_attribute(a, reader, what));

  if (n.op == Op::kCast) map_cast_to(n);
  if (n.op == Op::kCastLike) n.attrs.erase("saturate");
  if (n.op == Op::kAttention) convert_attention(n);
  if (convert_legacy(n, out)) return;
  out.add_node(n.op, n.name, std::move(n.inputs), n.outputs, std::move(n.attrs));
}

}  // namespace gf::onnx_import

namespace gf {

std::optional<Op> onnx_op_to_ir(std::string_view op_type, std::string_view domain) {
  if (!onnx_import::is_default_domain(domain)) return std::nullopt;
  // An op without shape inference cannot be imported (inference validates every node).
  std::optional<Op> op = parse_op(op_type);
  if (op && infer_table()[static_cast<size_t>(*op)] == nullptr) return std::nullopt;
  return op;
}

bool onnx_op_is_supported(std::string_view op_type, std::string_view domain) {
  return (onnx_import::is_default_domain(domain) && op_type == "Constant") ||
         onnx_op_to_ir(op_type, domain).has_value();
}

std::vector<std::string> supported_onnx_op_types() {
  std::vector<std::string> out{"Constant"};
  for (int i = 0; i < kNumOps; ++i) {
    const std::string_view name = op_name(static_cast<Op>(i));
    if (onnx_op_to_ir(name)) out.emplace_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gf
