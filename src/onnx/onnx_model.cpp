#include "onnx/onnx_model.h"

#include <climits>
#include <fstream>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include "graphfuse/error.h"

namespace gf::onnx_import {

namespace {

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// libonnx's checker knows IR versions and opsets up to its release (1.12: IR 8, opset 17);
// newer files (PyTorch's dynamo exporter writes IR 10, opset 18+) are checked by our own
// validation only.
bool checker_knows(const onnx::ModelProto& m) {
  if (m.ir_version() > onnx::IR_VERSION) return false;
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const auto& op : m.opset_import()) {
    const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
    auto it = ranges.find(domain);
    if (it == ranges.end() || op.version() > it->second.second) return false;
  }
  return true;
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorCode::kIoError, "cannot open '" + path + "'");
  // One read into storage of the file's size: a model's weights are copied once, not through
  // a growing stream buffer.
  const std::streamoff size = in.tellg();
  if (size < 0) throw Error(ErrorCode::kIoError, "cannot read '" + path + "'");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (size > 0 && !in.read(bytes.data(), size)) {
    throw Error(ErrorCode::kIoError, "cannot read '" + path + "'");
  }
  return bytes;
}

LoadedModel load_model(std::string_view bytes, const std::string& base_dir) {
  if (bytes.size() >= static_cast<size_t>(INT_MAX)) {
    throw Error(ErrorCode::kUnsupported,
                "the model is " + std::to_string(bytes.size()) +
                    " bytes; protobuf files must stay under 2 GiB (keep weights as external data)");
  }
  auto proto = std::make_shared<onnx::ModelProto>();
  if (bytes.empty() || !proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(ErrorCode::kParseError, "not a valid ONNX model (protobuf parsing failed; is the "
                                        "file truncated or not an .onnx file?)");
  }
  if (!proto->has_graph()) throw Error(ErrorCode::kParseError, "the ONNX model has no graph");
  if (proto->ir_version() < 3) {
    throw Error(ErrorCode::kUnsupported,
                "ONNX IR version " + std::to_string(proto->ir_version()) + " is too old (3 or newer)");
  }

  LoadedModel model;
  model.base_dir = base_dir;
  for (const auto& op : proto->opset_import()) {
    if (is_default_domain(op.domain())) model.opset = op.version();
  }
  // No default-domain opset: only right when no node is of the default domain (checked later).
  if (model.opset != 0 && (model.opset < kMinOpset || model.opset > kMaxOpset)) {
    throw Error(ErrorCode::kUnsupported, "ONNX opset " + std::to_string(model.opset) +
                                             " is not supported (opsets " + std::to_string(kMinOpset) +
                                             " to " + std::to_string(kMaxOpset) + " are)");
  }
  model.proto = std::move(proto);
  return model;
}

void run_onnx_checker(const LoadedModel& model) {
  if (checker_knows(*model.proto)) {
    try {
      onnx::checker::check_model(*model.proto);
    } catch (const std::exception& e) {
      // The checker's message can run over several lines; the CLI prints one.
      std::string msg = e.what();
      for (char& c : msg) if (c == '\n') c = ' ';
      throw Error(ErrorCode::kInvalidGraph, "the ONNX checker rejected the model: " + msg);
    }
  }
}

}  // namespace gf::onnx_import
