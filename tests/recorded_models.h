// The torch.onnx exports in tests/models/data with their recorded inputs
// (<prefix>.input.<name>.npy), imported as a session would: input shapes bound, shape subgraphs
// folded by the reference kernels. Needs the ONNX front end (GF_HAVE_ONNX).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "graphfuse/graphfuse.h"
#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf::testing {

inline std::string recorded_model_path(const std::string& file) {
  return (std::filesystem::path(__FILE__).parent_path() / "models" / "data" / file).string();
}

struct RecordedModel {
  Graph graph;
  std::vector<Tensor> inputs;
};

inline RecordedModel load_recorded_model(const std::string& file, const std::string& prefix,
                                         const std::vector<std::string>& input_names) {
  RecordedModel m;
  OnnxImportOptions options;
  for (const std::string& name : input_names) {
    m.inputs.push_back(read_npy(recorded_model_path(prefix + ".input." + name + ".npy")));
    options.input_shapes[name] = m.inputs.back().dims();
  }
  options.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  m.graph = import_onnx(recorded_model_path(file), options);
  return m;
}

}  // namespace gf::testing
