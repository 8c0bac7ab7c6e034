// Kernel nodes from launches, and our own instantiated graph.
#include "runtime/cuda/kernel_graph.h"

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

GraphSegment populate_kernels(CUgraph graph, const CUgraphNode* caller_deps, size_t num_caller_deps,
                              const std::vector<GraphKernel>& kernels) {
  const CudaDriverApi& cu = cuda_driver();
  GraphSegment seg;
  seg.nodes.assign(kernels.size(), nullptr);
  // Per kernel, the nodes it waits for: a skipped kernel (grid 0) passes its own on.
  std::vector<std::vector<CUgraphNode>> waits_for(kernels.size());
  std::vector<bool> depended_on(kernels.size(), false);
  const std::vector<CUgraphNode> callers(caller_deps, caller_deps + num_caller_deps);
  for (size_t i = 0; i < kernels.size(); ++i) {
    const GraphKernel& k = kernels[i];
    std::vector<CUgraphNode>& deps = waits_for[i];
    bool has_inner_dep = false;
    for (int d : k.deps) {
      if (d < 0 || static_cast<size_t>(d) >= i) {
        throw Error(ErrorCode::kInvalidArgument, "graph kernel " + std::to_string(i) +
                                                     " depends on kernel " + std::to_string(d) +
                                                     ", which is not an earlier one");
      }
      depended_on[static_cast<size_t>(d)] = true;
      const size_t dd = static_cast<size_t>(d);
      if (seg.nodes[dd] != nullptr) {
        deps.push_back(seg.nodes[dd]);
      } else {
        deps.insert(deps.end(), waits_for[dd].begin(), waits_for[dd].end());
      }
      has_inner_dep = true;
    }
    if (!has_inner_dep) deps = callers;
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    if (k.grid == 0) continue;
    CUdeviceptr table = k.table;
    void* params[] = {&table};
    CUDA_KERNEL_NODE_PARAMS p = kernel_node_params(k.fn, k.grid, k.block, k.shared_bytes, params);
    check_cu(cu.cuGraphAddKernelNode(&seg.nodes[i], graph, deps.data(), deps.size(), &p),
             "cuGraphAddKernelNode");
    if (!has_inner_dep) seg.entry.push_back(seg.nodes[i]);
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (seg.nodes[i] != nullptr && !depended_on[i]) seg.exit.push_back(seg.nodes[i]);
  }
  // A kernel whose dependents were all skipped is still an exit: its work must finish before the
  // caller's later nodes run.
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (seg.nodes[i] == nullptr || !depended_on[i]) continue;
    bool only_skipped = true;
    for (size_t j = i + 1; j < kernels.size() && only_skipped; ++j) {
      if (kernels[j].grid != 0 && std::find(waits_for[j].begin(), waits_for[j].end(), seg.nodes[i]) != waits_for[j].end()) {
        only_skipped = false;
      }
    }
    if (only_skipped) seg.exit.push_back(seg.nodes[i]);
  }
  return seg;
}

KernelGraph::KernelGraph(const std::vector<GraphKernel>& kernels) {
  const CudaDriverApi& cu = cuda_driver();
  check_cu(cu.cuGraphCreate(&graph_, 0), "cuGraphCreate");
  try {
    const GraphSegment seg = populate_kernels(graph_, nullptr, 0, kernels);
    node_count_ = static_cast<size_t>(std::count_if(seg.nodes.begin(), seg.nodes.end(),
                                                    [](CUgraphNode n) { return n != nullptr; }));
    check_cu(cu.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
  } catch (...) {
    cu.cuGraphDestroy(graph_);
    throw;
  }
}

KernelGraph::~KernelGraph() {
  const CudaDriverApi& cu = cuda_driver();
  if (exec_) cu.cuGraphExecDestroy(exec_);
  if (graph_) cu.cuGraphDestroy(graph_);
}

void KernelGraph::launch(CUstream stream) const {
  check_cu(cuda_driver().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

}  // namespace gf::cuda
