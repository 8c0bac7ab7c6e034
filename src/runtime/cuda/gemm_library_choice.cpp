#include "runtime/cuda/gemm_library_choice.h"

#include <cstdlib>
#include <limits>
#include <vector>

#include "codegen/common/once_per_key.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cudnn_sdpa.h"
#include "runtime/cuda/device_buffer.h"
#include "runtime/cuda/device_timing.h"
#include "runtime/cuda/gemm_tuning.h"
#include "runtime/cuda/timed_choices.h"

namespace gf::cuda {

namespace {

// cuDNN must beat cuBLASLt by this much to replace it (timing noise; cuBLASLt is the default).
constexpr double kRequiredGain = 0.97;

constexpr char kCublasLt[] = "cublaslt";

double flops_of(const CudnnMatmulSpec& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

// Everything the candidates and their times depend on.
std::string key_of(const CudnnMatmulSpec& s, const CublasLtGemm* cublaslt) {
  const CudaContext& ctx = CudaContext::get();
  std::string key = s.to_string();
  if (cublaslt) {
    key += " vs cublasLt " + std::to_string(cublasLtGetVersion()) + " algorithm " +
           std::to_string(cublaslt->chosen()) + " of " + std::to_string(cublaslt->candidates());
  }
  return key + " cudnn " + std::to_string(cudnn_runtime_version()) + " on " + ctx.name() + " cc" +
         std::to_string(ctx.compute_capability()) + " sms " + std::to_string(ctx.sm_count());
}

// Scratch operands of `spec`'s shapes, for timing.
struct Scratch {
  DeviceBuffer a, b, bias, c, workspace;
  Scratch(const CudnnMatmulSpec& s, size_t workspace_bytes, const std::string& what)
      : a(static_cast<size_t>(s.m * s.k) * dtype_size(s.dtype), what),
        b(static_cast<size_t>(s.k * s.n) * dtype_size(s.dtype), what),
        bias(static_cast<size_t>(s.n) * dtype_size(s.dtype), what),
        c(static_cast<size_t>(s.m * s.n) * dtype_size(s.dtype), what),
        workspace(workspace_bytes, what) {
    // Small finite values in both types (0x2c2c: about 0.06 in f16, 2.4e-12 in bf16).
    for (const DeviceBuffer* buffer : {&a, &b, &bias})
      check_cu(cuda_driver().cuMemsetD8(buffer->ptr(), 0x2c, buffer->bytes()),
               "cuMemsetD8 (" + what + ")");
  }
  CudnnMatmulBuffers view() const {
    return {a.address(), b.address(), bias.address(), c.address(), workspace.address()};
  }
};

// "cublaslt", or "cudnn <candidate>" for the fastest of `mm`'s candidates when it beats
// `cublaslt` (or there is no `cublaslt`).
std::string fastest(CudnnMatmul& mm, CublasLtGemm* cublaslt, const std::string& what) {
  size_t workspace = 0;
  for (size_t i = 0; i < mm.candidates(); ++i) {
    mm.choose(i);
    workspace = std::max(workspace, mm.workspace_bytes());
  }
  const Scratch s(mm.spec(), std::max<size_t>(workspace, 256), what);
  double best_us = std::numeric_limits<double>::infinity();
  size_t best = 0;
  std::string refusal;
  for (size_t i = 0; i < mm.candidates(); ++i) {
    mm.choose(i);
    try {
      const double us =
          median_captured_us([&](CUstream stream) { mm.run(s.view(), stream); }, what);
      if (us < best_us) best_us = us, best = i;
    } catch (const Error& e) {
      // A candidate whose plan built but whose run fails (capture refused) is passed over.
      if (e.code() != ErrorCode::kUnsupported && e.code() != ErrorCode::kDeviceError) throw;
      refusal = e.what();
    }
  }
  if (best_us == std::numeric_limits<double>::infinity()) {
    if (cublaslt) return kCublasLt;
    throw Error(ErrorCode::kUnsupported, what + ": no candidate ran (" + refusal + ")");
  }
  if (cublaslt) {
    const DeviceBuffer workspace_lt(kGemmWorkspaceBytes, what);
    const double lt_us = median_captured_us(
        [&](CUstream stream) {
          cublaslt->run(s.a.address(), s.b.address(), s.bias.address(), s.c.address(),
                        workspace_lt.address(), stream);
        },
        what);
    if (best_us >= lt_us * kRequiredGain) return kCublasLt;
  }
  return "cudnn " + std::to_string(best);
}

codegen::OncePerKey<std::string, std::string>& choices() {
  static codegen::OncePerKey<std::string, std::string> c;
  return c;
}

}  // namespace

std::optional<CudnnMatmulSpec> cudnn_matmul_spec(const GemmPlan& plan) {
  const GemmSpec& g = plan.spec;
  if (g.dtype != DType::kF16 && g.dtype != DType::kBF16) return std::nullopt;
  if (plan.calls.size() != 1 || g.batch != 1 || g.trans_a) return std::nullopt;
  if (g.n % 8 != 0 || g.k % 8 != 0) return std::nullopt;
  const GemmCall& call = plan.calls.front();
  if (call.a_offset != 0 || call.b_offset != 0 || call.c_offset != 0) return std::nullopt;
  CudnnMatmulSpec s;
  s.dtype = g.dtype;
  s.m = g.m, s.n = g.n, s.k = g.k;
  s.b_transposed = g.trans_b;
  s.bias = has_bias(g.epilogue);
  switch (activation_of(g.epilogue)) {
    case GemmActivation::kNone:
      s.activation = MatmulActivation::kNone;
      break;
    case GemmActivation::kRelu:
      s.activation = MatmulActivation::kRelu;
      break;
    case GemmActivation::kGeluTanh:
      s.activation = MatmulActivation::kGeluTanh;
      break;
    case GemmActivation::kGeluErf:
      s.activation = MatmulActivation::kGeluErf;
      break;
  }
  return s;
}

std::optional<codegen::TensorCoreGemmSpec> tensor_core_gemm_spec(const GemmPlan& plan,
                                                                 int compute_capability) {
  const GemmSpec& g = plan.spec;
  if (plan.calls.size() != 1 || g.batch != 1 || g.trans_a || !g.trans_b) return std::nullopt;
  const GemmCall& call = plan.calls.front();
  if (call.a_offset != 0 || call.b_offset != 0 || call.c_offset != 0) return std::nullopt;
  codegen::TensorCoreGemmSpec s;
  s.dtype = g.dtype;
  s.m = g.m, s.n = g.n, s.k = g.k;
  s.has_bias = has_bias(g.epilogue);
  switch (activation_of(g.epilogue)) {
    case GemmActivation::kNone:
      s.activation = codegen::TensorCoreGemmActivation::kNone;
      break;
    case GemmActivation::kRelu:
      s.activation = codegen::TensorCoreGemmActivation::kRelu;
      break;
    case GemmActivation::kGeluTanh:
      s.activation = codegen::TensorCoreGemmActivation::kGeluTanh;
      break;
    case GemmActivation::kGeluErf:
      s.activation = codegen::TensorCoreGemmActivation::kGeluErf;
      break;
  }
  if (!codegen::tensor_core_gemm_refusal(s, compute_capability).empty()) return std::nullopt;
  return s;
}

std::unique_ptr<CudnnMatmul> choose_cudnn_matmul(const CudnnHandle& handle,
                                                 const CudnnMatmulSpec& spec,
                                                 CublasLtGemm* cublaslt, const std::string& what) {
  const bool timed = flops_of(spec) >= kGemmTunedMinFlops;
  if (!timed) {
    if (cublaslt) return nullptr;  // too small to matter: cuBLASLt, which it already has
    return std::make_unique<CudnnMatmul>(handle, spec, what, 1);
  }
  const std::string key = key_of(spec, cublaslt);
  std::unique_ptr<CudnnMatmul> built;  // the objects timed, when this call timed them
  const std::string choice = choices().get(key, [&] {
    if (std::optional<std::string> stored = stored_choice("gemm_library", key)) return *stored;
    built = std::make_unique<CudnnMatmul>(handle, spec, what);
    const std::string c = fastest(*built, cublaslt, "timing cuDNN's fused matmul for " + what);
    store_choice("gemm_library", key, c);
    return c;
  });
  if (choice == kCublasLt) return nullptr;
  char* end = nullptr;
  const char* digits = choice.c_str() + std::string_view("cudnn ").size();
  const size_t candidate = choice.rfind("cudnn ", 0) == 0 ? std::strtoull(digits, &end, 10) : 0;
  if (!built) built = std::make_unique<CudnnMatmul>(handle, spec, what, candidate + 1);
  built->choose(std::min(candidate, built->candidates() - 1));
  return built;
}

}  // namespace gf::cuda
