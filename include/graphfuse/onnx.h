// The ONNX front end: reads a model file (any IR version, default-domain opsets 6 to 28) into a
// graph whose ops follow the newest opset semantics (see op_list.h).
//
// Built only when libonnx is found (GF_HAVE_ONNX); without it every entry point throws
// kUnsupported.
//
// Thread safety: import_onnx keeps no state between calls, so several threads may import at once;
// `evaluate` is called on the importing thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

struct OnnxImportOptions {
  // Input shape bindings: name -> concrete dims. A binding fixes the input's symbolic dims, and
  // every other input that uses the same dim name gets the same value.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Run libonnx's checker where it knows the model's IR version and opsets. Our own validation
  // (names, types, dims, data sizes, op support) always runs.
  bool run_checker = true;
  // When set, a node whose inputs are all constant (or a Shape/Size of a static-shaped value) is
  // evaluated as it is read and becomes a constant, so shape subgraphs fold during import and
  // ops whose output rank depends on a computed shape can be typed. Callers pass the reference
  // interpreter (ref::run_node); the importer itself depends on the IR only.
  std::function<std::vector<Tensor>(const Node&, std::span<const Tensor>)> evaluate;
};

// Reads and converts a model. External data files are looked up next to `path`.
// Throws gf::Error: kIoError (unreadable file), kParseError (not a model, bad tensor data),
// kInvalidGraph (failed check, dangling name, cycle), kUnsupported (op, domain or dtype outside
// graphfuse), kShapeMismatch (types that do not fit an op), each naming the node/tensor.
Graph import_onnx(const std::string& path, const OnnxImportOptions& options = {});

// The same from serialized model bytes; external data is looked up under `base_dir` ("" means
// external data is refused).
Graph import_onnx_bytes(std::string_view bytes, const OnnxImportOptions& options = {},
                        const std::string& base_dir = "");

// The graph op an ONNX node type maps to, or nullopt where the importer refuses it. "Constant"
// maps to nullopt too, but import_onnx turns it into a constant (see onnx_op_is_supported).
std::optional<Op> onnx_op_to_ir(std::string_view op_type, std::string_view domain = "");
bool onnx_op_is_supported(std::string_view op_type, std::string_view domain = "");
// Every default-domain op type the importer accepts, sorted.
std::vector<std::string> supported_onnx_op_types();

// What keeps a model from importing, without converting it: op types outside the supported
// set (with their domain), dtypes graphfuse has no type for, non-tensor inputs. Empty when
// nothing is known to be missing. Throws like import_onnx on an unreadable file.
std::vector<std::string> onnx_unsupported_features(const std::string& path);

// Reads one serialized TensorProto (the input_*.pb / output_*.pb files of ONNX's test data).
Tensor read_onnx_tensor_file(const std::string& path, std::string* name = nullptr);

}  // namespace gf
