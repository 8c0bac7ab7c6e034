#include "graphfuse/session.h"

#include <unistd.h>

#include <cstdint>
#include <unordered_map>

#include "runtime/cpu/reference/interpreter.h"

namespace gf {

namespace {

// Checks user inputs against the declared input types; symbolic dims must agree across inputs.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "the model takes " +
                                                 std::to_string(g.inputs().size()) +
                                                 " inputs, got " + std::to_string(inputs.size()));
  }
  std::unordered_map<std::string, int64_t> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& decl = g.value(g.inputs()[i]);
    const Tensor& t = inputs[i];
    const std::string what = "input '" + decl.name + "' (declared " + decl.type.to_string() + ")";
    if (!t.defined()) throw Error(ErrorCode::kInvalidArgument, what + " was not given");
    if (t.dtype() != decl.type.dtype || t.rank() != decl.type.shape.rank()) {
      throw Error(ErrorCode::kShapeMismatch, what + " got " + t.type_string());
    }
    for (size_t d = 0; d < t.rank(); ++d) {
      const Dim& want = decl.type.shape[d];
      if (want.is_static() && want.value() != t.dims()[d]) {
        throw Error(ErrorCode::kShapeMismatch, what + " got " + t.type_string());
      }
      if (want.is_symbolic()) {
        auto [it, inserted] = bound.emplace(want.symbol(), t.dims()[d]);
        if (!inserted && it->second != t.dims()[d]) {
          throw Error(ErrorCode::kShapeMismatch,
                      what + " got " + t.type_string() + ", but dim '" + want.symbol() +
                          "' is already " + std::to_string(it->second));
        }
      }
    }
  }
}

}  // namespace

namespace {
uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}
}  // namespace

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)),
      options_(options),
      budget_(std::make_shared<ref::HostMemoryBudget>(options.host_memory_limit_bytes
                                                          ? options.host_memory_limit_bytes
                                                          : physical_memory_bytes())) {
  infer_shapes(graph_);
  if (options_.device == Device::kCuda) {
    CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) {
      throw Error(ErrorCode::kDeviceError, "cannot run on cuda: " + probe.reason);
    }
    throw Error(ErrorCode::kUnsupported,
                "cannot run on cuda: this version of graphfuse has no CUDA executor yet");
  }
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) const {
  check_inputs(graph_, inputs);
  return ref::run_graph(graph_, inputs, budget_.get());
}

uint64_t Session::host_bytes_in_use() const { return budget_->in_use(); }
uint64_t Session::host_bytes_peak() const { return budget_->peak(); }

std::map<std::string, Tensor> Session::run_named(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> ordered;
  for (ValueId v : graph_.inputs()) {
    auto it = inputs.find(graph_.value(v).name);
    if (it == inputs.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "input '" + graph_.value(v).name + "' was not given");
    }
    ordered.push_back(it->second);
  }
  if (inputs.size() != ordered.size()) {
    for (const auto& [name, t] : inputs) {
      if (graph_.find_value(name) == kNoValue) {
        throw Error(ErrorCode::kInvalidArgument, "the model has no input named '" + name + "'");
      }
    }
  }
  std::vector<Tensor> outs = run(ordered);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    result.emplace(graph_.value(graph_.outputs()[i]).name, std::move(outs[i]));
  }
  return result;
}

}  // namespace gf
