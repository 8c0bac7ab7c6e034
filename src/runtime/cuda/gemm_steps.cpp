#include "runtime/cuda/gemm_steps.h"

#include <memory>
#include <optional>

#include "codegen/cuda/tensor_core_gemm.h"
#include "runtime/cuda/gemm_library_choice.h"
#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/gemm_tuning.h"
#include "runtime/cuda/step_build_util.h"
#include "runtime/cuda/tensor_core_gemm_maps.h"

namespace gf::cuda {

GemmSteps::GemmSteps(const Graph& g, CudaProgramState& state, CudaProgramStats& stats,
                     GemmLibrary library, int sm_count, int compute_capability)
    : g_(g),
      state_(state),
      stats_(stats),
      library_(library),
      sm_count_(sm_count),
      compute_capability_(compute_capability) {}

bool GemmSteps::add_with_epilogue(const fusion::Group& group, std::vector<NodeId>& done) {
  const Op op = g_.node(group.anchor).op;
  if (op != Op::kMatMul && op != Op::kGemm) return false;
  std::string why;
  try {
    // An exact GELU joins the call only through our tensor-core GEMM or cuDNN's fused matmul;
    // kAuto takes ours for it (and cuBLASLt for the rest).
    if (library_ == GemmLibrary::kGenerated || library_ == GemmLibrary::kAuto) {
      GemmWithEpilogue exact = plan_gemm_with_epilogue(g_, group, state_.libraries.allow_tf32,
                                                       /*exact_gelu=*/true);
      const bool wanted = library_ == GemmLibrary::kGenerated ||
                          activation_of(exact.plan.spec.epilogue) == GemmActivation::kGeluErf;
      if (wanted && add_tensor_core_gemm_step(exact.plan, exact.nodes)) {
        done = std::move(exact.nodes);
        return true;
      }
    }
    if (library_ == GemmLibrary::kCudnn || library_ == GemmLibrary::kTimed) {
      GemmWithEpilogue exact = plan_gemm_with_epilogue(g_, group, state_.libraries.allow_tf32,
                                                       /*exact_gelu=*/true);
      if (activation_of(exact.plan.spec.epilogue) == GemmActivation::kGeluErf &&
          add_cudnn_gemm_step(exact.plan, exact.nodes, nullptr)) {
        done = std::move(exact.nodes);
        return true;
      }
    }
    GemmWithEpilogue fused = plan_gemm_with_epilogue(g_, group, state_.libraries.allow_tf32);
    if (add_gemm_step(fused.plan, fused.nodes, why)) {
      done = std::move(fused.nodes);
      return true;
    }
    if (fused.nodes.size() == 1) return false;
  } catch (const Error& e) {
    if (!is_unsupported(e)) throw;
    return false;  // the builder takes the anchor node by node and says why
  }
  return add_node(group.anchor, why);
}

bool GemmSteps::add_node(NodeId id, std::string& why) {
  try {
    return add_gemm_step(plan_gemm(g_, g_.node(id), state_.libraries.allow_tf32), {id}, why);
  } catch (const Error& e) {
    if (!is_unsupported(e)) throw;
    why = e.what();
    return false;
  }
}

bool GemmSteps::add_gemm_step(GemmPlan plan, const std::vector<NodeId>& nodes, std::string& why) {
  if (library_ == GemmLibrary::kGenerated && add_tensor_core_gemm_step(plan, nodes)) return true;
  const ScopeClock clock(stats_.compile_seconds.libraries);
  if (library_ == GemmLibrary::kCudnn && add_cudnn_gemm_step(plan, nodes, nullptr)) return true;
  CudaLibraries& lib = state_.libraries;
  const Node& product = g_.node(nodes.front());
  try {
    if (!lib.cublaslt) lib.cublaslt = std::make_unique<CublasLtHandle>();
    CudaStep s;
    s.kind = CudaStep::Kind::kGemm;
    s.gemm = std::make_unique<CublasLtGemm>(*lib.cublaslt, plan.spec, kGemmWorkspaceBytes);
    if (tune_gemm(*s.gemm, kGemmWorkspaceBytes)) ++stats_.tuned_gemms;
    if (library_ == GemmLibrary::kTimed && add_cudnn_gemm_step(plan, nodes, s.gemm.get()))
      return true;
    s.label = "cuBLASLt GEMM " + plan.spec.to_string() + " for " + describe_node(g_, product);
    if (nodes.size() > 1) s.label += " with its epilogue " + describe_ops(nodes);
    s.gemm_plan = std::move(plan);
    state_.steps.push_back(std::move(s));
    ++stats_.library_calls;
    return true;
  } catch (const Error& e) {
    if (!is_unsupported(e)) throw;
    why = describe_node(g_, product) + ": " + e.what();
    return false;
  }
}

bool GemmSteps::add_tensor_core_gemm_step(const GemmPlan& plan, const std::vector<NodeId>& nodes) {
  const std::optional<codegen::TensorCoreGemmSpec> spec =
      tensor_core_gemm_spec(plan, compute_capability_);
  if (!spec) return false;
  const Node& product = g_.node(nodes.front());
  const std::string name = "gf_gemm_" + std::to_string(nodes.front());
  CudaStep s;
  s.kind = CudaStep::Kind::kKernel;
  s.kernel = codegen::emit_tensor_core_gemm_kernel(*spec, name, sm_count_, compute_capability_);
  s.label = "tensor-core GEMM " + spec->to_string() + " for " + describe_node(g_, product);
  if (nodes.size() > 1) s.label += " with its epilogue " + describe_ops(nodes);
  for (codegen::TensorCoreGemmBuffer role : codegen::tensor_core_gemm_buffers(*spec)) {
    s.buffers.push_back(role == codegen::TensorCoreGemmBuffer::kA      ? plan.a
                        : role == codegen::TensorCoreGemmBuffer::kW    ? plan.b
                        : role == codegen::TensorCoreGemmBuffer::kBias ? plan.bias
                        : role == codegen::TensorCoreGemmBuffer::kC    ? plan.c
                                                                       : kStepPrivateBuffer);
    s.is_output.push_back(role == codegen::TensorCoreGemmBuffer::kC);
  }
  s.private_init = tensor_core_gemm_maps_init(*spec, sm_count_);
  s.private_bytes = s.private_init.size();
  state_.steps.push_back(std::move(s));
  ++stats_.generated_kernels;
  ++stats_.tensor_core_gemm_steps;
  return true;
}

bool GemmSteps::add_cudnn_gemm_step(const GemmPlan& plan, const std::vector<NodeId>& nodes,
                                    CublasLtGemm* cublaslt) {
  CudaLibraries& lib = state_.libraries;
  const std::optional<CudnnMatmulSpec> spec = cudnn_matmul_spec(plan);
  if (!spec || lib.cudnn_refused || !cudnn_available()) return false;
  const Node& product = g_.node(nodes.front());
  try {
    if (!lib.cudnn) lib.cudnn = std::make_unique<CudnnHandle>();
    std::unique_ptr<CudnnMatmul> mm =
        choose_cudnn_matmul(*lib.cudnn, *spec, cublaslt, describe_node(g_, product));
    if (!mm) return false;
    CudaStep s;
    s.kind = CudaStep::Kind::kGemm;
    s.label = "cuDNN fused matmul " + spec->to_string() + " (" + mm->engine() + ") for " +
              describe_node(g_, product);
    if (nodes.size() > 1) s.label += " with its epilogue " + describe_ops(nodes);
    s.cudnn_gemm = std::move(mm);
    s.gemm_plan = plan;
    state_.steps.push_back(std::move(s));
    ++stats_.library_calls;
    ++stats_.cudnn_gemm_steps;
    return true;
  } catch (const Error& e) {
    if (!is_unsupported(e)) throw;
    if (!lib.cudnn) lib.cudnn_refused = true;  // no cuDNN here at all: ask no more
    return false;
  }
}

std::string GemmSteps::describe_ops(const std::vector<NodeId>& nodes) const {
  std::string out;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const Node& n = g_.node(nodes[i]);
    out += (i > 1 ? ", " : "") + std::string(op_name(n.op)) + " (" + n.name + ")";
  }
  return out;
}

}  // namespace gf::cuda
