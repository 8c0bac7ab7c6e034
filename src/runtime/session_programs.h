// What a Session compiles per set of input shapes: the graph specialised to those shapes, then
// the fused CPU program or the CUDA program (kept apart from session.cpp, which only caches and
// dispatches).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "graphfuse/session.h"
#include "passes/convert_precision.h"

namespace gf {

namespace cuda {
class CudaProgram;
class SessionDeviceMemory;
}

// What the programs of one session share across input shapes: constants converted to f16/bf16
// once, and on CUDA the device copies of the weights and the device memory budget.
struct SessionResources {
  ConvertedConstants converted;
  std::shared_ptr<cuda::SessionDeviceMemory> device_memory;  // CUDA sessions

  explicit SessionResources(const SessionOptions& options);
  // Device bytes the session's programs hold now (0 on the CPU).
  uint64_t device_bytes_in_use() const;
  uint64_t shared_arena_bytes() const;  // behind the shared CUDA arena now
};

// One compiled program; exactly one of the two is set.
struct CompiledProgram {
  std::shared_ptr<const cpu::FusedProgram> cpu;
  std::shared_ptr<const cuda::CudaProgram> cuda;
  // Set by the session once it is built: seconds spent specialising the graph (the passes) and
  // in all (record() reports them with the program's own breakdown).
  double passes_seconds = 0;
  double total_seconds = 0;

  const Graph& graph() const;
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  // Host bytes a run holds besides its outputs (the CPU arena; the CUDA arena is on the device).
  uint64_t host_arena_bytes() const;
  // The bytes it holds, as SessionOptions::max_cached_program_bytes counts them: its own, and
  // its lease on the session's shared CUDA arena (which holds the largest lease, not the sum).
  uint64_t own_bytes() const;
  uint64_t shared_bytes() const;
  // Whether it runs as one CUDA graph.
  bool runs_as_cuda_graph() const;
  // Copies this program's numbers into the session's stats.
  void record(SessionStats& stats) const;
};

// The graph specialised to concrete input shapes: dims bound, shapes inferred, shape subgraphs
// and other constant work folded, the graph passes, and for CUDA sessions in fp16/bf16 the
// precision conversion.
// `resources` (null: none shared) memoises the precision conversion.
Graph specialise(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                 const SessionOptions& options, SessionResources* resources = nullptr);
Graph specialise(const Graph& g, const std::vector<Tensor>& inputs, const SessionOptions& options);

// Compiles a specialised graph with static shapes for options.device, on `resources` (null:
// the program's own). Throws kDeviceError for CUDA in a build without it.
CompiledProgram compile_program(Graph specialised, const SessionOptions& options,
                                SessionResources* resources = nullptr);

}  // namespace gf
