// Conversion of one ONNX node into graph nodes, with each opset's attribute-vs-input
// differences turned into the newest opset's form (the form our IR takes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "graphfuse/graph.h"
#include "onnx/onnx_assembler.h"
#include "onnx/onnx_tensor.h"

namespace gf::onnx_import {

// One node on its way into the graph: its converted inputs and attributes, which the per-op
// rules below rewrite before the node is added.
struct PendingNode {
  const onnx::NodeProto& proto;
  Op op;
  std::string name;                       // the ONNX node name (may be empty)
  std::string what;                       // "node 'n' (Op)" for messages
  std::vector<ValueId> inputs;            // kNoValue for omitted optional inputs
  std::vector<std::string> outputs;       // ONNX output names
  Attributes attrs;
  int64_t opset;
};

// Adds the graph nodes for `node` (anything but Constant, which the importer handles).
void convert_node(const onnx::NodeProto& node, int64_t opset, GraphAssembler& out,
                  TensorReader& reader);

// Rules for opsets older than the IR's form (onnx_legacy.cpp). Each returns true when it has
// added the node(s) itself; otherwise it has rewritten `n` in place for the generic path.
bool convert_legacy(PendingNode& n, GraphAssembler& out);

// ONNX Attention onto our fused Attention op (onnx_attention.cpp). The features a node uses that
// our op lacks ("input 'past_key' (KV cache)", ...), empty when it maps; convert_attention throws
// kUnsupported naming them, else drops the omitted optional slots and unused attributes.
std::vector<std::string> attention_unsupported_features(const onnx::NodeProto& node);
void convert_attention(PendingNode& n);

// A 0-d tensor of `dtype` holding `value` (Clip bounds, Pad values).
Tensor scalar_tensor(DType dtype, double value);
// "node 'n' (Op)".
std::string describe_onnx_node(const onnx::NodeProto& node);

}  // namespace gf::onnx_import
