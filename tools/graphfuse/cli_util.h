// Small helpers shared by the subcommands: argument parsing, JSON output, model loading.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graphfuse/graph.h"
#include "graphfuse/onnx.h"
#include "graphfuse/session.h"

namespace gf::cli {

// "NAME=1x128" -> {"NAME", {1, 128}}; "NAME=" is a scalar. kInvalidArgument naming `flag`.
std::pair<std::string, std::vector<int64_t>> parse_shape_binding(const std::string& arg,
                                                                 const std::string& flag);
// "NAME=PATH" -> {"NAME", "PATH"}.
std::pair<std::string, std::string> parse_name_value(const std::string& arg, const std::string& flag);

// "fp32", "tf32", "fp16" or "bf16"; kInvalidArgument for other names, and for fp16/bf16 on a
// device other than cuda.
Precision parse_precision(const std::string& name, const std::string& device);

// An ONNX model (load_onnx_model), or "builtin:gpt2": the demo's model, default configuration,
// its dims left symbolic (`options` then ignored).
Graph load_model(const std::string& model, OnnxImportOptions options);

// Imports an ONNX model and folds its constants (shape subgraphs included) with the reference
// interpreter.
Graph load_onnx_model(const std::string& path, OnnxImportOptions options);

// A file name made from a tensor name: characters outside [A-Za-z0-9._-] become '_'.
std::string file_name_for(const std::string& tensor_name);

// Deterministic random data for an input of a static type: normal floats, integers in [0, 4),
// random bools.
Tensor random_tensor(const TensorType& type, uint32_t seed);

// A JSON string literal.
std::string json_string(const std::string& s);
// A JSON array of strings.
std::string json_strings(const std::vector<std::string>& v);
std::string json_dims(const std::vector<int64_t>& dims);

// Writes `text` to `path`; kIoError naming it on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace gf::cli
