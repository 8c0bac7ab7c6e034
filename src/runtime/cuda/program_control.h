// A CudaProgram under control flow inside a caller's CUDA graph, with conditional nodes: a loop
// (WHILE) whose body is the program's steps and whose condition the program computes on the
// device, and an IF that runs the program when a caller's bool says so. Either way the whole
// computation stays inside one graph launch.
//
// Loop:  deps -> gf_bind_in -> gf_loop_start -> WHILE { steps -> gf_loop_next } -> gf_bind_out
//   gf_loop_next writes the next iteration's inputs into their arena slots (carried outputs,
//   or the caller's buffers again for the others) and sets the condition: the program's bool
//   output, and fewer than max_iterations done (so a condition that never turns false cannot
//   hang the GPU). The body runs at least once (do-while).
// If:    deps -> gf_bind_in -> gf_if_set -> IF { steps -> gf_bind_out }
//   gf_if_set reads the caller's bool; outputs are written only when the body runs.
//
// Re-binding either form is the same one update of gf_bind_in (nothing inside a conditional
// body changes): the body reads the caller's addresses from the binding table.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/cuda_program.h"

namespace gf::cuda {

struct CudaProgramState;

struct LoopControl {
  std::vector<std::pair<size_t, size_t>> carry;  // (output, input): the output feeds the input
  size_t condition_output = 0;                   // a bool scalar; nonzero: run again
  uint32_t max_iterations = 0;                   // at least 1
};

// Throws kInvalidArgument naming the values when `loop` does not fit the graph (index out of
// range, carried types that differ, an input fed twice, a condition that is not a bool scalar).
void check_loop(const Graph& g, const LoopControl& loop);

ProgramSegment populate_program_loop(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                     const Graph& g, const CudaProgramState& state,
                                     std::span<const uint64_t> addresses,
                                     const LoopControl& loop);

// `condition`: the device address of the caller's bool (fixed for the life of the graph).
ProgramSegment populate_program_if(CUgraph graph, const CUgraphNode* deps, size_t num_deps,
                                   const Graph& g, const CudaProgramState& state,
                                   std::span<const uint64_t> addresses, uint64_t condition);

}  // namespace gf::cuda
