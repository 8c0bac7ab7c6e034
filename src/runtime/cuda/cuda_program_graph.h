// A CudaProgram's steps as one CUDA graph (graph mode): kernel steps become kernel nodes through
// the graph API; library steps (cuBLASLt, cuDNN) are captured into the same graph at their place
// (stream capture into an existing graph: no child graph); edges come from the buffers each step
// reads and writes (command_dependencies), so independent branches run concurrently. Built once
// per program, it is then launched as one unit; the program's addresses never change, so it
// never needs an update for the session's runs (inputs and outputs are copied in and out).
#pragma once

#include <cuda.h>

#include <memory>

#include "graphfuse/graph.h"

namespace gf::cuda {

struct CudaProgramState;

class ProgramGraph {
 public:
  ~ProgramGraph();
  ProgramGraph(const ProgramGraph&) = delete;
  ProgramGraph& operator=(const ProgramGraph&) = delete;

  // Throws kUnsupported when a step cannot be in a graph (a host step), kDeviceError naming
  // the call when CUDA refuses.
  static std::unique_ptr<ProgramGraph> build(const Graph& g, const CudaProgramState& state);
  void launch(CUstream stream) const;
  size_t node_count() const { return node_count_; }

 private:
  ProgramGraph() = default;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  size_t node_count_ = 0;
};

}  // namespace gf::cuda
