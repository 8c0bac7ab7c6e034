// CUDA graphs built directly from kernel launches (kernel nodes through the graph API, not
// stream capture), with the dependency edges the commands need and no more, so independent
// branches run concurrently. The same nodes can go into a graph of our own or flat into a
// caller's graph (no child graph in between), after the caller's nodes.
//
// Every kernel here takes one parameter, the device address of its pointer table (the ABI of
// cuda_emitter.h). That address is fixed when the node is made; re-binding buffers rewrites the
// table's contents, never the nodes.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace gf::cuda {

struct GraphKernel {
  CUfunction fn = nullptr;
  uint32_t grid = 0, block = 0, shared_bytes = 0;  // grid 0: no node (nothing to do)
  CUdeviceptr table = 0;                          // the kernel's one parameter
  std::vector<int> deps;                          // earlier kernels of the list it waits for
};

// What populate_kernels added: one node per launched kernel, and the segment's edges to the
// rest of the graph.
struct GraphSegment {
  std::vector<CUgraphNode> nodes;  // per kernel; null for a kernel with grid 0
  std::vector<CUgraphNode> entry;  // nodes that wait on the caller's dependencies
  std::vector<CUgraphNode> exit;   // nodes nothing in the segment waits for: the caller's
                                   // later nodes depend on these
};

// Adds `kernels` to `graph` (which may already hold nodes). A kernel without deps in the list
// waits on `caller_deps`. A kernel with grid 0 adds no node; its dependents wait for what it
// waited for. Throws kDeviceError naming the call.
GraphSegment populate_kernels(CUgraph graph, const CUgraphNode* caller_deps, size_t num_caller_deps,
                              const std::vector<GraphKernel>& kernels);

// A graph of our own over `kernels`, instantiated once, launched many times.
class KernelGraph {
 public:
  explicit KernelGraph(const std::vector<GraphKernel>& kernels);
  ~KernelGraph();
  KernelGraph(const KernelGraph&) = delete;
  KernelGraph& operator=(const KernelGraph&) = delete;

  void launch(CUstream stream) const;
  size_t node_count() const { return node_count_; }
  CUgraph graph() const { return graph_; }
  CUgraphExec exec() const { return exec_; }

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  size_t node_count_ = 0;
};

}  // namespace gf::cuda
