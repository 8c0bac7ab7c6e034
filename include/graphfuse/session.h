// Running a graph. A Session owns a checked, shape-inferred graph and runs it on one device.
//
// Thread safety: run() may be called from several threads at once on one Session; each call
// works on its own buffers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graphfuse/device.h"
#include "graphfuse/graph.h"

namespace gf {

struct SessionOptions {
  Device device = Device::kCpu;
  // Cap on the host memory that intermediates of this session's runs may hold at once, summed
  // over concurrent runs; 0 means the machine's physical memory. A run that would pass it fails
  // with kOutOfMemory before allocating, and the session stays usable.
  uint64_t host_memory_limit_bytes = 0;
};

namespace ref {
class HostMemoryBudget;
}

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
  // Bytes of intermediates held now / at most so far, over all runs of this session.
  uint64_t host_bytes_in_use() const;
  uint64_t host_bytes_peak() const;

 private:
  Graph graph_;
  SessionOptions options_;
  std::shared_ptr<ref::HostMemoryBudget> budget_;
};

}  // namespace gf
