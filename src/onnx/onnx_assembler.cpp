#include "onnx/onnx_assembler.h"

#include "ir/infer.h"
#include "onnx/onnx_tensor.h"

namespace gf::onnx_import {

namespace {

// Shape inference follows the file's constants, so a crafted Reshape, Expand or Tile target can
// ask for dims whose element count overflows int64. Refuse those before anything counts or
// allocates them; zero dims aside, no real tensor holds more than kMaxElements.
void check_output_size(const std::string& node, Op op, const TensorType& t) {
  int64_t n = 1;
  for (const Dim& d : t.shape) {
    if (!d.is_static() || d.value() == 0) continue;
    if (d.value() > kMaxElements || n > kMaxElements / d.value()) {
      throw Error(ErrorCode::kShapeMismatch, "node '" + node + "' (" + std::string(op_name(op)) +
                                                 ") would produce " + t.to_string() +
                                                 ": more than 2^40 elements");
    }
    n *= d.value();
  }
}

}  // namespace

ValueId GraphAssembler::value(const std::string& onnx_name) const {
  if (onnx_name.empty()) return kNoValue;
  auto it = names_.find(onnx_name);
  GF_ASSERT(it != names_.end(), "value names are resolved before conversion");
  return it->second;
}

ValueId GraphAssembler::add_input(const std::string& onnx_name, TensorType type) {
  ValueId v = graph_.add_input(onnx_name, std::move(type));
  names_[onnx_name] = v;
  return v;
}

ValueId GraphAssembler::add_constant(const std::string& name, Tensor data) {
  return graph_.add_constant(graph_.unique_value_name(name.empty() ? "const" : name), std::move(data));
}

ValueId GraphAssembler::add_ints(const std::string& name, const std::vector<int64_t>& values) {
  return add_constant(name, Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

const Tensor* GraphAssembler::constant(ValueId v) const {
  if (v == kNoValue || !graph_.value(v).is_constant()) return nullptr;
  return &graph_.value(v).constant;
}

std::vector<ValueId> GraphAssembler::add_node(Op op, const std::string& node_name,
                                              std::vector<ValueId> inputs,
                                              const std::vector<std::string>& output_names,
                                              Attributes attrs) {
  const std::string name = graph_.unique_node_name(node_name.empty() ? std::string(op_name(op)) : node_name);
  const OpInfo& info = op_info(op);
  const auto n_in = static_cast<int>(inputs.size());
  const auto n_out = static_cast<int>(output_names.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) {
    throw Error(ErrorCode::kInvalidGraph, "node '" + name + "' (" + std::string(info.name) + ") has " +
                                              std::to_string(n_in) + " inputs; it takes " +
                                              std::to_string(info.min_inputs) + " to " +
                                              (info.max_inputs == kVariadic ? "any number" : std::to_string(info.max_inputs)));
  }
  if (n_out < info.min_outputs || n_out > info.max_outputs) {
    throw Error(ErrorCode::kUnsupported, "node '" + name + "' (" + std::string(info.name) + ") asks for " +
                                             std::to_string(n_out) + " outputs; graphfuse gives " +
                                             std::to_string(info.min_outputs) + " to " +
                                             std::to_string(info.max_outputs));
  }
  for (int i = 0; i < info.min_inputs; ++i) {
    if (inputs[static_cast<size_t>(i)] == kNoValue) {
      throw Error(ErrorCode::kInvalidGraph, "node '" + name + "' (" + std::string(info.name) +
                                                "): required input " + std::to_string(i) + " is empty");
    }
  }
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> values;
  for (ValueId v : inputs) {
    types.push_back(v == kNoValue ? nullptr : &graph_.value(v).type);
    values.push_back(constant(v));
  }
  Node probe{op, name, inputs, std::vector<ValueId>(output_names.size(), kNoValue), attrs};
  std::vector<TensorType> out_types = infer_node(probe, types, values);
  for (const TensorType& t : out_types) check_output_size(name, op, t);
  if (std::vector<Tensor> folded = try_fold(probe, out_types); !folded.empty()) {
    std::vector<ValueId> outs;
    for (size_t i = 0; i < folded.size(); ++i) {
      outs.push_back(add_constant(output_names[i].empty() ? name + ":out" : output_names[i], std::move(folded[i])));
      if (!output_names[i].empty()) names_[output_names[i]] = outs.back();
    }
    return outs;
  }
  std::vector<std::string> names;
  for (const std::string& o : output_names) {
    names.push_back(o.empty() || graph_.find_value(o) != kNoValue ? graph_.unique_value_name(name + ":out") : o);
  }
  NodeId id = graph_.add_node(op, name, std::move(inputs), names, std::move(attrs), std::move(out_types));
  const std::vector<ValueId>& outs = graph_.node(id).outputs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!output_names[i].empty()) names_[output_names[i]] = outs[i];
  }
  return outs;
}

std::vector<Tensor> GraphAssembler::try_fold(const Node& probe, const std::vector<TensorType>& out_types) const {
  if (!evaluate_) return {};
  // Keep folded constants small: a folded Expand or ConstantOfShape could be a huge weight.
  constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;
  for (const TensorType& t : out_types) {
    if (!t.shape.is_static() || t.shape.numel() > kMaxFoldedElements) return {};
  }
  if ((probe.op == Op::kShape || probe.op == Op::kSize) && !constant(probe.inputs[0])) {
    // The shape is known although the data is not: evaluate on a stand-in of that shape, which
    // Shape/Size never read. (The input's numel is bounded by the importer's dim checks.)
    const TensorType& in = graph_.value(probe.inputs[0]).type;
    if (!in.shape.is_static() || in.shape.numel() > kMaxFoldedElements) return {};
    const Tensor stand_in(in.dtype, in.shape.static_dims());
    return evaluate_(probe, std::span<const Tensor>(&stand_in, 1));
  }
  std::vector<Tensor> args;
  for (ValueId v : probe.inputs) {
    if (v != kNoValue && !constant(v)) return {};
    args.push_back(v == kNoValue ? Tensor() : *constant(v));
  }
  try {
    return evaluate_(probe, args);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return {};  // left for run time to report
    throw;
  }
}

ValueId GraphAssembler::add_helper(Op op, const std::string& base_name, std::vector<ValueId> inputs,
                                   Attributes attrs) {
  const std::string name = graph_.unique_node_name(base_name);
  return add_node(op, name, std::move(inputs), {graph_.unique_value_name(name)}, std::move(attrs))[0];
}

}  // namespace gf::onnx_import
