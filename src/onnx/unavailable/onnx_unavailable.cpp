// Built instead of src/onnx/*.cpp when libonnx is missing: every ONNX entry point says so.
#include "graphfuse/onnx.h"

namespace gf {

namespace {
[[noreturn]] void unavailable() {
  throw Error(ErrorCode::kUnsupported, "this graphfuse was built without the ONNX front end (libonnx-dev was not found)");
}
}  // namespace

Graph import_onnx(const std::string&, const OnnxImportOptions&) { unavailable(); }
Graph import_onnx_bytes(std::string_view, const OnnxImportOptions&, const std::string&) { unavailable(); }
std::optional<Op> onnx_op_to_ir(std::string_view, std::string_view) { return std::nullopt; }
bool onnx_op_is_supported(std::string_view, std::string_view) { return false; }
std::vector<std::string> supported_onnx_op_types() { return {}; }
std::vector<std::string> onnx_unsupported_features(const std::string&) { unavailable(); }
Tensor read_onnx_tensor_file(const std::string&, std::string*) { unavailable(); }

}  // namespace gf
