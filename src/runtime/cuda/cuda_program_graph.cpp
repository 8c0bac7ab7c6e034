// ProgramGraph: the steps, in order, as nodes with edges from their buffers.
#include "runtime/cuda/cuda_program_graph.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_steps.h"
#include "runtime/graph_dependencies.h"

namespace gf::cuda {

namespace {

// The library workspace is one buffer that every library step writes: such steps never overlap.
constexpr int64_t kWorkspaceBuffer = -1;

void check_rt(cudaError_t e, const std::string& call) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(ErrorCode::kDeviceError,
                call + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
}

}  // namespace

ProgramGraph::~ProgramGraph() {
  const CudaDriverApi& cu = cuda_driver();
  if (exec_) cu.cuGraphExecDestroy(exec_);
  if (graph_) cu.cuGraphDestroy(graph_);
}

std::unique_ptr<ProgramGraph> ProgramGraph::build(const Graph& g, const CudaProgramState& st) {
  const CudaDriverApi& cu = cuda_driver();
  std::vector<CommandBuffers> uses;
  for (const CudaStep& s : st.steps) {
    if (s.kind == CudaStep::Kind::kHost) {
      throw Error(ErrorCode::kUnsupported, "graph mode: step '" + s.label + "' runs on the host");
    }
    const StepBuffers b = s.reads_and_writes(g);
    CommandBuffers c;
    for (ValueId v : b.reads)
      if (v != kNoValue) c.reads.push_back(st.storage_of[static_cast<size_t>(v)]);
    for (ValueId v : b.writes)
      if (v != kNoValue) c.writes.push_back(st.storage_of[static_cast<size_t>(v)]);
    if (s.kind == CudaStep::Kind::kGemm || s.kind == CudaStep::Kind::kConv)
      c.writes.push_back(kWorkspaceBuffer);
    uses.push_back(std::move(c));
  }
  const std::vector<std::vector<int>> deps = command_dependencies(uses);

  std::unique_ptr<ProgramGraph> pg(new ProgramGraph());
  check_cu(cu.cuGraphCreate(&pg->graph_, 0), "cuGraphCreate");
  // Per step, the nodes a dependent must wait for (empty for a step with no work: its
  // dependents then wait for what it waited for).
  std::vector<std::vector<CUgraphNode>> exits(st.steps.size());
  CudaStream capture;
  for (size_t i = 0; i < st.steps.size(); ++i) {
    const CudaStep& s = st.steps[i];
    std::vector<CUgraphNode> wait;
    for (int d : deps[i])
      wait.insert(wait.end(), exits[static_cast<size_t>(d)].begin(),
                  exits[static_cast<size_t>(d)].end());
    std::sort(wait.begin(), wait.end());
    wait.erase(std::unique(wait.begin(), wait.end()), wait.end());
    if (s.kind == CudaStep::Kind::kKernel) {
      const codegen::LaunchConfig& l = s.kernel.launch;
      if (l.grid == 0) {
        exits[i] = wait;
        continue;
      }
      CUdeviceptr table = st.tables.ptr() + s.table_index * sizeof(CUdeviceptr);
      void* params[] = {&table};
      CUDA_KERNEL_NODE_PARAMS p{};
      p.func = s.fn;
      p.gridDimX = l.grid;
      p.gridDimY = p.gridDimZ = 1;
      p.blockDimX = l.block;
      p.blockDimY = p.blockDimZ = 1;
      p.sharedMemBytes = l.dynamic_shared_bytes;
      p.kernelParams = params;
      CUgraphNode node = nullptr;
      check_cu(cu.cuGraphAddKernelNode(&node, pg->graph_, wait.data(), wait.size(), &p),
               "cuGraphAddKernelNode (" + s.label + ")");
      exits[i] = {node};
      ++pg->node_count_;
      continue;
    }
    // A library step: captured into this graph after `wait`; its last nodes are the capture's
    // frontier when the calls are recorded.
    const cudaStream_t stream = capture.get();
    check_rt(cudaStreamBeginCaptureToGraph(stream, pg->graph_, wait.data(), nullptr, wait.size(),
                                           cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCaptureToGraph (" + s.label + ")");
    try {
      run_library_step(g, st, s, stream);
    } catch (...) {
      cudaGraph_t ignored = nullptr;
      cudaStreamEndCapture(stream, &ignored);
      cudaGetLastError();
      throw;
    }
    cudaStreamCaptureStatus status;
    const cudaGraphNode_t* frontier = nullptr;
    size_t frontier_count = 0;
    check_rt(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &frontier, nullptr,
                                      &frontier_count),
             "cudaStreamGetCaptureInfo (" + s.label + ")");
    exits[i].assign(frontier, frontier + frontier_count);
    cudaGraph_t same = nullptr;
    check_rt(cudaStreamEndCapture(stream, &same), "cudaStreamEndCapture (" + s.label + ")");
  }
  size_t count = 0;
  check_cu(cu.cuGraphGetNodes(pg->graph_, nullptr, &count), "cuGraphGetNodes");
  pg->node_count_ = count;
  check_cu(cu.cuGraphInstantiateWithFlags(&pg->exec_, pg->graph_, 0),
           "cuGraphInstantiateWithFlags");
  return pg;
}

void ProgramGraph::launch(CUstream stream) const {
  check_cu(cuda_driver().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

}  // namespace gf::cuda
