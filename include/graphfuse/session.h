// Running a graph. A Session owns a checked, shape-inferred graph and runs it on one device.
//
// Thread safety: run() may be called from several threads at once on one Session; each call
// works on its own buffers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graphfuse/device.h"
#include "graphfuse/graph.h"

namespace gf {

struct SessionOptions {
  Device device = Device::kCpu;
};

class Session {
 public:
  // Verifies the graph and infers its types; throws gf::Error naming the node on a bad graph.
  explicit Session(Graph graph, SessionOptions options = {});

  // Inputs in the order of graph().inputs(); outputs in the order of graph().outputs().
  // Each input must match its declared dtype and rank, and its static dims.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  std::map<std::string, Tensor> run_named(const std::map<std::string, Tensor>& inputs) const;

  const Graph& graph() const { return graph_; }
  Device device() const { return options_.device; }

 private:
  Graph graph_;
  SessionOptions options_;
};

}  // namespace gf
