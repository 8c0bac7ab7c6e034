#include "runtime/step_lifetimes.h"

#include <algorithm>

#include "graphfuse/error.h"

namespace gf {

namespace {

uint64_t value_bytes(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (!val.type.shape.is_static()) {
    throw Error(ErrorCode::kInvalidArgument,
                "a compiled program needs static shapes; value '" + val.name + "' is " +
                    val.type.shape.to_string());
  }
  return static_cast<uint64_t>(checked_numel(val.type.shape.static_dims())) * dtype_size(val.type.dtype);
}

}  // namespace

StepLifetimes step_lifetimes(const Graph& g, const std::vector<StepBuffers>& steps,
                             const LifetimeOptions& options) {
  const size_t n = g.num_values();
  auto root = [&](ValueId v) {
    return options.storage_of.empty() ? v : options.storage_of[static_cast<size_t>(v)];
  };
  std::vector<bool> external(n, false);
  for (size_t v = 0; v < n; ++v)
    if (g.value(static_cast<ValueId>(v)).is_constant()) external[v] = true;
  if (!options.inputs_in_arena)
    for (ValueId v : g.inputs()) external[static_cast<size_t>(root(v))] = true;
  if (!options.outputs_in_arena)
    for (ValueId v : g.outputs()) external[static_cast<size_t>(root(v))] = true;

  StepLifetimes out;
  std::vector<int> slot(n, -1);  // per root
  const int last_step = std::max(0, static_cast<int>(steps.size()) - 1);
  auto touch = [&](ValueId v, int step, bool write) {
    if (v == kNoValue) return;
    const ValueId r = root(v);
    if (external[static_cast<size_t>(r)]) return;
    int& s = slot[static_cast<size_t>(r)];
    if (s < 0) {
      GF_ASSERT(write, "a step reads a value before any step writes it");
      s = static_cast<int>(out.buffers.size());
      out.buffers.push_back({value_bytes(g, r), step, step});
    }
    BufferLifetime& b = out.buffers[static_cast<size_t>(s)];
    b.first_use = std::min(b.first_use, step);
    b.last_use = std::max(b.last_use, step);
  };
  if (options.inputs_in_arena)
    for (ValueId v : g.inputs()) touch(v, 0, true);
  for (int i = 0; i < static_cast<int>(steps.size()); ++i) {
    for (ValueId v : steps[static_cast<size_t>(i)].writes) touch(v, i, true);
    for (ValueId v : steps[static_cast<size_t>(i)].reads) touch(v, i, false);
  }
  if (options.outputs_in_arena)
    for (ValueId v : g.outputs()) touch(v, last_step, true);
  if (options.inputs_in_arena && options.inputs_live_to_end)
    for (ValueId v : g.inputs()) touch(v, last_step, false);

  out.slot_of_value.assign(n, -1);
  for (size_t v = 0; v < n; ++v) {
    const ValueId r = root(static_cast<ValueId>(v));
    out.slot_of_value[v] = slot[static_cast<size_t>(r)];
  }
  return out;
}

}  // namespace gf
