// Running a model on the caller's CUDA buffers, and putting it into the caller's own CUDA graphs.
//
// A DeviceProgram is what a CUDA Session runs for one set of input shapes, taken out so that a
// framework can drive it with its own device memory and streams:
//
//   gf::DeviceProgram program(session, {{1, 128}});
//   program.run({{d_ids}, {d_logits}}, stream);               // queued on the caller's stream
//
//   gf::GraphSegment seg = program.populate(graph, &before, 1, {{d_ids}, {d_logits}});
//   cudaGraphAddDependencies(graph, &seg.exit, &after, 1);    // the caller's later work
//   cudaGraphInstantiate(&exec, graph);
//   program.update(exec, seg, {{d_ids2}, {d_logits2}});       // in place: no re-instantiation
//
// populate() adds the program's nodes to the caller's graph directly (kernel nodes, library
// calls captured in place): no child graph between the caller and our kernels. The segment's
// entry node takes the caller's addresses, so re-binding is one kernel-node update whatever the
// program's size, plus a re-capture of each cuBLASLt call that uses a caller's buffer itself.
// 256-byte aligned buffers (cudaMalloc's) are read and written in place by the kernels and
// GEMMs; others, and those of values cuDNN reads, are copied in by the entry node and out by
// the exit node. populate_child() puts the same nodes in one child-graph node instead, for
// callers that want the program as one node (it copies every buffer); its update rewrites the
// whole child graph and is slower.
//
// populate_loop() makes the program the body of a loop that runs inside one launch of the
// caller's graph (a CUDA conditional WHILE node): an iterative solver or a decode loop whose
// condition the program itself computes on the device. populate_if() runs it only when a
// caller's device bool says so.
//
// Thread safety: calls on one DeviceProgram may come from any thread (they serialise). The
// programs of one session share one set of internal buffers (SessionOptions::
// share_device_arena): graphs that hold them must not run concurrently with each other or with
// run() of any of them, which the caller orders (run() itself orders its launches after each
// other and after the other programs' of the session, on any streams; the first time runs
// change streams it synchronises the device once, and from then on each run records an event
// for the next stream to wait for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "graphfuse/session.h"

// The CUDA handle types (cudaStream_t, cudaGraph_t, cudaGraphNode_t and cudaGraphExec_t, and
// their driver-API names, are pointers to these), declared so this header needs no CUDA header.
struct CUstream_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;

namespace gf {

// Device addresses in the order of the graph's inputs and outputs. Each holds its value dense
// and row-major; no alignment is required (a 256-byte aligned buffer is used in place, another
// is copied). An output may be the same buffer as an input (it is then copied out at the end).
struct DeviceBindings {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
};

// What populate() or populate_child() added to a caller's graph.
struct GraphSegment {
  CUgraphNode_st* entry = nullptr;  // waits for the dependencies given to populate()
  CUgraphNode_st* exit = nullptr;   // what the caller's later nodes wait for
  size_t node_count = 0;  // nodes added at the caller's level (1 for a child graph)
  // Internal: the node update() changes (entry, or inside the child graph), and the child-graph
  // node (null when populated flat).
  CUgraphNode_st* binding_node = nullptr;
  CUgraphNode_st* child = nullptr;
  // Internal: for a flat segment, the other nodes update() may change (the exit node, and the
  // library calls that read or write a caller's buffer in place).
  std::shared_ptr<const void> rebinding;
};

// The program as a loop body: it runs, then runs again while its output `condition_output` (a
// bool with one element) is true, at most `max_iterations` times in all (a guard, so that a
// condition that never turns false cannot hang the GPU). Each (output, input) pair of `carry`
// feeds that output to that input for the next iteration (types must match); other inputs are
// read from their bound buffers every iteration. Bound outputs get the values of the last one.
struct LoopSpec {
  std::vector<std::pair<size_t, size_t>> carry;
  size_t condition_output = 0;
  uint32_t max_iterations = 1u << 20;
};

namespace cuda {
class CudaProgram;
}

class DeviceProgram {
 public:
  // The program `session` (on Device::kCuda) runs for inputs of these dims: compiled now, or
  // taken from the session's cache; it stays valid after the session is destroyed. Throws what
  // Session::run would for such inputs (kShapeMismatch naming the input, kCompileError, ...),
  // and kUnsupported when the shapes depend on input values or the session is not on CUDA.
  DeviceProgram(const Session& session, const std::vector<std::vector<int64_t>>& input_dims);

  // The types of the bound values (static shapes).
  const std::vector<TensorType>& input_types() const { return input_types_; }
  const std::vector<TensorType>& output_types() const { return output_types_; }
  SessionStats stats() const;  // its kernel counts, arena size and graph nodes

  // Queues a run on `stream` and returns; outputs are ready when the stream gets there.
  void run(const DeviceBindings& bindings, CUstream_st* stream) const;

  // Adds the program to `graph` after `deps` (flat). Throws kUnsupported when the program has
  // steps that run on the host (they cannot be graph nodes), kDeviceError naming the call. Its
  // entry and exit kernels run until an update() of the instantiated graph, which disables
  // those with nothing to do (every buffer used in place: no copy).
  GraphSegment populate(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                        const DeviceBindings& bindings) const;
  // The same nodes as one child-graph node.
  GraphSegment populate_child(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                              const DeviceBindings& bindings) const;
  // The program as a loop (a conditional WHILE node, see LoopSpec), after `deps`. Throws
  // kInvalidArgument for a LoopSpec that does not fit the program, naming the values.
  GraphSegment populate_loop(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                             const DeviceBindings& bindings, const LoopSpec& loop) const;
  // The program run only when the bool at device address `condition` is true when the graph
  // gets there (a conditional IF node); its outputs are written only then. The condition's
  // address is fixed for the life of the graph; update() re-binds the rest.
  GraphSegment populate_if(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                           const DeviceBindings& bindings, const bool* condition) const;
  // Re-binds `segment` in `exec` (instantiated from the graph it was added to), effective from
  // the exec's next launch. Nothing else of the exec changes.
  void update(CUgraphExec_st* exec, const GraphSegment& segment,
              const DeviceBindings& bindings) const;

 private:
  std::vector<uint64_t> addresses(const DeviceBindings& bindings) const;

  std::shared_ptr<const CompiledProgram> program_;
  const cuda::CudaProgram* cuda_ = nullptr;
  std::vector<TensorType> input_types_, output_types_;
};

}  // namespace gf
