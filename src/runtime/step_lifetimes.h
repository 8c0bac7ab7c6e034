// Buffer lifetimes over a program's steps, shared by the CPU and CUDA backends: which values
// need arena space, from the step that writes them to the last step that reads them. The
// result goes to plan_memory (memory_plan.h).
#pragma once

#include <vector>

#include "graphfuse/graph.h"
#include "runtime/memory_plan.h"

namespace gf {

// The values one step reads and writes (kNoValue entries are ignored).
struct StepBuffers {
  std::vector<ValueId> reads;
  std::vector<ValueId> writes;
};

struct LifetimeOptions {
  // Graph inputs get arena space live from the first step (a device backend copies them in);
  // otherwise they stay outside the arena, as do constants always.
  bool inputs_in_arena = false;
  // Graph outputs get arena space live to the last step (copied out after it); otherwise they
  // stay outside.
  bool outputs_in_arena = false;
  // Graph inputs in the arena stay live to the last step (their slots are never reused), so
  // that they can be written again for another pass over the steps (a loop in a CUDA graph).
  bool inputs_live_to_end = false;
  // Per value, the value whose storage it shares (a view that aliases its input); empty means
  // every value has its own. Roots must map to themselves.
  std::vector<ValueId> storage_of;
};

struct StepLifetimes {
  std::vector<BufferLifetime> buffers;  // one per arena slot
  std::vector<int> slot_of_value;       // per value: index into buffers, -1 if not in the arena
};

// Throws (internal assertion) when a step reads an arena value before any step writes it.
StepLifetimes step_lifetimes(const Graph& g, const std::vector<StepBuffers>& steps,
                             const LifetimeOptions& options = {});

}  // namespace gf
