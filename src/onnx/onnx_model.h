// Loading a serialized ModelProto and checking it before conversion.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace gf::onnx_import {

// A parsed model and what conversion needs to know about it. The ModelProto is shared so that
// initializer tensors can wrap its bytes without copying.
struct LoadedModel {
  std::shared_ptr<const onnx::ModelProto> proto;
  std::string base_dir;    // where external data files are looked up; "" refuses external data
  int64_t opset = 0;       // the default-domain ("" / "ai.onnx") opset version; 0 if none
};

// The oldest and newest default-domain opsets whose op semantics the importer knows.
inline constexpr int64_t kMinOpset = 6;
inline constexpr int64_t kMaxOpset = 28;  // onnx 1.23; ops of our table changed only in dtypes since 22

// Reads a whole file; kIoError naming it when it cannot be read.
std::string read_file_bytes(const std::string& path);

// Parses model bytes: kParseError when they are not a ModelProto, kUnsupported for an opset
// outside [kMinOpset, kMaxOpset].
LoadedModel load_model(std::string_view bytes, const std::string& base_dir);

// Runs libonnx's checker where it knows the model's IR version and opsets; a failed check is
// kInvalidGraph carrying the checker's message.
void run_onnx_checker(const LoadedModel& model);

}  // namespace gf::onnx_import
