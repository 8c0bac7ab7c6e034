#include "conformance_case.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "cli_util.h"
#include "graphfuse/onnx.h"
#include "graphfuse/session.h"
#include "ir/infer.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::cli {

namespace fs = std::filesystem;

namespace {

struct DataSet {
  std::vector<Tensor> inputs, outputs;
  std::vector<std::string> input_names;
};

// input_0.pb, input_1.pb, ... in numeric order (input_10 after input_9).
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (size_t i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

void read_tolerances(const fs::path& case_dir, double& rtol, double& atol) {
  std::ifstream in(case_dir / "data.json");
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::smatch m;
  static const std::regex kRtol(R"("rtol"\s*:\s*([-+0-9.eE]+))"), kAtol(R"("atol"\s*:\s*([-+0-9.eE]+))");
  if (std::regex_search(text, m, kRtol)) rtol = std::stod(m[1]);
  if (std::regex_search(text, m, kAtol)) atol = std::stod(m[1]);
}

// Ops that import but that the reference interpreter cannot run make a case unsupported.
std::vector<std::string> missing_kernels(const Graph& g) {
  std::set<std::string> out;
  for (const Node& n : g.nodes()) {
    if (ref::kernel_table()[static_cast<size_t>(n.op)] == nullptr) {
      out.insert("op " + std::string(op_name(n.op)) + " (no reference kernel)");
    }
  }
  return {out.begin(), out.end()};
}

std::string compare(const Tensor& got, const Tensor& want, size_t index, const std::string& name, double rtol,
                    double atol) {
  const std::string what = "output " + std::to_string(index) + " ('" + name + "')";
  if (got.dtype() != want.dtype() || got.dims() != want.dims()) {
    return what + ": expected " + want.type_string() + ", got " + got.type_string();
  }
  const bool exact = !is_floating(want.dtype());
  if (want.dtype() == DType::kBF16) rtol = std::max(rtol, 1.0 / 64);  // two bf16 ulps, as ONNX's runner
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.element_as_double(i), e = want.element_as_double(i);
    bool ok;
    if (exact) ok = got.element_as_int(i) == want.element_as_int(i);
    else if (std::isnan(e) || std::isnan(g)) ok = std::isnan(e) && std::isnan(g);
    else if (std::isinf(e) || std::isinf(g)) ok = g == e;
    else ok = std::fabs(g - e) <= atol + rtol * std::fabs(e);
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(9);
  os << what << " " << want.type_string() << ": " << bad << " of " << want.numel() << " elements differ; first at "
     << first << ": got " << got.element_as_double(first) << ", expected " << want.element_as_double(first)
     << " (rtol " << rtol << ", atol " << atol << ")";
  return os.str();
}

}  // namespace

CaseResult run_conformance_case(const std::string& case_dir_str, Device device) {
  const fs::path case_dir(case_dir_str);
  const std::string model_path = (case_dir / "model.onnx").string();
  CaseResult result;
  // Outside graphfuse's scope: ops, dtypes and opsets it does not have.
  std::vector<std::string> missing;
  try {
    missing = onnx_unsupported_features(model_path);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) return {CaseStatus::kFailed, e.what()};
    missing.push_back(e.what());
  }
  Graph probe;
  if (missing.empty()) {
    try {
      probe = load_onnx_model(model_path, {});
    } catch (const Error& e) {
      return {CaseStatus::kFailed, e.what()};
    }
    missing = missing_kernels(probe);
  }
  if (!missing.empty()) {
    std::string reason;
    for (const std::string& m : missing) reason += (reason.empty() ? "" : ", ") + m;
    return {CaseStatus::kUnsupported, reason};
  }

  double rtol = 1e-3, atol = 1e-7;
  read_tolerances(case_dir, rtol, atol);
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(case_dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {CaseStatus::kFailed, "no test_data_set_* folder"};
  std::vector<DataSet> data_sets;
  try {  // test data in a dtype graphfuse lacks (1.12 stored bf16 as UINT16) is unsupported
    for (const fs::path& set : sets) {
      DataSet data;
      for (const fs::path& p : numbered_files(set, "input_")) {
        std::string name;
        data.inputs.push_back(read_onnx_tensor_file(p.string(), &name));
        data.input_names.push_back(name);
      }
      for (const fs::path& p : numbered_files(set, "output_")) data.outputs.push_back(read_onnx_tensor_file(p.string()));
      data_sets.push_back(std::move(data));
    }
  } catch (const Error& e) {
    return {e.code() == ErrorCode::kUnsupported ? CaseStatus::kUnsupported : CaseStatus::kFailed, e.what()};
  }
  try {
    for (size_t k = 0; k < sets.size(); ++k) {
      const fs::path& set = sets[k];
      const DataSet& data = data_sets[k];
      // The data sets fix every input's shape; bind them so shape subgraphs fold. Tensors are
      // matched to inputs by name where they carry one, by position otherwise.
      std::vector<std::string> names;
      for (ValueId v : probe.inputs()) names.push_back(probe.value(v).name);
      if (data.inputs.size() != names.size()) {
        return {CaseStatus::kFailed, "the data set has " + std::to_string(data.inputs.size()) +
                                         " inputs, the model " + std::to_string(names.size())};
      }
      OnnxImportOptions options;
      std::map<std::string, Tensor> feeds;
      for (size_t i = 0; i < data.inputs.size(); ++i) {
        const bool by_name = std::find(names.begin(), names.end(), data.input_names[i]) != names.end();
        const std::string& name = by_name ? data.input_names[i] : names[i];
        options.input_shapes[name] = data.inputs[i].dims();
        feeds[name] = data.inputs[i];
      }
      Graph graph = load_onnx_model(model_path, options);
      Session session(std::move(graph), SessionOptions{device});
      std::map<std::string, Tensor> got = session.run_named(feeds);
      const auto& outs = session.graph().outputs();
      if (outs.size() != data.outputs.size()) {
        return {CaseStatus::kFailed, "the model has " + std::to_string(outs.size()) + " outputs, the data set " +
                                         std::to_string(data.outputs.size())};
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::string& name = session.graph().value(outs[i]).name;
        std::string diff = compare(got.at(name), data.outputs[i], i, name, rtol, atol);
        if (!diff.empty()) return {CaseStatus::kFailed, set.filename().string() + ": " + diff};
      }
    }
  } catch (const Error& e) {
    return {CaseStatus::kFailed, e.what()};
  }
  return {CaseStatus::kPassed, ""};
}

}  // namespace gf::cli
