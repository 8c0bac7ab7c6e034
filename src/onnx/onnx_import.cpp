// Graph assembly: the ONNX graph's inputs, initializers and nodes (in dependency order) become a
// shape-inferred gf::Graph.
#include <climits>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graphfuse/onnx.h"
#include "onnx/onnx_assembler.h"
#include "onnx/onnx_attributes.h"
#include "onnx/onnx_model.h"
#include "onnx/onnx_nodes.h"
#include "onnx/onnx_tensor.h"

namespace gf {

namespace onnx_import {
namespace {

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "(scalar)" : s;
}

// The first node whose op type or domain graphfuse lacks, as kUnsupported.
void check_op_support(const onnx::GraphProto& g) {
  for (const auto& node : g.node()) {
    if (!onnx_op_is_supported(node.op_type(), node.domain())) {
      const std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
      throw Error(ErrorCode::kUnsupported, describe_onnx_node(node) + " of domain '" + domain +
                                               "': this op is not supported by graphfuse");
    }
  }
}

// Applies the user's shape bindings to the declared input types. A binding fixes the input's
// dims; a bound symbolic dim takes the same value in every input that names it.
void bind_input_shapes(const std::map<std::string, std::vector<int64_t>>& bindings,
                       std::vector<std::pair<std::string, TensorType>>& inputs) {
  std::unordered_map<std::string, int64_t> symbols;
  for (const auto& binding : bindings) {
    const std::string& name = binding.first;  // not a structured binding: clang-14 cannot capture those
    const std::vector<int64_t>& dims = binding.second;
    auto it = std::find_if(inputs.begin(), inputs.end(), [&](const auto& in) { return in.first == name; });
    if (it == inputs.end()) {
      std::string names;
      for (const auto& in : inputs) names += (names.empty() ? "" : ", ") + in.first;
      throw Error(ErrorCode::kInvalidArgument, "--shape " + name + ": the model has no input named '" + name +
                                                   "' (inputs: " + names + ")");
    }
    int64_t numel = 1;
    for (int64_t d : dims) {
      if (d < 0 || d > kMaxElements || (d != 0 && numel > kMaxElements / d)) {
        throw Error(ErrorCode::kInvalidArgument, "--shape " + name + "=" + dims_string(dims) +
                                                     ": dimensions must be non-negative and hold at most 2^40 elements");
      }
      numel *= d;
    }
    TensorType& t = it->second;
    if (t.shape.rank() != dims.size()) {
      throw Error(ErrorCode::kShapeMismatch, "--shape " + name + "=" + dims_string(dims) + ": input '" + name +
                                                 "' is declared " + t.to_string() + " (rank " +
                                                 std::to_string(t.shape.rank()) + ")");
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      const Dim& d = t.shape[i];
      if (d.is_static() && d.value() != dims[i]) {
        throw Error(ErrorCode::kShapeMismatch, "--shape " + name + "=" + dims_string(dims) + ": input '" + name +
                                                   "' is declared " + t.to_string());
      }
      if (d.is_symbolic()) {
        auto [s, inserted] = symbols.emplace(d.symbol(), dims[i]);
        if (!inserted && s->second != dims[i]) {
          throw Error(ErrorCode::kShapeMismatch, "--shape " + name + ": dim '" + d.symbol() + "' is bound to both " +
                                                     std::to_string(s->second) + " and " + std::to_string(dims[i]));
        }
      }
      t.shape[i] = Dim(dims[i]);
    }
  }
  for (auto& [name, t] : inputs) {
    for (size_t i = 0; i < t.shape.rank(); ++i) {
      if (!t.shape[i].is_symbolic()) continue;
      auto s = symbols.find(t.shape[i].symbol());
      if (s != symbols.end()) t.shape[i] = Dim(s->second);
    }
  }
}

// ONNX requires nodes in topological order, but some exporters do not keep it; sort by names,
// and report dangling names and cycles naming the node.
std::vector<int> node_order(const onnx::GraphProto& g, const std::unordered_set<std::string>& defined) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& o : g.node(i).output()) {
      if (o.empty()) continue;
      if (defined.count(o) || !producer.emplace(o, i).second) {
        throw Error(ErrorCode::kInvalidGraph, describe_onnx_node(g.node(i)) + " writes '" + o +
                                                  "', which is already defined");
      }
    }
  }
  std::vector<int> pending(static_cast<size_t>(g.node_size()), 0);
  std::vector<std::vector<int>> consumers(static_cast<size_t>(g.node_size()));
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& in : g.node(i).input()) {
      if (in.empty() || defined.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end()) {
        throw Error(ErrorCode::kInvalidGraph, describe_onnx_node(g.node(i)) + " reads '" + in +
                                                  "', which no graph input, initializer or node defines");
      }
      ++pending[static_cast<size_t>(i)];
      consumers[static_cast<size_t>(p->second)].push_back(i);
    }
  }
  std::vector<int> order;
  for (int i = 0; i < g.node_size(); ++i)
    if (pending[static_cast<size_t>(i)] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k) {
    for (int c : consumers[static_cast<size_t>(order[k])]) {
      if (--pending[static_cast<size_t>(c)] == 0) order.push_back(c);
    }
  }
  if (order.size() != static_cast<size_t>(g.node_size())) {
    for (int i = 0; i < g.node_size(); ++i) {
      if (pending[static_cast<size_t>(i)] > 0) {
        throw Error(ErrorCode::kInvalidGraph, "the graph has a cycle through " + describe_onnx_node(g.node(i)));
      }
    }
  }
  return order;
}

Graph convert_model(const LoadedModel& model, const OnnxImportOptions& options) {
  const onnx::GraphProto& g = model.proto->graph();
  // Our own validation first (op support, names, cycles), so messages name the node the same
  // way whatever the IR version; then libonnx's checker where it knows the model.
  check_op_support(g);
  if (model.opset == 0 && g.node_size() > 0) {
    throw Error(ErrorCode::kInvalidGraph, "the model imports no default-domain (ai.onnx) opset");
  }
  if (g.sparse_initializer_size() > 0) {
    throw Error(ErrorCode::kUnsupported, "sparse initializer '" + g.sparse_initializer(0).values().name() +
                                             "' is not supported");
  }
  std::unordered_set<std::string> initializers, defined;
  for (const auto& init : g.initializer()) {
    if (init.name().empty() || !initializers.insert(init.name()).second) {
      throw Error(ErrorCode::kInvalidGraph, "initializer '" + init.name() + "' is unnamed or defined twice");
    }
  }
  defined = initializers;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;  // old exporters list initializers as inputs too
    if (in.name().empty() || !defined.insert(in.name()).second) {
      throw Error(ErrorCode::kInvalidGraph, "graph input '" + in.name() + "' is unnamed or defined twice");
    }
  }
  const std::vector<int> order = node_order(g, defined);
  if (options.run_checker) run_onnx_checker(model);

  Graph graph;
  graph.name = g.name().empty() ? "model" : g.name();
  GraphAssembler out(graph, options.evaluate);
  TensorReader reader(model.proto, model.base_dir);
  for (const auto& init : g.initializer()) {
    out.bind(init.name(), graph.add_constant(init.name(), reader.read(init, "initializer '" + init.name() + "'")));
  }
  std::vector<std::pair<std::string, TensorType>> inputs;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    const std::string what = "input '" + in.name() + "'";
    auto bound = options.input_shapes.find(in.name());
    if (in.type().has_tensor_type() && !in.type().tensor_type().has_shape() && bound != options.input_shapes.end()) {
      onnx::TypeProto t = in.type();  // no declared rank, but the user gave the shape
      for (size_t i = 0; i < bound->second.size(); ++i) t.mutable_tensor_type()->mutable_shape()->add_dim();
      inputs.emplace_back(in.name(), tensor_type_from_onnx(t, what));
    } else {
      inputs.emplace_back(in.name(), tensor_type_from_onnx(in.type(), what));
    }
  }
  bind_input_shapes(options.input_shapes, inputs);
  for (auto& [name, type] : inputs) out.add_input(name, std::move(type));

  for (int i : order) {
    const onnx::NodeProto& node = g.node(i);
    if (node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx")) {
      if (node.output_size() != 1) {
        throw Error(ErrorCode::kInvalidGraph, describe_onnx_node(node) + " must have one output");
      }
      const Tensor value = constant_node_value(node, reader, describe_onnx_node(node));
      out.bind(node.output(0), out.add_constant(node.output(0), value));
      continue;
    }
    convert_node(node, model.opset, out, reader);
  }
  for (const auto& o : g.output()) {
    if (!out.has(o.name())) {
      throw Error(ErrorCode::kInvalidGraph, "graph output '" + o.name() + "' is not produced by anything");
    }
    graph.add_output(out.value(o.name()));
  }
  if (graph.outputs().empty()) throw Error(ErrorCode::kInvalidGraph, "the model has no outputs");
  infer_shapes(graph);
  return graph;
}

}  // namespace
}  // namespace onnx_import

Graph import_onnx_bytes(std::string_view bytes, const OnnxImportOptions& options, const std::string& base_dir) {
  return onnx_import::convert_model(onnx_import::load_model(bytes, base_dir), options);
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  const std::string bytes = onnx_import::read_file_bytes(path);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  try {
    return import_onnx_bytes(bytes, options, dir);
  } catch (const Error& e) {
    // A malformed file is named: a server loading many models must say which one.
    if (e.code() == ErrorCode::kParseError) throw Error(e.code(), "'" + path + "': " + e.what());
    throw;
  }
}

std::vector<std::string> onnx_unsupported_features(const std::string& path) {
  const onnx_import::LoadedModel model =
      onnx_import::load_model(onnx_import::read_file_bytes(path), std::filesystem::path(path).parent_path().string());
  const onnx::GraphProto& g = model.proto->graph();
  std::set<std::string> missing;
  for (const auto& node : g.node()) {
    if (!onnx_op_is_supported(node.op_type(), node.domain())) {
      missing.insert("op " + node.op_type() + (node.domain().empty() ? "" : " (domain " + node.domain() + ")"));
    } else if (node.op_type() == "Attention") {
      for (const std::string& f : onnx_import::attention_unsupported_features(node)) missing.insert("Attention " + f);
    }
    for (const auto& a : node.attribute()) {  // Cast's target and tensor attributes carry dtypes
      if (a.has_t() && !onnx_import::dtype_from_onnx(a.t().data_type())) {
        missing.insert("dtype " + onnx_import::onnx_dtype_name(a.t().data_type()));
      }
      if (node.op_type() == "Cast" && a.name() == "to" && !onnx_import::dtype_from_onnx(static_cast<int32_t>(a.i()))) {
        missing.insert("dtype " + onnx_import::onnx_dtype_name(static_cast<int32_t>(a.i())));
      }
    }
  }
  auto check_type = [&](const onnx::TypeProto& t, const std::string& name) {
    if (!t.has_tensor_type()) {
      missing.insert("non-tensor value '" + name + "'");
    } else if (!onnx_import::dtype_from_onnx(t.tensor_type().elem_type())) {
      missing.insert("dtype " + onnx_import::onnx_dtype_name(t.tensor_type().elem_type()));
    }
  };
  for (const auto& v : g.input()) check_type(v.type(), v.name());
  for (const auto& v : g.output()) check_type(v.type(), v.name());
  for (const auto& t : g.initializer()) {
    if (!onnx_import::dtype_from_onnx(t.data_type())) missing.insert("dtype " + onnx_import::onnx_dtype_name(t.data_type()));
  }
  return {missing.begin(), missing.end()};
}

Tensor read_onnx_tensor_file(const std::string& path, std::string* name) {
  auto proto = std::make_shared<onnx::TensorProto>();
  const std::string bytes = onnx_import::read_file_bytes(path);
  if (bytes.size() >= static_cast<size_t>(INT_MAX) ||
      !proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorCode::kParseError, "'" + path + "' is not a serialized ONNX tensor");
  }
  if (name) *name = proto->name();
  onnx_import::TensorReader reader(proto, std::filesystem::path(path).parent_path().string());
  return reader.read(*proto, "tensor '" + path + "'");
}

}  // namespace gf
