// Builds small ONNX models in memory through libonnx's protobuf classes, for the importer tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "graphfuse/onnx.h"

namespace gf::testing {

class OnnxModel {
 public:
  explicit OnnxModel(int64_t opset = 17, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("graphfuse-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  onnx::ModelProto& proto() { return model_; }

  // dims: >= 0 concrete, "name" symbolic via sym_dims (index -> name).
  onnx::ValueInfoProto& input(const std::string& name, int32_t elem_type, std::vector<int64_t> dims,
                              std::vector<std::string> symbols = {}) {
    return value_info(graph().add_input(), name, elem_type, dims, symbols);
  }
  onnx::ValueInfoProto& output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT) {
    auto* v = graph().add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();  // libonnx 1.12's checker wants one
    return *v;
  }

  onnx::TensorProto& initializer_f32(const std::string& name, std::vector<int64_t> dims,
                                     const std::vector<float>& values, bool raw = true) {
    auto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    if (raw) {
      t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
    } else {
      for (float v : values) t->add_float_data(v);
    }
    return *t;
  }

  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(graph().node_size()) : name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return *n;
  }

  static void attr_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> values) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t value) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  std::string bytes() const { return model_.SerializeAsString(); }
  Graph import(const OnnxImportOptions& options = {}, const std::string& base_dir = "") const {
    return import_onnx_bytes(bytes(), options, base_dir);
  }

 private:
  static onnx::ValueInfoProto& value_info(onnx::ValueInfoProto* v, const std::string& name, int32_t elem_type,
                                          const std::vector<int64_t>& dims, const std::vector<std::string>& symbols) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (i < symbols.size() && !symbols[i].empty()) d->set_dim_param(symbols[i]);
      else if (dims[i] >= -1 && dims[i] != -1) d->set_dim_value(dims[i]);
      else if (dims[i] < -1) d->set_dim_value(dims[i]);  // deliberately invalid, for error tests
    }
    return *v;
  }

  onnx::ModelProto model_;
};

}  // namespace gf::testing
