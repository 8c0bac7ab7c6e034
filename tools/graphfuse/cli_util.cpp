#include "cli_util.h"

#include <cstdio>
#include <fstream>
#include <random>

#include "graphfuse/models.h"
#include "ir/dtype_dispatch.h"
#include "passes/fold_constants.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf::cli {

std::pair<std::string, std::string> parse_name_value(const std::string& arg, const std::string& flag) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(ErrorCode::kInvalidArgument, flag + " '" + arg + "': expected NAME=VALUE");
  }
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::pair<std::string, std::vector<int64_t>> parse_shape_binding(const std::string& arg, const std::string& flag) {
  auto [name, text] = parse_name_value(arg, flag);
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t x = std::min(text.find('x', pos), text.size());
    const std::string part = text.substr(pos, x - pos);
    if (part.empty() || part.size() > 15 || part.find_first_not_of("0123456789") != std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument,
                  flag + " '" + arg + "': dims must be non-negative integers joined by 'x', e.g. 1x128");
    }
    dims.push_back(std::stoll(part));
    pos = x + 1;
    if (x + 1 == text.size()) throw Error(ErrorCode::kInvalidArgument, flag + " '" + arg + "': trailing 'x'");
  }
  return {name, dims};
}

Graph load_onnx_model(const std::string& path, OnnxImportOptions options) {
  auto evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  options.evaluate = evaluate;
  Graph g = import_onnx(path, options);
  fold_constants(g, evaluate);
  return g;
}

Precision parse_precision(const std::string& name, const std::string& device) {
  Precision p;
  if (name == "fp32") {
    p = Precision::kFp32;
  } else if (name == "tf32") {
    p = Precision::kTf32;
  } else if (name == "fp16") {
    p = Precision::kFp16;
  } else if (name == "bf16") {
    p = Precision::kBf16;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "--precision must be fp32, tf32, fp16 or bf16, got '" + name + "'");
  }
  if ((p == Precision::kFp16 || p == Precision::kBf16) && device != "cuda") {
    throw Error(ErrorCode::kInvalidArgument,
                "--precision " + name + " needs --device cuda (the CPU computes f32)");
  }
  return p;
}

Graph load_model(const std::string& model, OnnxImportOptions options) {
  if (model == "builtin:gpt2") {
    Graph g = models::gpt2_stack(models::Gpt2Config{});
    infer_shapes(g);
    return g;
  }
  if (model.starts_with("builtin:")) {
    throw Error(ErrorCode::kInvalidArgument, "unknown built-in model '" + model + "' (there is builtin:gpt2)");
  }
  return load_onnx_model(model, std::move(options));
}

std::string file_name_for(const std::string& tensor_name) {
  std::string out = tensor_name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

Tensor random_tensor(const TensorType& type, uint32_t seed) {
  Tensor t(type.dtype, type.shape.static_dims());
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> small(0, 3);
  visit_dtype(type.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* p = static_cast<T*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = small(rng) >= 2;
      } else if constexpr (kIsFloat<T>) {
        p[i] = static_cast<T>(normal(rng));
      } else {
        p[i] = static_cast<T>(small(rng));
      }
    }
  });
  return t;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_string(v[i]);
  return out + "]";
}

std::string json_dims(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw Error(ErrorCode::kIoError, "cannot write '" + path + "'");
  out << text;
  if (!out) throw Error(ErrorCode::kIoError, "writing '" + path + "' failed");
}

}  // namespace gf::cli
