// A CudaProgram's steps as CUDA graph nodes (graph mode): kernel steps become kernel nodes
// through the graph API; library steps (cuBLASLt, cuDNN) are captured into the same graph at
// their place (stream capture into an existing graph: no child graph); edges come from the
// buffers each step reads and writes (command_dependencies), so independent branches run
// concurrently. The steps sit between the two binding kernels (program_bindings.h): gf_bind_in
// is the one entry node, gf_bind_out the one exit node.
//
// populate_program adds these nodes to any graph, ours or a caller's (flat: no child graph);
// ProgramGraph is the program's own graph, built and instantiated once, launched as one unit.
//
// Programmatic edges (CudaProgramState::programmatic_edges): an edge between two of our kernel
// nodes whose later kernel calls gf_grid_dependency_sync() is made programmatic, so that kernel
// is launched while the earlier one finishes and waits inside for its results; the gap between
// dependent kernels mostly goes. Edges to or from anything else (library calls, the caller's
// nodes, the final event) stay full dependencies, and so do all edges inside a child graph or a
// loop or if body, where the driver's support is not assumed.
#pragma once

#include <cuda.h>

#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/program_bindings.h"

namespace gf::cuda {

struct CudaProgramState;

// Adds the program to `graph` after `deps`, bound to `addresses` (inputs then outputs). Throws
// kUnsupported when a step cannot be in a graph (a host step), kDeviceError naming the call
// when CUDA refuses.
ProgramSegment populate_program(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                const Graph& g, const CudaProgramState& state,
                                std::span<const uint64_t> addresses);

// The nodes of a flat segment that a re-binding changes besides gf_bind_in: gf_bind_out (enabled
// only when it has a copy to make), and per ProgramBindings::rebound_steps() the nodes its
// library call was captured into, in ordered_nodes' order (a new address is a new capture, whose
// nodes' parameters go to these).
struct SegmentRebinding {
  CUgraphNode bind_out = nullptr;
  std::vector<std::vector<CUgraphNode>> library_nodes;
};

// How add_steps and add_bind_out make their edges.
struct StepEdges {
  bool programmatic = false;  // make the eligible edges programmatic (see above)
  std::unordered_set<CUgraphNode> kernels;  // our kernel nodes so far, the sources it may use
  int programmatic_count = 0;  // out: how many it made
};

// The commands in order: gf_bind_in, the steps, gf_bind_out; per command, the earlier ones it
// waits for. Every step waits at least for gf_bind_in and gf_bind_out waits for every step
// nothing else waits for, so the segment has one entry and one exit. Computed once per program
// (CudaProgramState::segment_dependencies): every populate reads it. Throws kUnsupported for a
// host step.
std::vector<std::vector<int>> segment_dependencies(const Graph& g, const CudaProgramState& st);

// The parts of a segment, for the control-flow forms (program_control.h): the steps after
// `start` (a step that waits for nothing else waits for these) and the nodes a node after them
// must wait for; gf_bind_in after `deps`, bound to `addresses`; gf_bind_out after `deps`.
// `bound`: the run's bindings (null: everything in the arena); `rebinding`, when given, gets the
// nodes of the library steps that touch a directly bound buffer.
std::vector<CUgraphNode> add_steps(CUgraph graph, const std::vector<CUgraphNode>& start,
                                   const Graph& g, const CudaProgramState& state,
                                   StepEdges* edges = nullptr,
                                   const BoundAddresses* bound = nullptr,
                                   SegmentRebinding* rebinding = nullptr);
CUgraphNode add_bind_in(CUgraph graph, const CUgraphNode* deps, size_t num_deps, const Graph& g,
                        const CudaProgramState& state, const BoundAddresses& bound);
CUgraphNode add_bind_out(CUgraph graph, const std::vector<CUgraphNode>& deps, const Graph& g,
                         const CudaProgramState& state, StepEdges* edges = nullptr);
size_t node_count(CUgraph graph);

// Removes the nodes added to a caller's graph since it was made, unless kept: a populate that
// fails part-way leaves the caller's graph as it found it (a conditional handle it created stays,
// unused: the graph owns those).
class GraphRollback {
 public:
  explicit GraphRollback(CUgraph graph);
  ~GraphRollback();
  GraphRollback(const GraphRollback&) = delete;
  GraphRollback& operator=(const GraphRollback&) = delete;
  void keep() { graph_ = nullptr; }

 private:
  CUgraph graph_;
  std::vector<CUgraphNode> before_;  // sorted
};

// The same nodes inside one child-graph node of `graph`.
ProgramSegment populate_program_child(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                      const Graph& g, const CudaProgramState& state,
                                      std::span<const uint64_t> addresses);

// Points the segment's gf_bind_in node of `exec` (a graph instantiated from one populate_program
// added to) at new addresses, and for a flat segment re-captures the library calls on directly
// bound buffers and enables the binding kernels that have work; takes effect from the next
// launch. `captured`, when given, holds the library addresses the exec's nodes have now (the
// calls are re-captured only when they change) and gets the new ones. Returns the bindings it
// resolved.
BoundAddresses rebind_segment(CUgraphExec exec, const ProgramSegment& segment, const Graph& g,
                              const CudaProgramState& state, std::span<const uint64_t> addresses,
                              std::vector<uint64_t>* captured = nullptr);

class ProgramGraph {
 public:
  ~ProgramGraph();
  ProgramGraph(const ProgramGraph&) = delete;
  ProgramGraph& operator=(const ProgramGraph&) = delete;

  // Bound to the program's own addresses (the state's binding defaults).
  static std::unique_ptr<ProgramGraph> build(const Graph& g, const CudaProgramState& state);
  void launch(CUstream stream) const;
  // Not thread-safe: the program's run mutex serialises it with launches.
  void rebind(const Graph& g, const CudaProgramState& state,
              std::span<const uint64_t> addresses) const;
  // The bindings of the last rebind.
  const BoundAddresses& bound() const { return bound_; }
  // Turns its gf_bind_in node on or off from the next launch (no call when it already is).
  void set_bind_in_enabled(bool on) const;
  size_t node_count() const { return segment_.node_count; }
  size_t programmatic_edges() const { return segment_.programmatic_edges; }

 private:
  ProgramGraph() = default;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  ProgramSegment segment_;
  mutable std::vector<uint64_t> library_addresses_;  // what its library nodes were captured with
  mutable BoundAddresses bound_;
  mutable int bind_in_enabled_ = -1;  // 0 or 1 as last set; -1 after a rebind set it
};

}  // namespace gf::cuda
