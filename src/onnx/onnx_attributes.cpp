#include "onnx/onnx_attributes.h"

namespace gf::onnx_import {

namespace {

using AP = onnx::AttributeProto;

// Files from old exporters may leave `type` unset; the filled field tells the kind.
int attribute_kind(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_f()) return AP::FLOAT;
  if (a.has_i()) return AP::INT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.floats_size()) return AP::FLOATS;
  if (a.ints_size()) return AP::INTS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

}  // namespace

Attribute convert_attribute(const AP& a, TensorReader& reader, const std::string& what) {
  const std::string where = what + ", attribute '" + a.name() + "'";
  if (!a.ref_attr_name().empty()) {
    throw Error(ErrorCode::kUnsupported, where + " refers to a function attribute");
  }
  switch (attribute_kind(a)) {
    case AP::FLOAT: return a.f();
    case AP::INT: return static_cast<int64_t>(a.i());
    case AP::STRING: return a.s();
    case AP::TENSOR: return reader.read(a.t(), where);
    case AP::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case AP::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case AP::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case AP::UNDEFINED: throw Error(ErrorCode::kInvalidGraph, where + " has no value");
    default:
      throw Error(ErrorCode::kUnsupported,
                  where + " is a graph, sparse tensor or type attribute, which graphfuse does not support");
  }
}

Tensor constant_node_value(const onnx::NodeProto& node, TensorReader& reader, const std::string& what) {
  if (node.attribute_size() != 1) {
    throw Error(ErrorCode::kInvalidGraph, what + " must have exactly one value attribute, has " +
                                              std::to_string(node.attribute_size()));
  }
  const AP& a = node.attribute(0);
  const std::string& n = a.name();
  if (n == "value") return reader.read(a.t(), what);
  if (n == "value_float") return Tensor::scalar<float>(a.f());
  if (n == "value_int") return Tensor::scalar<int64_t>(a.i());
  if (n == "value_floats") {
    return Tensor::from_vector<float>({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
  }
  if (n == "value_ints") {
    return Tensor::from_vector<int64_t>({a.ints_size()}, std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  throw Error(ErrorCode::kUnsupported, what + ": constant attribute '" + n +
                                           "' (strings and sparse tensors are not supported)");
}

}  // namespace gf::onnx_import
