// A program's GEMM steps (cuda_program_builder.cpp takes them for GEMM groups and for lone
// MatMul/Gemm nodes): the product, with the head of its epilogue that one call computes
// (plan_gemm_with_epilogue, gemm_plan.h), through cuBLASLt, cuDNN's fused matmul or our
// tensor-core GEMM, as SessionOptions::gemm_library chooses (gemm_library_choice.h).
#pragma once

#include <string>
#include <vector>

#include "fusion/plan.h"
#include "graphfuse/graph.h"
#include "graphfuse/session.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

class GemmSteps {
 public:
  // Steps go to `state`, their counts to `stats`; `sm_count` and `compute_capability` are the
  // device's (which kernels run on it).
  GemmSteps(const Graph& g, CudaProgramState& state, CudaProgramStats& stats, GemmLibrary library,
            int sm_count, int compute_capability);

  // `group`'s MatMul/Gemm anchor with the head of its epilogue in the same step, which then
  // needs no kernel of its own; `done` gets the nodes it computes. Where no path takes that
  // epilogue, the plain product (the epilogue stays in the generated kernel). False when
  // neither is taken.
  bool add_with_epilogue(const fusion::Group& group, std::vector<NodeId>& done);
  // One MatMul/Gemm node, with no epilogue but Gemm's bias row; false with the reason in `why`.
  bool add_node(NodeId id, std::string& why);

 private:
  // The step of `plan`, which computes `nodes` (the product first): our tensor-core GEMM or
  // cuDNN's fused matmul where the library option asks for it (with kTimed, cuDNN where it
  // timed faster), else cuBLASLt; false, with the reason in `why`, when cuBLASLt has no
  // algorithm for it.
  bool add_gemm_step(GemmPlan plan, const std::vector<NodeId>& nodes, std::string& why);
  // Our tensor-core GEMM for `plan` as a kernel step; false where the kernel does not take the
  // plan on this GPU (tensor_core_gemm_spec).
  bool add_tensor_core_gemm_step(const GemmPlan& plan, const std::vector<NodeId>& nodes);
  // cuDNN's fused matmul for `plan`; with `cublaslt` (the same call through cuBLASLt), only
  // where it timed faster. False where cuDNN does not take the plan, is missing, or was slower.
  bool add_cudnn_gemm_step(const GemmPlan& plan, const std::vector<NodeId>& nodes,
                           CublasLtGemm* cublaslt);
  // "Add (name), Gelu (name)": the nodes after the first, for labels.
  std::string describe_ops(const std::vector<NodeId>& nodes) const;

  const Graph& g_;
  CudaProgramState& state_;
  CudaProgramStats& stats_;
  GemmLibrary library_;
  int sm_count_;
  int compute_capability_;
};

}  // namespace gf::cuda
