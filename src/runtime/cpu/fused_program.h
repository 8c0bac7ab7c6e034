// The fused CPU backend: a graph with static shapes compiled into a list of steps (generated
// kernels from the fusion plan, BLAS-backed anchor kernels for GEMM/conv/attention anchors,
// reference kernels where no fused lowering exists) over one statically planned arena.
//
// Thread safety: run() may be called concurrently; each call uses its own arena (taken from a
// small pool of arenas that finished runs give back).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/memory_plan.h"

namespace gf::codegen {
class JitCompiler;
class JitLibrary;
}  // namespace gf::codegen

namespace gf::cpu {

struct FusedProgramStats {
  int nodes = 0;
  int fused_kernels = 0;     // generated and compiled
  int anchor_steps = 0;      // anchors run by anchor kernels (runtime/cpu/anchor_kernel.h)
  int reference_steps = 0;   // nodes run by the reference kernels (other anchors, views, fallbacks)
  int fallback_nodes = 0;    // of those, nodes that a fused kernel could not take
  std::vector<std::string> fallback_reasons;
  uint64_t arena_bytes = 0;
  uint64_t arena_lower_bound = 0;
};

class FusedProgram {
 public:
  // `graph` must have static shapes (bind symbolic dims first) and be shape-inferred.
  FusedProgram(Graph graph, codegen::JitCompiler& jit);
  ~FusedProgram();
  FusedProgram(const FusedProgram&) = delete;
  FusedProgram& operator=(const FusedProgram&) = delete;

  // Inputs in the order of graph().inputs(), already checked against their types.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  const Graph& graph() const { return graph_; }
  const FusedProgramStats& stats() const { return stats_; }
  // Generated source of every fused kernel, in step order (for dumps and tests).
  const std::vector<std::string>& kernel_sources() const { return sources_; }

 private:
  struct Step;
  class ArenaPool;
  Graph graph_;
  std::vector<Step> steps_;
  std::vector<std::string> sources_;
  std::vector<std::shared_ptr<const codegen::JitLibrary>> libraries_;
  MemoryPlan memory_;
  std::vector<int> arena_slot_;  // per value: index into memory_.offsets, -1 if not in the arena
  FusedProgramStats stats_;
  std::unique_ptr<ArenaPool> arenas_;
};

}  // namespace gf::cpu
