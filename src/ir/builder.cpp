#include "graphfuse/builder.h"

#include "ir/infer.h"

namespace gf {

GraphBuilder::GraphBuilder(std::string model_name) { graph_.name = std::move(model_name); }

ValueId GraphBuilder::input(const std::string& name, DType dtype, Shape shape) {
  return graph_.add_input(name, TensorType{dtype, std::move(shape)});
}

ValueId GraphBuilder::constant(const std::string& name, Tensor data) {
  return graph_.add_constant(name.empty() ? graph_.unique_value_name("const") : name,
                             std::move(data));
}

ValueId GraphBuilder::constant_ints(const std::vector<int64_t>& values, const std::string& name) {
  return constant(name, Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

ValueId GraphBuilder::constant_scalar(float value, DType dtype, const std::string& name) {
  Tensor t(dtype, {});
  switch (dtype) {
    case DType::kF32: *t.data<float>() = value; break;
    case DType::kF16: *t.data<Half>() = Half(value); break;
    case DType::kBF16: *t.data<BFloat16>() = BFloat16(value); break;
    case DType::kF64: *t.data<double>() = value; break;
    case DType::kI64: *t.data<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kI32: *t.data<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kI8: *t.data<int8_t>() = static_cast<int8_t>(value); break;
    case DType::kU8: *t.data<uint8_t>() = static_cast<uint8_t>(value); break;
    case DType::kBool: *t.data<bool>() = value != 0.0f; break;
  }
  return constant(name, std::move(t));
}

std::vector<ValueId> GraphBuilder::op(Op op, std::vector<ValueId> inputs, Attributes attrs,
                                      int num_outputs, const std::string& name) {
  const std::string node_name =
      name.empty() ? graph_.unique_node_name(std::string(op_name(op)) + "_" +
                                             std::to_string(next_id_++))
                   : name;
  std::vector<std::string> out_names;
  for (int i = 0; i < num_outputs; ++i) {
    out_names.push_back(graph_.unique_value_name(node_name + (num_outputs > 1 ? ":" + std::to_string(i) : "")));
  }
  // Check before inserting, so a rejected node leaves the graph as it was.
  Node probe{op, node_name, inputs, std::vector<ValueId>(static_cast<size_t>(num_outputs), kNoValue),
             attrs};
  const OpInfo& info = op_info(op);
  const int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs || num_outputs < info.min_outputs ||
      num_outputs > info.max_outputs) {
    throw Error(ErrorCode::kInvalidGraph, "node '" + node_name + "' (" + std::string(info.name) +
                                              "): wrong number of inputs or outputs");
  }
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> values;
  for (ValueId v : inputs) {
    if (v != kNoValue && (v < 0 || static_cast<size_t>(v) >= graph_.num_values())) {
      throw Error(ErrorCode::kInvalidGraph, "node '" + node_name + "' (" + std::string(info.name) +
                                                "): input id " + std::to_string(v) + " is invalid");
    }
    types.push_back(v == kNoValue ? nullptr : &graph_.value(v).type);
    values.push_back(v != kNoValue && graph_.value(v).is_constant() ? &graph_.value(v).constant
                                                                     : nullptr);
  }
  std::vector<TensorType> out_types = infer_node(probe, types, values);
  NodeId id = graph_.add_node(op, node_name, std::move(inputs), out_names, std::move(attrs),
                              std::move(out_types));
  return graph_.node(id).outputs;
}

ValueId GraphBuilder::op1(Op op, std::vector<ValueId> inputs, Attributes attrs,
                          const std::string& name) {
  return this->op(op, std::move(inputs), std::move(attrs), 1, name)[0];
}

ValueId GraphBuilder::reshape(ValueId x, const std::vector<int64_t>& shape) {
  return op1(Op::kReshape, {x, constant_ints(shape)});
}

ValueId GraphBuilder::transpose(ValueId x, const std::vector<int64_t>& perm) {
  return op1(Op::kTranspose, {x}, {{"perm", perm}});
}

ValueId GraphBuilder::softmax(ValueId x, int64_t axis) {
  return op1(Op::kSoftmax, {x}, {{"axis", axis}});
}

ValueId GraphBuilder::layer_norm(ValueId x, ValueId scale, ValueId bias, int64_t axis,
                                 float epsilon) {
  return op1(Op::kLayerNormalization, {x, scale, bias}, {{"axis", axis}, {"epsilon", epsilon}});
}

ValueId GraphBuilder::gelu(ValueId x, bool tanh_approximation) {
  return op1(Op::kGelu, {x},
             {{"approximate", std::string(tanh_approximation ? "tanh" : "none")}});
}

ValueId GraphBuilder::cast(ValueId x, DType to) {
  return op1(Op::kCast, {x}, {{"to", static_cast<int64_t>(to)}});
}

ValueId GraphBuilder::reduce(Op op, ValueId x, const std::vector<int64_t>& axes, bool keepdims) {
  return op1(op, {x, constant_ints(axes)}, {{"keepdims", int64_t{keepdims}}});
}

ValueId GraphBuilder::attention(ValueId q, ValueId k, ValueId v, ValueId mask, bool causal,
                                float scale) {
  Attributes attrs{{"is_causal", int64_t{causal}}};
  if (scale != 0.0f) attrs.set("scale", scale);
  std::vector<ValueId> inputs{q, k, v};
  if (mask != kNoValue) inputs.push_back(mask);
  return op1(Op::kAttention, std::move(inputs), std::move(attrs));
}

void GraphBuilder::output(ValueId v, const std::string& name) {
  if (!name.empty() && name != graph_.value(v).name) {
    v = op1(Op::kIdentity, {v}, {}, name);
  }
  graph_.add_output(v);
}

Graph GraphBuilder::build() {
  verify_graph(graph_);
  Graph out = std::move(graph_);
  graph_ = Graph();
  return out;
}

}  // namespace gf
