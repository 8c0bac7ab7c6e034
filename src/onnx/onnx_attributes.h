// ONNX attributes -> graphfuse attributes, and the value of a Constant node.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "graphfuse/attribute.h"
#include "onnx/onnx_tensor.h"

namespace gf::onnx_import {

// `what` names the node in errors ("node 'n' (Op)"). Graph-valued, sparse and type attributes
// are kUnsupported.
Attribute convert_attribute(const onnx::AttributeProto& a, TensorReader& reader,
                            const std::string& what);

// The tensor a Constant node holds (value, value_float(s), value_int(s)); kUnsupported for
// strings and sparse values.
Tensor constant_node_value(const onnx::NodeProto& node, TensorReader& reader,
                           const std::string& what);

}  // namespace gf::onnx_import
