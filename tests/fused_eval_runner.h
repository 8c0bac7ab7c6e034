// Runs a graph through the fusion planner and lowering, executing every fused kernel with the
// IR evaluator and everything else (GEMM/attention anchors, views, opaque ops) with the reference
// kernels: the fused path of the CPU backend, minus code generation.
#pragma once

#include "fusion/plan.h"
#include "kernel_ir_eval.h"

namespace gf::testing {

inline std::vector<Tensor> run_fused_with_evaluator(const Graph& g, const std::vector<Tensor>& inputs,
                                                    int* kernels_lowered = nullptr) {
  fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::cpu());
  std::vector<Tensor> env(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(g.inputs()[i])] = inputs[i];
  for (size_t v = 0; v < g.num_values(); ++v)
    if (g.value(static_cast<ValueId>(v)).is_constant()) env[v] = g.value(static_cast<ValueId>(v)).constant;
  auto run_node_ref = [&](NodeId id) {
    const Node& n = g.node(id);
    std::vector<Tensor> args;
    for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : env[static_cast<size_t>(v)]);
    std::vector<Tensor> outs = ref::run_node(n, args);
    for (size_t i = 0; i < n.outputs.size(); ++i) env[static_cast<size_t>(n.outputs[i])] = outs[i];
  };
  int lowered = 0;
  for (const fusion::Group& gr : plan.groups) {
    if (gr.outputs.empty()) continue;  // dead code: nothing reads it
    const bool fused = gr.kind == fusion::GroupKind::kPointwise || gr.kind == fusion::GroupKind::kReduction;
    const bool anchored = gr.kind == fusion::GroupKind::kGemm || gr.kind == fusion::GroupKind::kAttention;
    if (!fused && !anchored) {
      for (NodeId id : gr.nodes) run_node_ref(id);
      continue;
    }
    if (anchored) {
      run_node_ref(gr.anchor);
      if (gr.nodes.size() == 1) continue;
    }
    fusion::FusedKernel k = fusion::lower_group(g, gr, "k" + std::to_string(gr.id));
    ++lowered;
    std::vector<Tensor> buffers;
    for (const fusion::KernelBuffer& b : k.buffers) {
      if (b.is_output) {
        buffers.emplace_back(b.dtype, b.dims);
      } else {
        EXPECT_TRUE(env[static_cast<size_t>(b.value)].defined()) << "kernel input " << b.name << " not computed";
        buffers.push_back(env[static_cast<size_t>(b.value)]);
      }
    }
    KernelIrEvaluator(g, k).run(buffers);
    for (size_t i = 0; i < k.buffers.size(); ++i)
      if (k.buffers[i].is_output) env[static_cast<size_t>(k.buffers[i].value)] = buffers[i];
  }
  if (kernels_lowered) *kernels_lowered = lowered;
  std::vector<Tensor> out;
  for (ValueId v : g.outputs()) out.push_back(env[static_cast<size_t>(v)]);
  return out;
}

}  // namespace gf::testing
