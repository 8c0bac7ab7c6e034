// A node run on the host inside a CUDA program: its inputs copied from the device (constants
// read from the graph directly), its reference kernel, its outputs copied back. Correct, not
// fast: each such step waits for the stream twice.
#include "graphfuse/error.h"
#include "runtime/cpu/reference_step.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

void run_host_step(const Graph& g, const CudaProgramState& state, const CudaStep& step) {
  const CudaDriverApi& cu = cuda_driver();
  const Node& n = g.node(step.node);
  state.stream->synchronize(step.label);
  std::vector<Tensor> inputs, outputs;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) {
      inputs.emplace_back();
      continue;
    }
    const Value& val = g.value(v);
    const Value& root = g.value(state.storage_of[static_cast<size_t>(v)]);
    if (root.is_constant()) {  // a weight, or a view of one: same bytes
      inputs.push_back(root.constant.reshaped(val.type.shape.static_dims()));
      continue;
    }
    Tensor t(val.type.dtype, val.type.shape.static_dims());
    if (t.nbytes()) {
      check_cu(cu.cuMemcpyDtoHAsync(t.raw(), state.device_ptr(g, v), t.nbytes(), state.stream->get()),
               "cuMemcpyDtoHAsync (input '" + val.name + "' of " + step.label + ")");
    }
    inputs.push_back(std::move(t));
  }
  state.stream->synchronize(step.label);
  for (ValueId v : n.outputs) outputs.emplace_back(g.value(v).type.dtype, g.value(v).type.shape.static_dims());
  cpu::run_reference_step(g, n, inputs, outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ValueId v = n.outputs[i];
    if (outputs[i].nbytes() == 0 || state.slot_of_value[static_cast<size_t>(v)] < 0) continue;
    check_cu(cu.cuMemcpyHtoDAsync(state.device_ptr(g, v), outputs[i].raw(), outputs[i].nbytes(), state.stream->get()),
             "cuMemcpyHtoDAsync (output '" + g.value(v).name + "' of " + step.label + ")");
  }
  // The host tensors die here: the copies must have read them.
  state.stream->synchronize(step.label);
}

}  // namespace gf::cuda
