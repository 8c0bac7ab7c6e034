// ProgramGraph: the steps, in order, as nodes with edges from their buffers.
#include "runtime/cuda/cuda_program_graph.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_steps.h"
#include "runtime/cuda/library_recapture.h"
#include "runtime/cuda/program_bindings.h"
#include "runtime/graph_dependencies.h"

namespace gf::cuda {

namespace {

// Buffers besides the values (whose ids are >= 0). The library workspace is one buffer that
// every library step writes: such steps never overlap. A kernel step's private buffer is none
// of them (reads_and_writes leaves it out): no other step uses it, so it orders nothing.
constexpr int64_t kWorkspaceBuffer = -1;
constexpr int64_t kBindingTable = -2;
constexpr int64_t kCallerOutputs = -3;

}  // namespace

std::vector<std::vector<int>> segment_dependencies(const Graph& g, const CudaProgramState& st) {
  // Buffer ids: a value in the arena is the pieces of the arena its slot covers (values placed
  // on the same bytes at different times share them); other values (weights) come after.
  const int64_t pieces = st.arena_pieces;
  auto add = [&](std::vector<int64_t>& ids, ValueId v) {
    const ValueId r = st.storage_of[static_cast<size_t>(v)];
    const int slot = st.slot_of_value[static_cast<size_t>(r)];
    if (slot < 0) {
      ids.push_back(pieces + static_cast<int64_t>(r));
      return;
    }
    const auto [first, last] = st.slot_pieces[static_cast<size_t>(slot)];
    for (int p = first; p < last; ++p) ids.push_back(p);
  };
  auto add_write = [&](CommandBuffers& c, ValueId v) { add(c.writes, v); };
  auto add_read = [&](CommandBuffers& c, ValueId v) { add(c.reads, v); };
  std::vector<CommandBuffers> uses;
  CommandBuffers in;
  for (ValueId v : g.inputs()) add_write(in, v);
  in.writes.push_back(kBindingTable);
  uses.push_back(std::move(in));
  for (const CudaStep& s : st.steps) {
    if (s.kind == CudaStep::Kind::kHost) {
      throw Error(ErrorCode::kUnsupported, "graph mode: step '" + s.label + "' runs on the host");
    }
    const StepBuffers b = s.reads_and_writes(g);
    CommandBuffers c;
    for (ValueId v : b.reads)
      if (v != kNoValue) add_read(c, v);
    for (ValueId v : b.writes)
      if (v != kNoValue) add_write(c, v);
    if (s.kind == CudaStep::Kind::kGemm || s.kind == CudaStep::Kind::kConv ||
        s.kind == CudaStep::Kind::kAttention)
      c.writes.push_back(kWorkspaceBuffer);
    uses.push_back(std::move(c));
  }
  CommandBuffers out;
  for (ValueId v : g.outputs()) add_read(out, v);
  out.reads.push_back(kBindingTable);
  out.writes.push_back(kCallerOutputs);
  uses.push_back(std::move(out));

  std::vector<std::vector<int>> deps = command_dependencies(uses);
  // An edge to d is implied when another dependency e already waits for d (the write-after-read
  // and write-after-write edges of a chain are): fewer edges make a cheaper instantiate.
  for (std::vector<int>& ds : deps) {
    std::vector<int> kept;
    for (int d : ds) {
      bool implied = false;
      for (int e : ds) {
        const std::vector<int>& de = deps[static_cast<size_t>(e)];
        if (e != d && std::binary_search(de.begin(), de.end(), d)) {
          implied = true;
          break;
        }
      }
      if (!implied) kept.push_back(d);
    }
    ds = std::move(kept);
  }
  const size_t last = deps.size() - 1;
  std::vector<bool> waited_for(deps.size(), false);
  for (size_t i = 1; i < last; ++i) {
    if (deps[i].empty()) deps[i].push_back(0);
    for (int d : deps[i]) waited_for[static_cast<size_t>(d)] = true;
  }
  for (size_t i = 0; i < last; ++i)
    if (!waited_for[i]) deps[last].push_back(static_cast<int>(i));
  std::sort(deps[last].begin(), deps[last].end());
  deps[last].erase(std::unique(deps[last].begin(), deps[last].end()), deps[last].end());
  return deps;
}

namespace {

// A kernel node after `wait`; an edge from one of our kernel nodes is programmatic when `edges`
// asks for them and the kernel syncs (it waits for its inputs inside).
CUgraphNode add_kernel_node(CUgraph graph, const std::vector<CUgraphNode>& wait,
                            const CUDA_KERNEL_NODE_PARAMS& params, bool syncs, StepEdges* edges,
                            const std::string& what) {
  const CudaDriverApi& cu = cuda_driver();
  const bool programmatic = edges != nullptr && edges->programmatic && syncs;
  std::vector<CUgraphNode> full, early;
  for (CUgraphNode n : wait) {
    (programmatic && edges->kernels.count(n) ? early : full).push_back(n);
  }
  CUgraphNode node = nullptr;
  if (early.empty()) {
    // The call's description is made only on failure: this runs once per node.
    if (const CUresult r = cu.cuGraphAddKernelNode(&node, graph, full.data(), full.size(), &params);
        r != CUDA_SUCCESS)
      check_cu(r, "cuGraphAddKernelNode (" + what + ")");
  } else {
    // One call with every edge: building a graph of a thousand kernels is one driver call per
    // node.
    CUgraphEdgeData programmatic_edge{};
    programmatic_edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
    programmatic_edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    std::vector<CUgraphNode> all = full;
    all.insert(all.end(), early.begin(), early.end());
    std::vector<CUgraphEdgeData> data(full.size(), CUgraphEdgeData{});
    data.resize(all.size(), programmatic_edge);
    CUgraphNodeParams node_params{};
    node_params.type = CU_GRAPH_NODE_TYPE_KERNEL;
    CUDA_KERNEL_NODE_PARAMS_v3& k = node_params.kernel;
    k.func = params.func;
    k.gridDimX = params.gridDimX, k.gridDimY = params.gridDimY, k.gridDimZ = params.gridDimZ;
    k.blockDimX = params.blockDimX, k.blockDimY = params.blockDimY, k.blockDimZ = params.blockDimZ;
    k.sharedMemBytes = params.sharedMemBytes;
    k.kernelParams = params.kernelParams;
    k.extra = params.extra;
    if (const CUresult r =
            cu.cuGraphAddNode(&node, graph, all.data(), data.data(), all.size(), &node_params);
        r != CUDA_SUCCESS)
      check_cu(r, "cuGraphAddNode (" + what + ")");
    edges->programmatic_count += static_cast<int>(early.size());
  }
  if (edges != nullptr) edges->kernels.insert(node);
  return node;
}

// cuDNN's attention through its native CUDA graph API: cuDNN fills a graph of its own, which
// joins ours as one child graph node (the driver clones it), so its nodes sit one level down.
CUgraphNode add_cudnn_attention_node(CUgraph graph, const std::vector<CUgraphNode>& wait,
                                     const Graph& g, const CudaProgramState& st,
                                     const CudaStep& s) {
  const CudaDriverApi& cu = cuda_driver();
  CUgraph child = nullptr;
  check_cu(cu.cuGraphCreate(&child, 0), "cuGraphCreate (" + s.label + ")");
  CUgraphNode node = nullptr;
  try {
    s.sdpa->populate(attention_buffers(g, st, s), child);
    check_cu(cu.cuGraphAddChildGraphNode(&node, graph, wait.data(), wait.size(), child),
             "cuGraphAddChildGraphNode (" + s.label + ")");
  } catch (...) {
    cu.cuGraphDestroy(child);
    throw;
  }
  check_cu(cu.cuGraphDestroy(child), "cuGraphDestroy (" + s.label + ")");
  return node;
}

// `direct`: buffers may be bound directly (a flat segment; program_bindings.h).
ProgramSegment populate(CUgraph graph, const CUgraphNode* caller_deps, size_t num_deps,
                        const Graph& g, const CudaProgramState& st,
                        std::span<const uint64_t> addresses, bool programmatic, bool direct) {
  st.bindings->check(g, addresses);
  const BoundAddresses bound = st.bindings->resolve(addresses, direct);
  const size_t before = node_count(graph);
  StepEdges edges;
  edges.programmatic = programmatic && cuda_driver().cuGraphAddNode != nullptr;
  ProgramSegment seg;
  seg.entry = seg.binding_node = add_bind_in(graph, caller_deps, num_deps, g, st, bound);
  edges.kernels.insert(seg.entry);
  auto rebinding = std::make_shared<SegmentRebinding>();
  const std::vector<CUgraphNode> last =
      add_steps(graph, {seg.entry}, g, st, &edges, &bound, direct ? rebinding.get() : nullptr);
  seg.exit = rebinding->bind_out = add_bind_out(graph, last, g, st, &edges);
  seg.node_count = node_count(graph) - before;
  seg.programmatic_edges = static_cast<size_t>(edges.programmatic_count);
  if (direct) seg.rebinding = std::move(rebinding);
  return seg;
}

}  // namespace

std::vector<CUgraphNode> add_steps(CUgraph graph, const std::vector<CUgraphNode>& start,
                                   const Graph& g, const CudaProgramState& st, StepEdges* edges,
                                   const BoundAddresses* bound, SegmentRebinding* rebinding) {
  const std::vector<size_t>& rebound = st.bindings->rebound_steps();
  if (rebinding != nullptr) rebinding->library_nodes.assign(rebound.size(), {});
  const std::vector<std::vector<int>>& deps = st.segment_dependencies;
  GF_ASSERT(deps.size() == st.steps.size() + 2,
            "a program's steps are populated before their edges are known");
  // Per command, the nodes a dependent must wait for (for a step with no work, what it waited
  // for); command 0 (gf_bind_in) stands for `start`.
  std::vector<std::vector<CUgraphNode>> exits(deps.size());
  auto waits = [&](size_t i) {
    std::vector<CUgraphNode> wait;
    for (int d : deps[i])
      wait.insert(wait.end(), exits[static_cast<size_t>(d)].begin(),
                  exits[static_cast<size_t>(d)].end());
    std::sort(wait.begin(), wait.end());
    wait.erase(std::unique(wait.begin(), wait.end()), wait.end());
    return wait;
  };
  exits[0] = start;

  std::optional<CudaStream> capture;  // made for the first library step
  for (size_t i = 0; i < st.steps.size(); ++i) {
    const CudaStep& s = st.steps[i];
    const size_t c = i + 1;
    const std::vector<CUgraphNode> wait = waits(c);
    if (s.kind == CudaStep::Kind::kKernel) {
      const codegen::LaunchConfig& l = s.kernel.launch;
      if (l.grid == 0) {
        exits[c] = wait;
        continue;
      }
      CUdeviceptr table = st.tables.ptr() + s.table_index * sizeof(CUdeviceptr);
      void* params[] = {&table};
      CUDA_KERNEL_NODE_PARAMS kp =
          kernel_node_params(s.fn, l.grid, l.block, l.dynamic_shared_bytes, params);
      exits[c] = {add_kernel_node(graph, wait, kp, s.kernel.waits_for_prior_grids, edges, s.label)};
      continue;
    }
    if (s.kind == CudaStep::Kind::kAttention && s.sdpa->native_graph()) {
      exits[c] = {add_cudnn_attention_node(graph, wait, g, st, s)};
      continue;
    }
    // A library step: captured into this graph after `wait`; its last nodes are the capture's
    // frontier when the calls are recorded. The nodes of one on a directly bound buffer are
    // kept for re-binding: those the capture added.
    const auto kept = std::lower_bound(rebound.begin(), rebound.end(), i);
    const bool keep = rebinding != nullptr && kept != rebound.end() && *kept == i;
    std::vector<CUgraphNode> before;
    if (keep) {
      before = graph_nodes(graph);
      std::sort(before.begin(), before.end());
    }
    if (!capture) capture.emplace();
    const cudaStream_t stream = capture->get();
    check_rt(cudaStreamBeginCaptureToGraph(stream, graph, wait.data(), nullptr, wait.size(),
                                           cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCaptureToGraph (" + s.label + ")");
    try {
      run_library_step(g, st, s, stream, bound);
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
    exits[c].assign(frontier, frontier + frontier_count);
    cudaGraph_t same = nullptr;
    check_rt(cudaStreamEndCapture(stream, &same), "cudaStreamEndCapture (" + s.label + ")");
    if (keep) {
      std::vector<CUgraphNode> added;
      for (CUgraphNode n : graph_nodes(graph))
        if (!std::binary_search(before.begin(), before.end(), n)) added.push_back(n);
      rebinding->library_nodes[static_cast<size_t>(kept - rebound.begin())] =
          ordered_nodes(std::move(added));
    }
  }
  return waits(deps.size() - 1);
}

CUgraphNode add_bind_in(CUgraph graph, const CUgraphNode* deps, size_t num_deps, const Graph& g,
                        const CudaProgramState& st, const BoundAddresses& bound) {
  const ProgramBindings& bindings = *st.bindings;
  BindInParams in = bindings.in_params(bound);
  auto args = in.kernel_params();
  CUDA_KERNEL_NODE_PARAMS p =
      kernel_node_params(bindings.bind_in(), bindings.grid(), bindings.block(), 0, args.data());
  CUgraphNode node = nullptr;
  check_cu(cuda_driver().cuGraphAddKernelNode(&node, graph, deps, num_deps, &p),
           "cuGraphAddKernelNode (binding the inputs of '" + g.name + "')");
  return node;
}

CUgraphNode add_bind_out(CUgraph graph, const std::vector<CUgraphNode>& deps, const Graph& g,
                         const CudaProgramState& st, StepEdges* edges) {
  const ProgramBindings& bindings = *st.bindings;
  BindOutParams out = bindings.out_params();
  auto args = out.kernel_params();
  CUDA_KERNEL_NODE_PARAMS p =
      kernel_node_params(bindings.bind_out(), bindings.grid(), bindings.block(), 0, args.data());
  return add_kernel_node(graph, deps, p, true, edges, "binding the outputs of '" + g.name + "'");
}

size_t node_count(CUgraph graph) {
  size_t count = 0;
  check_cu(cuda_driver().cuGraphGetNodes(graph, nullptr, &count), "cuGraphGetNodes");
  return count;
}

GraphRollback::GraphRollback(CUgraph graph) : graph_(graph), before_(graph_nodes(graph)) {
  std::sort(before_.begin(), before_.end());
}

GraphRollback::~GraphRollback() {
  if (graph_ == nullptr) return;
  try {
    for (CUgraphNode n : graph_nodes(graph_)) {
      if (!std::binary_search(before_.begin(), before_.end(), n)) cuda_driver().cuGraphDestroyNode(n);
    }
  } catch (const Error&) {
    // Listing failed: the graph is as the failed call left it; the caller gets that call's error.
  }
}

ProgramSegment populate_program(CUgraph graph, const CUgraphNode* caller_deps, size_t num_deps,
                                const Graph& g, const CudaProgramState& st,
                                std::span<const uint64_t> addresses) {
  return populate(graph, caller_deps, num_deps, g, st, addresses, st.programmatic_edges, true);
}

ProgramSegment populate_program_child(CUgraph graph, const CUgraphNode* caller_deps,
                                      size_t num_deps, const Graph& g,
                                      const CudaProgramState& st,
                                      std::span<const uint64_t> addresses) {
  const CudaDriverApi& cu = cuda_driver();
  CUgraph child = nullptr;
  check_cu(cu.cuGraphCreate(&child, 0), "cuGraphCreate");
  ProgramSegment seg;
  try {
    populate(child, nullptr, 0, g, st, addresses, false, false);
    // The node holds a copy of `child`.
    check_cu(cu.cuGraphAddChildGraphNode(&seg.child, graph, caller_deps, num_deps, child),
             "cuGraphAddChildGraphNode ('" + g.name + "')");
  } catch (...) {
    cu.cuGraphDestroy(child);
    throw;
  }
  cu.cuGraphDestroy(child);
  seg.entry = seg.exit = seg.child;
  seg.node_count = 1;
  // gf_bind_in's node in the copy: the one kernel node running it.
  CUgraph embedded = nullptr;
  check_cu(cu.cuGraphChildGraphNodeGetGraph(seg.child, &embedded), "cuGraphChildGraphNodeGetGraph");
  size_t count = 0;
  check_cu(cu.cuGraphGetNodes(embedded, nullptr, &count), "cuGraphGetNodes");
  std::vector<CUgraphNode> nodes(count);
  check_cu(cu.cuGraphGetNodes(embedded, nodes.data(), &count), "cuGraphGetNodes");
  for (CUgraphNode n : nodes) {
    CUgraphNodeType type;
    check_cu(cu.cuGraphNodeGetType(n, &type), "cuGraphNodeGetType");
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    CUDA_KERNEL_NODE_PARAMS p{};
    check_cu(cu.cuGraphKernelNodeGetParams(n, &p), "cuGraphKernelNodeGetParams");
    if (p.func == st.bindings->bind_in()) seg.binding_node = n;
  }
  GF_ASSERT(seg.binding_node != nullptr, "the child graph lost its binding node");
  return seg;
}

namespace {

void set_enabled(CUgraphExec exec, CUgraphNode node, bool enabled) {
  check_rt(cudaGraphNodeSetEnabled(exec, node, enabled ? 1u : 0u),
           "cudaGraphNodeSetEnabled (a binding kernel)");
}

}  // namespace

BoundAddresses rebind_segment(CUgraphExec exec, const ProgramSegment& segment, const Graph& g,
                              const CudaProgramState& state, std::span<const uint64_t> addresses,
                              std::vector<uint64_t>* captured) {
  const CudaDriverApi& cu = cuda_driver();
  const ProgramBindings& bindings = *state.bindings;
  const bool flat = segment.child == nullptr && segment.rebinding != nullptr;
  const BoundAddresses bound = bindings.resolve(addresses, flat);
  if (flat && !bindings.rebound_steps().empty()) {
    std::vector<uint64_t> library = bindings.library_addresses(bound);
    if (captured == nullptr || *captured != library) {
      recapture_library_steps(exec, *segment.rebinding, g, state, bound);
      if (captured != nullptr) *captured = std::move(library);
    }
  }
  BindInParams in = bindings.in_params(bound);
  auto args = in.kernel_params();
  CUDA_KERNEL_NODE_PARAMS p =
      kernel_node_params(bindings.bind_in(), bindings.grid(), bindings.block(), 0, args.data());
  if (segment.child == nullptr) {
    check_cu(cu.cuGraphExecKernelNodeSetParams(exec, segment.binding_node, &p),
             "cuGraphExecKernelNodeSetParams (binding new buffers)");
    if (flat) {
      set_enabled(exec, segment.binding_node, bound.bind_in_needed);
      set_enabled(exec, segment.rebinding->bind_out, bound.bind_out_needed);
    }
    return bound;
  }
  // An exec's child graph changes as a whole: the node in the child graph first, then the copy.
  check_cu(cu.cuGraphKernelNodeSetParams(segment.binding_node, &p),
           "cuGraphKernelNodeSetParams (binding new buffers)");
  CUgraph embedded = nullptr;
  check_cu(cu.cuGraphChildGraphNodeGetGraph(segment.child, &embedded),
           "cuGraphChildGraphNodeGetGraph");
  check_cu(cu.cuGraphExecChildGraphNodeSetParams(exec, segment.child, embedded),
           "cuGraphExecChildGraphNodeSetParams (binding new buffers)");
  return bound;
}

ProgramGraph::~ProgramGraph() {
  const CudaDriverApi& cu = cuda_driver();
  if (exec_) cu.cuGraphExecDestroy(exec_);
  if (graph_) cu.cuGraphDestroy(graph_);
}

std::unique_ptr<ProgramGraph> ProgramGraph::build(const Graph& g, const CudaProgramState& st) {
  const CudaDriverApi& cu = cuda_driver();
  std::unique_ptr<ProgramGraph> pg(new ProgramGraph());
  check_cu(cu.cuGraphCreate(&pg->graph_, 0), "cuGraphCreate");
  // Nothing marks its end: a run on another stream than the last is ordered by the arena
  // (SessionArena::follow_last_run), so a launch is one cuGraphLaunch of the program's nodes.
  pg->segment_ = populate_program(pg->graph_, nullptr, 0, g, st, st.bindings->defaults());
  check_cu(cu.cuGraphInstantiateWithFlags(&pg->exec_, pg->graph_, 0),
           "cuGraphInstantiateWithFlags");
  // The binding kernels on: off where the defaults leave them nothing to do.
  pg->library_addresses_ =
      st.bindings->library_addresses(st.bindings->resolve(st.bindings->defaults(), true));
  pg->rebind(g, st, st.bindings->defaults());
  return pg;
}

void ProgramGraph::launch(CUstream stream) const {
  check_cu(cuda_driver().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

void ProgramGraph::rebind(const Graph& g, const CudaProgramState& state,
                          std::span<const uint64_t> addresses) const {
  bound_ = rebind_segment(exec_, segment_, g, state, addresses, &library_addresses_);
  bind_in_enabled_ = -1;
}

void ProgramGraph::set_bind_in_enabled(bool on) const {
  if (bind_in_enabled_ == (on ? 1 : 0)) return;
  set_enabled(exec_, segment_.binding_node, on);
  bind_in_enabled_ = on ? 1 : 0;
}

}  // namespace gf::cuda
