#include "runtime/cuda/program_control.h"

#include <algorithm>
#include <mutex>

#include "codegen/cuda/binding_kernels.h"
#include "codegen/cuda/kernels/control_cuh.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_program_graph.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

namespace {

// A body's kernels start early after the ones before them in the same iteration, as the
// program's own graph does (the first waits for the iteration's start in full).
StepEdges body_edges(const CudaProgramState& st) {
  StepEdges edges;
  edges.programmatic = st.programmatic_edges && cuda_driver().cuGraphAddNode != nullptr;
  return edges;
}

// gf_loop_copy of kernels/control.cuh.
struct LoopCopy {
  uint64_t dst = 0;
  uint64_t src = 0;
  uint64_t bytes = 0;
  int32_t binding = -1;
  int32_t unused = 0;
};
static_assert(sizeof(LoopCopy) == 32);

struct ControlKernels {
  std::unique_ptr<CudaModule> module;
  CUfunction loop_start = nullptr, loop_next = nullptr, if_set = nullptr;
};

// Compiled and loaded once per process (the context lives as long; so does the module).
const ControlKernels& control_kernels() {
  if (cuda_driver().cuGraphConditionalHandleCreate == nullptr ||
      cuda_driver().cuGraphAddNode == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "loops and ifs in a CUDA graph need conditional nodes (a CUDA 12.3 driver or later)");
  }
  static std::once_flag once;
  static ControlKernels* kernels = nullptr;
  std::call_once(once, [] {
    const CudaContext& ctx = CudaContext::get();
    const codegen::CubinPtr cubin =
        process_nvrtc().compile(codegen::embedded::control_cuh, ctx.compute_capability());
    auto k = std::make_unique<ControlKernels>();
    k->module = CudaModule::load(*cubin, "control-flow kernels");
    k->loop_start = k->module->function("gf_loop_start");
    k->loop_next = k->module->function("gf_loop_next");
    k->if_set = k->module->function("gf_if_set");
    kernels = k.release();
  });
  return *kernels;
}

CUgraphNode add_kernel(CUgraph graph, const std::vector<CUgraphNode>& deps, CUfunction fn,
                       uint32_t grid, uint32_t block, void** params, const std::string& what) {
  CUDA_KERNEL_NODE_PARAMS p = kernel_node_params(fn, grid, block, 0, params);
  CUgraphNode node = nullptr;
  check_cu(cuda_driver().cuGraphAddKernelNode(&node, graph, deps.data(), deps.size(), &p),
           "cuGraphAddKernelNode (" + what + ")");
  return node;
}

// A conditional node of `type` after `deps`; returns it and its body graph.
std::pair<CUgraphNode, CUgraph> add_conditional(CUgraph graph, CUgraphNode dep,
                                                CUgraphConditionalHandle handle,
                                                CUgraphConditionalNodeType type) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = handle;
  p.conditional.type = type;
  p.conditional.size = 1;
  p.conditional.ctx = CudaContext::get().context();
  CUgraphNode node = nullptr;
  check_cu(cuda_driver().cuGraphAddNode(&node, graph, &dep, nullptr, 1, &p),
           "cuGraphAddNode (conditional)");
  return {node, p.conditional.phGraph_out[0]};
}

CUgraphConditionalHandle make_handle(CUgraph graph, unsigned int initial) {
  CUgraphConditionalHandle handle = 0;
  check_cu(cuda_driver().cuGraphConditionalHandleCreate(&handle, graph,
                                                        CudaContext::get().context(), initial,
                                                        CU_GRAPH_COND_ASSIGN_DEFAULT),
           "cuGraphConditionalHandleCreate");
  return handle;
}

// Loops and ifs copy every binding: their bodies are conditional graphs, whose nodes re-binding
// does not reach.
BoundAddresses copied(const Graph& g, const CudaProgramState& st,
                      std::span<const uint64_t> addresses) {
  st.bindings->check(g, addresses);
  return st.bindings->resolve(addresses, false);
}

std::string describe(const Graph& g, ValueId v) {
  return "'" + g.value(v).name + "' (" + g.value(v).type.to_string() + ")";
}

}  // namespace

void check_loop(const Graph& g, const LoopControl& loop) {
  const size_t ins = g.inputs().size(), outs = g.outputs().size();
  auto bad = [](const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, "loop: " + why);
  };
  if (loop.max_iterations < 1) bad("max_iterations must be at least 1");
  if (loop.condition_output >= outs) {
    bad("condition output " + std::to_string(loop.condition_output) + " of " +
        std::to_string(outs) + " outputs");
  }
  const Value& cond = g.value(g.outputs()[loop.condition_output]);
  if (cond.type.dtype != DType::kBool || cond.type.shape.numel() != 1) {
    bad("the condition " + describe(g, g.outputs()[loop.condition_output]) +
        " must be a bool with one element");
  }
  std::vector<bool> fed(ins, false);
  for (const auto& [out, in] : loop.carry) {
    if (out >= outs || in >= ins) {
      bad("carry from output " + std::to_string(out) + " to input " + std::to_string(in) +
          " (the program has " + std::to_string(outs) + " outputs and " + std::to_string(ins) +
          " inputs)");
    }
    const ValueId o = g.outputs()[out], i = g.inputs()[in];
    if (g.value(o).type.dtype != g.value(i).type.dtype ||
        g.value(o).type.shape.static_dims() != g.value(i).type.shape.static_dims()) {
      bad("output " + describe(g, o) + " cannot feed input " + describe(g, i));
    }
    if (fed[in]) bad("input " + describe(g, i) + " is fed by two outputs");
    fed[in] = true;
  }
}

ProgramSegment populate_program_loop(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                     const Graph& g, const CudaProgramState& st,
                                     std::span<const uint64_t> addresses,
                                     const LoopControl& loop) {
  check_loop(g, loop);
  const ControlKernels& k = control_kernels();
  // Per input in the arena: where its next value comes from.
  std::vector<LoopCopy> copies;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ValueId v = g.inputs()[i];
    const Value& val = g.value(v);
    const uint64_t bytes = static_cast<uint64_t>(val.type.shape.numel()) * dtype_size(val.type.dtype);
    if (st.slot_of_value[static_cast<size_t>(v)] < 0 || bytes == 0) continue;
    LoopCopy c;
    c.dst = st.device_ptr(g, v);
    c.bytes = bytes;
    c.binding = static_cast<int32_t>(i);
    for (const auto& [out, in] : loop.carry) {
      if (in != i) continue;
      c.binding = -1;
      c.src = st.device_ptr(g, g.outputs()[out]);
    }
    if (c.binding < 0 && c.src == c.dst) continue;
    copies.push_back(c);
  }
  // The copies and the iteration count live as long as the program (so the caller's graph may
  // use them); each loop added has its own.
  DeviceBuffer control =
      st.device_memory->allocate(copies.size() * sizeof(LoopCopy) + sizeof(uint32_t), "a loop's state");
  if (!copies.empty()) {
    check_cu(cuda_driver().cuMemcpyHtoD(control.ptr(), copies.data(),
                                        copies.size() * sizeof(LoopCopy)),
             "cuMemcpyHtoD (a loop's copies)");
    // On the legacy default stream, which the caller's non-blocking streams do not wait for.
    check_cu(cuda_driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize (a loop's copies)");
  }
  CUdeviceptr copy_list = control.ptr();
  CUdeviceptr iterations = control.ptr() + copies.size() * sizeof(LoopCopy);

  const size_t before = node_count(graph);
  ProgramSegment seg;
  seg.entry = seg.binding_node =
      add_bind_in(graph, deps, num_deps, g, st, copied(g, st, addresses));
  void* start_args[] = {&iterations};
  const CUgraphNode start =
      add_kernel(graph, {seg.entry}, k.loop_start, 1, 1, start_args, "starting a loop");
  CUgraphConditionalHandle handle = make_handle(graph, 1);
  const auto [loop_node, body] = add_conditional(graph, start, handle, CU_GRAPH_COND_TYPE_WHILE);

  StepEdges edges = body_edges(st);
  const std::vector<CUgraphNode> last = add_steps(body, {}, g, st, &edges);
  int copy_count = static_cast<int>(copies.size());
  CUdeviceptr table = st.bindings->table();
  CUdeviceptr condition = st.device_ptr(g, g.outputs()[loop.condition_output]);
  unsigned int max_iterations = loop.max_iterations;
  void* next_args[] = {&handle, &copy_list, &copy_count, &table, &condition, &iterations,
                       &max_iterations};
  add_kernel(body, last, k.loop_next, st.bindings->grid(), st.bindings->block(), next_args,
             "the next iteration of a loop");

  seg.exit = add_bind_out(graph, {loop_node}, g, st);
  seg.node_count = node_count(graph) - before;
  // Kept once the loop is in the graph (moving keeps the address its nodes hold); freed here
  // when populating failed.
  st.control_buffers.push_back(std::move(control));
  return seg;
}

ProgramSegment populate_program_if(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                   const Graph& g, const CudaProgramState& st,
                                   std::span<const uint64_t> addresses, uint64_t condition) {
  if (condition == 0) throw Error(ErrorCode::kInvalidArgument, "if: a null condition address");
  const ControlKernels& k = control_kernels();
  const size_t before = node_count(graph);
  ProgramSegment seg;
  seg.entry = seg.binding_node =
      add_bind_in(graph, deps, num_deps, g, st, copied(g, st, addresses));
  CUgraphConditionalHandle handle = make_handle(graph, 0);
  CUdeviceptr flag = condition;
  void* set_args[] = {&handle, &flag};
  const CUgraphNode set = add_kernel(graph, {seg.entry}, k.if_set, 1, 1, set_args, "an if");
  const auto [if_node, body] = add_conditional(graph, set, handle, CU_GRAPH_COND_TYPE_IF);
  StepEdges edges = body_edges(st);
  add_bind_out(body, add_steps(body, {}, g, st, &edges), g, st, &edges);
  seg.exit = if_node;
  seg.node_count = node_count(graph) - before;
  return seg;
}

}  // namespace gf::cuda
