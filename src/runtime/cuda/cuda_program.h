// The CUDA backend: a graph with static shapes compiled into a list of steps (generated kernels
// from the fusion plan, cuBLASLt GEMMs and cuDNN convolutions for the anchors with their
// epilogues generated, hand-written anchor kernels for attention and pooling, host steps on the
// reference kernels where nothing else takes a node) over a device arena placed by plan_memory
// (leased from the session's shared arena, session_arena.h), run as one CUDA graph or step by
// step on a stream. Weights are uploaded once, when
// the program is built. run() copies host inputs in and outputs out; run_on_device() and
// populate() bind the caller's device buffers instead (runtime/cuda/program_bindings.h).
//
// Thread safety: run() and run_on_device() may be called from any thread, but calls on the
// programs of one arena serialise on its turn, and their GPU work is ordered one after another
// whatever the streams: the programs share the arena and the library workspace in it, and
// their device addresses never change (what a CUDA graph of them relies on). Programs with
// arenas of their own (CudaProgramOptions::shared_arena false) run concurrently. Graphs that a
// caller populated are the caller's to order: two launches of them must not overlap each other
// or a run of a program of the same arena.
//
// This header includes no CUDA header, so the Session can name the type in every build.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graphfuse/graph.h"
#include "graphfuse/session.h"

// The driver's handle types (CUstream, CUgraph, ... are pointers to these).
struct CUstream_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;

namespace gf::cuda {

// A flat segment's nodes that re-binding may change besides gf_bind_in (cuda_program_graph.h).
struct SegmentRebinding;

// What populate() added to a graph: one entry node (waiting for the caller's dependencies) and
// one exit node (for the caller's later nodes to wait for).
struct ProgramSegment {
  CUgraphNode_st* entry = nullptr;
  CUgraphNode_st* exit = nullptr;
  size_t node_count = 0;  // nodes added, the two binding kernels included (1: a child graph)
  CUgraphNode_st* binding_node = nullptr;  // gf_bind_in's node (inside the child graph if any)
  CUgraphNode_st* child = nullptr;         // populate_child's node
  size_t programmatic_edges = 0;  // of the edges added, those that let a kernel start early
  // Set for a flat segment, whose buffers may be bound directly (program_bindings.h).
  std::shared_ptr<const SegmentRebinding> rebinding;
};

class SessionDeviceMemory;

struct CudaProgramOptions {
  bool allow_tf32 = false;  // f32 GEMMs and convolutions on the tensor cores in TF32
  // Run the steps as one CUDA graph (cuda_program_graph.h), built and instantiated with the
  // program. A program with host steps runs eagerly whatever this says (stats say which).
  bool use_graph = true;
  // Where its weights, budget and arena come from: the session's (shared by its programs); null
  // gives the program memory of its own, with no cap.
  std::shared_ptr<SessionDeviceMemory> device_memory;
  // Lease the arena from device_memory's shared one (the programs then take turns); false: an
  // arena of the program's own.
  bool shared_arena = true;
  // Which decode-shaped GEMMs run as generated skinny GEMM kernels with their epilogue fused
  // (skinny_gemm_step.h); the rest run through cuBLASLt.
  SkinnyGemm skinny_gemm = SkinnyGemm::kAuto;
  // How many skinny steps later the weights each skinny kernel prefetches belong to
  // (SessionOptions::skinny_prefetch_distance; 0: none).
  int skinny_prefetch_distance = 1;
  // Whose attention runs (SessionOptions::attention).
  AttentionPath attention = AttentionPath::kAuto;
  // Which library runs the products (SessionOptions::gemm_library).
  GemmLibrary gemm_library = GemmLibrary::kAuto;
  // A kernel may start while the kernel it depends on finishes (programmatic dependent launch,
  // sm_90 and later), hiding most of the gap between dependent kernels; our kernels wait for
  // their inputs inside (gf_grid_dependency_sync). Graph mode: programmatic edges; eager mode:
  // programmatic stream serialization after a kernel of ours. Off: plain edges and launches.
  bool programmatic_launch = true;
  // Generated kernels round each f16/bf16 op's result (SessionOptions::round_16bit_intermediates).
  bool round_16bit_intermediates = true;
  // 16-bit 2-D convolutions run on channels-last data where cuDNN is present
  // (passes/channels_last_conv.h), so cuDNN transposes nothing around them.
  bool channels_last_convs = true;
};

struct CudaProgramStats {
  int nodes = 0;
  int generated_kernels = 0;      // fused kernels from the fusion plan (epilogues included)
  int skinny_gemm_steps = 0;      // of those, GEMMs run as skinny GEMM kernels
  int cudnn_attention_steps = 0;  // library calls of cuDNN's fused attention
  int cudnn_gemm_steps = 0;       // library calls of cuDNN's fused matmul (GemmLibrary)
  int tensor_core_gemm_steps = 0;  // generated kernels of our tensor-core GEMM (GemmLibrary)
  int anchor_kernels = 0;         // hand-written kernels (attention, pooling, ...)
  int library_calls = 0;          // cuBLASLt GEMM and cuDNN convolution steps
  int tuned_gemms = 0;     // of those, GEMMs whose algorithm was chosen by timing (gemm_tuning.h)
  int aliased_views = 0;   // view nodes whose output shares its input's storage
  int host_steps = 0;      // nodes run on the host by the reference kernels
  int fallback_nodes = 0;  // = host_steps: every host step is a node no device path took
  std::vector<std::string> fallback_reasons;
  uint64_t arena_bytes = 0;
  uint64_t arena_lower_bound = 0;
  uint64_t weight_bytes = 0;
  uint64_t workspace_bytes = 0;  // the library workspace and the steps' private buffers
  // Its lease on the arena: arena_bytes, aligned, then the library workspace.
  uint64_t arena_lease_bytes = 0;
  bool shared_arena = false;   // the lease is on an arena shared with other programs
  uint64_t private_bytes = 0;  // the steps' private buffers (outside the arena)
  int graph_nodes = 0;         // nodes of the program's CUDA graph; 0 when it runs eagerly
  int programmatic_edges = 0;  // of its edges, those that let a kernel start early
  // Inputs and outputs that a run on caller buffers may read or write in place (no copy;
  // program_bindings.h).
  int direct_bindings = 0;
  // Where its construction went (CompileSeconds's CUDA parts; passes and total stay 0).
  CompileSeconds compile_seconds;
  std::string eager_reason;  // why it runs eagerly ("" in graph mode)
};

class KernelTableState;
struct CudaProgramState;
class ProgramGraph;
class SessionDeviceMemory;

class CudaProgram {
 public:
  // `graph` must have static shapes and be shape-inferred (after the session's specialise()).
  // Throws kDeviceError when there is no usable GPU, kCompileError when a generated kernel
  // fails to compile, kOutOfMemory when the arena or the weights do not fit.
  CudaProgram(Graph graph, const CudaProgramOptions& options = {});
  ~CudaProgram();
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  // Inputs (host tensors) in the order of graph().inputs(), already checked against their types;
  // outputs are host tensors.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  // Runs on the caller's device buffers, `addresses` being the inputs then the outputs in graph
  // order, asynchronously on `stream` (the caller's): returns once the work is queued. Each
  // buffer must hold its value's bytes (dense, row-major); any alignment. Outputs may alias
  // inputs. kInvalidArgument for a wrong count or a null address.
  void run_on_device(std::span<const uint64_t> addresses, CUstream_st* stream) const;

  // Adds the program to the caller's `graph` (which may already hold nodes) after `deps`, flat:
  // kernel nodes and captured library calls, no child graph. Throws kUnsupported for a program
  // with host steps.
  ProgramSegment populate(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                          std::span<const uint64_t> addresses) const;
  // The same nodes in one child-graph node.
  ProgramSegment populate_child(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                                std::span<const uint64_t> addresses) const;
  // Binds new buffers in `exec`, instantiated from a graph that populate() added `segment` to:
  // one kernel-node update, and for the cuBLASLt calls on buffers used in place a new capture
  // whose parameters their nodes take (program_bindings.h); effective from the exec's next
  // launch (for a child graph, the child graph's update).
  void update(CUgraphExec_st* exec, const ProgramSegment& segment,
              std::span<const uint64_t> addresses) const;
  // The program as the body of a loop inside the caller's graph (program_control.h): it runs,
  // then again while its bool output `condition_output` is true and fewer than `max_iterations`
  // runs are done; each (output, input) pair of `carry` feeds the output to the input of the
  // next run. kInvalidArgument for a malformed loop.
  ProgramSegment populate_loop(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                               std::span<const uint64_t> addresses,
                               const std::vector<std::pair<size_t, size_t>>& carry,
                               size_t condition_output, uint32_t max_iterations) const;
  // The program run only when the bool at device address `condition` is true at that point of
  // the graph.
  ProgramSegment populate_if(CUgraph_st* graph, CUgraphNode_st* const* deps, size_t num_deps,
                             std::span<const uint64_t> addresses, uint64_t condition) const;
  // Inputs then outputs: the values whose addresses the calls above take.
  size_t binding_count() const { return graph_.inputs().size() + graph_.outputs().size(); }

  const Graph& graph() const { return graph_; }
  const CudaProgramStats& stats() const { return stats_; }
  // Generated and anchor kernel sources, in step order (for dumps and tests).
  std::vector<std::string> kernel_sources() const;

 private:
  Graph graph_;
  CudaProgramStats stats_;
  std::unique_ptr<CudaProgramState> state_;
  // Queues the steps, bound to `addresses`, on `stream`, after the program's earlier work.
  void launch(std::span<const uint64_t> addresses, CUstream_st* stream) const;

  std::unique_ptr<ProgramGraph> cuda_graph_;  // graph mode; destroyed before the state
  mutable std::mutex run_mutex_;              // also guards the members below
  mutable std::vector<uint64_t> graph_addresses_;  // what cuda_graph_ is bound to now
  // Where the kernels' pointer tables point: a launch skips gf_bind_in where it would only
  // point them there again.
  mutable std::unique_ptr<KernelTableState> tables_;
};

}  // namespace gf::cuda
