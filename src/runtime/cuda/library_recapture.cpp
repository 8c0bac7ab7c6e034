#include "runtime/cuda/library_recapture.h"

#include <algorithm>
#include <tuple>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

void check_rt(cudaError_t e, const std::string& call) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorCode::kDeviceError,
                call + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}

std::vector<CUgraphNode> graph_nodes(CUgraph graph) {
  const CudaDriverApi& cu = cuda_driver();
  size_t count = 0;
  check_cu(cu.cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes");
  std::vector<CUgraphNode> nodes(count);
  if (count > 0) check_cu(cu.cuGraphGetNodes(graph, nodes.data(), &count), "cuGraphGetNodes");
  nodes.resize(count);
  return nodes;
}

std::vector<CUgraphNode> ordered_nodes(std::vector<CUgraphNode> nodes) {
  std::sort(nodes.begin(), nodes.end());
  struct Key {
    int depth = 0;
    int type = 0;
    uintptr_t function = 0;
  };
  std::vector<Key> keys(nodes.size());
  auto index = [&](CUgraphNode n) {
    const auto it = std::lower_bound(nodes.begin(), nodes.end(), n);
    return it != nodes.end() && *it == n ? static_cast<int>(it - nodes.begin()) : -1;
  };
  std::vector<std::vector<int>> deps(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t count = 0;
    check_rt(cudaGraphNodeGetDependencies(nodes[i], nullptr, nullptr, &count),
             "cudaGraphNodeGetDependencies");
    std::vector<cudaGraphNode_t> d(count);
    std::vector<cudaGraphEdgeData> edge_data(count);  // asked for: some edges carry data
    if (count > 0)
      check_rt(cudaGraphNodeGetDependencies(nodes[i], d.data(), edge_data.data(), &count),
               "cudaGraphNodeGetDependencies");
    for (cudaGraphNode_t n : d)
      if (const int j = index(n); j >= 0) deps[i].push_back(j);
    cudaGraphNodeType type;
    check_rt(cudaGraphNodeGetType(nodes[i], &type), "cudaGraphNodeGetType");
    keys[i].type = static_cast<int>(type);
    if (type == cudaGraphNodeTypeKernel) {
      CUDA_KERNEL_NODE_PARAMS p{};
      check_cu(cuda_driver().cuGraphKernelNodeGetParams(nodes[i], &p),
               "cuGraphKernelNodeGetParams");
      keys[i].function = reinterpret_cast<uintptr_t>(p.func);
    }
  }
  // Depths by relaxation: a captured call has a handful of nodes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int d : deps[i])
        if (keys[i].depth <= keys[static_cast<size_t>(d)].depth) {
          keys[i].depth = keys[static_cast<size_t>(d)].depth + 1;
          changed = true;
        }
  }
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Key &x = keys[a], &y = keys[b];
    return std::tie(x.depth, x.type, x.function) < std::tie(y.depth, y.type, y.function);
  });
  std::vector<CUgraphNode> out;
  for (size_t i : order) out.push_back(nodes[i]);
  return out;
}

namespace {

// Points `node` of `exec` at the parameters of `fresh`, a node of the same kind from a new
// capture of the same call.
void take_parameters(CUgraphExec exec, CUgraphNode node, CUgraphNode fresh,
                     const std::string& what) {
  cudaGraphNodeType type;
  check_rt(cudaGraphNodeGetType(fresh, &type), "cudaGraphNodeGetType (" + what + ")");
  switch (type) {
    case cudaGraphNodeTypeKernel: {
      // Through the driver, as our own kernel nodes: the library's kernels may have been
      // launched either way.
      const CudaDriverApi& cu = cuda_driver();
      CUDA_KERNEL_NODE_PARAMS p{};
      check_cu(cu.cuGraphKernelNodeGetParams(fresh, &p),
               "cuGraphKernelNodeGetParams (" + what + ")");
      check_cu(cu.cuGraphExecKernelNodeSetParams(exec, node, &p),
               "cuGraphExecKernelNodeSetParams (" + what + ")");
      return;
    }
    case cudaGraphNodeTypeMemset: {
      cudaMemsetParams p{};
      check_rt(cudaGraphMemsetNodeGetParams(fresh, &p),
               "cudaGraphMemsetNodeGetParams (" + what + ")");
      check_rt(cudaGraphExecMemsetNodeSetParams(exec, node, &p),
               "cudaGraphExecMemsetNodeSetParams (" + what + ")");
      return;
    }
    case cudaGraphNodeTypeMemcpy: {
      cudaMemcpy3DParms p{};
      check_rt(cudaGraphMemcpyNodeGetParams(fresh, &p),
               "cudaGraphMemcpyNodeGetParams (" + what + ")");
      check_rt(cudaGraphExecMemcpyNodeSetParams(exec, node, &p),
               "cudaGraphExecMemcpyNodeSetParams (" + what + ")");
      return;
    }
    case cudaGraphNodeTypeEmpty:
      return;
    default:
      throw Error(ErrorCode::kUnsupported, "re-binding " + what +
                                               ": its capture holds a graph node of type " +
                                               std::to_string(static_cast<int>(type)) +
                                               ", which cannot be updated in place");
  }
}

}  // namespace

void recapture_library_steps(CUgraphExec exec, const SegmentRebinding& rebinding, const Graph& g,
                             const CudaProgramState& st, const BoundAddresses& bound) {
  const std::vector<size_t>& rebound = st.bindings->rebound_steps();
  CudaStream capture;
  const cudaStream_t stream = capture.get();
  for (size_t k = 0; k < rebound.size(); ++k) {
    const CudaStep& s = st.steps[rebound[k]];
    const std::string what = "re-binding " + s.label;
    check_rt(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture (" + what + ")");
    cudaGraph_t fresh = nullptr;
    try {
      run_library_step(g, st, s, stream, &bound);
    } catch (...) {
      cudaStreamEndCapture(stream, &fresh);
      if (fresh != nullptr) cudaGraphDestroy(fresh);
      cudaGetLastError();
      throw;
    }
    check_rt(cudaStreamEndCapture(stream, &fresh), "cudaStreamEndCapture (" + what + ")");
    try {
      const std::vector<CUgraphNode> nodes = ordered_nodes(graph_nodes(fresh));
      const std::vector<CUgraphNode>& old = rebinding.library_nodes[k];
      if (nodes.size() != old.size()) {
        throw Error(ErrorCode::kDeviceError,
                    what + ": the call captured " + std::to_string(nodes.size()) +
                        " graph nodes, where the graph holds " + std::to_string(old.size()));
      }
      for (size_t j = 0; j < nodes.size(); ++j) take_parameters(exec, old[j], nodes[j], s.label);
    } catch (...) {
      cudaGraphDestroy(fresh);
      throw;
    }
    cudaGraphDestroy(fresh);
  }
}

}  // namespace gf::cuda
