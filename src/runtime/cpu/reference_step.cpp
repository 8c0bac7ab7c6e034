#include "runtime/cpu/reference_step.h"

#include <cstring>
#include <string_view>

#include "ir/infer.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::cpu {

void run_reference_step(const Graph& g, const Node& n, std::span<const Tensor> inputs,
                        std::span<Tensor> outputs) {
  // Reference kernels may rely on zeroed outputs, as fresh tensors are.
  for (Tensor& t : outputs)
    if (t.nbytes()) std::memset(t.raw(), 0, t.nbytes());
  std::vector<TensorType> types(inputs.size());
  std::vector<const TensorType*> type_ptrs(inputs.size(), nullptr);
  std::vector<const Tensor*> value_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    types[i] = TensorType{inputs[i].dtype(), Shape::from_static(inputs[i].dims())};
    type_ptrs[i] = &types[i];
    value_ptrs[i] = &inputs[i];
  }
  const std::vector<TensorType> checked = infer_node(n, type_ptrs, value_ptrs);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    GF_ASSERT(checked[i] == g.value(n.outputs[i]).type, "run-time shape differs from the plan");
  }
  const ref::KernelArgs kargs{n, inputs, outputs};
  const ref::Kernel k = ref::kernel_table()[static_cast<size_t>(n.op)];
  GF_ASSERT(k != nullptr, "op without a reference kernel");
  try {
    k(kargs);
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("node '")) throw;
    ref::kernel_fail(kargs, e.what(), e.code());
  }
}

}  // namespace gf::cpu
