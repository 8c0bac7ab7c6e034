// GEMM through cuBLASLt: row-major operands (as graphs store them), an optional batch, bias and
// activation epilogues, the algorithm chosen once per shape among the candidates of cuBLASLt's
// heuristic (its first, or the fastest where gemm_tuning.h times them), and an explicit
// workspace so a call can be recorded into a CUDA graph.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graphfuse/dtype.h"

namespace gf::cuda {

// cuBLASLt's recommended workspace on Hopper.
inline constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

// Fails with kDeviceError naming the call when a cuBLAS status is not success.
void check_cublas(cublasStatus_t status, const char* call);

class CublasLtHandle {
 public:
  CublasLtHandle();
  ~CublasLtHandle();
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

// cuBLASLt's GELU is the tanh approximation; the exact (erf) GELU epilogues are cuDNN's fused
// matmul's only (cudnn_matmul.h), which CublasLtGemm refuses with kUnsupported.
enum class GemmEpilogue {
  kNone,
  kBias,
  kRelu,
  kBiasRelu,
  kGeluTanh,
  kBiasGeluTanh,
  kGeluErf,
  kBiasGeluErf
};
enum class GemmActivation { kNone, kRelu, kGeluTanh, kGeluErf };

// The epilogue that adds the bias row (when `bias`) and then applies `activation`.
GemmEpilogue gemm_epilogue(bool bias, GemmActivation activation);
bool has_bias(GemmEpilogue epilogue);
GemmActivation activation_of(GemmEpilogue epilogue);
// "bias", "relu", "bias+gelu_tanh", ...; "none" for kNone.
const char* gemm_epilogue_name(GemmEpilogue epilogue);

// C[b] (m x n) = op(A[b]) (m x k) * op(B[b]) (k x n), all row-major; A is [batch, m, k] (or
// [batch, k, m] with trans_a), B likewise; B may be one matrix shared by every batch entry.
// The bias (n values, the output features) is added to every row of every batch entry; the
// activation is applied after it, in f32, before the one rounding to `dtype`.
struct GemmSpec {
  DType dtype = DType::kF32;  // of A, B, C and bias: f32, f16 or bf16
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false;
  bool trans_b = false;
  bool shared_b = false;  // B is one [k, n] matrix for every batch entry
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  bool allow_tf32 = false;  // f32 inputs on the tensor cores in TF32
  std::string to_string() const;
};

class CublasLtGemm {
 public:
  // Builds the descriptors and asks the heuristic for an algorithm that fits `workspace_bytes`;
  // throws kUnsupported (naming the shape) when there is none.
  CublasLtGemm(const CublasLtHandle& handle, const GemmSpec& spec, size_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Enqueues the product on `stream`. `bias` is read only by bias epilogues. Not for concurrent
  // use on one object: the bias pointer is set on the descriptor.
  void run(const void* a, const void* b, const void* bias, void* c, void* workspace,
           cudaStream_t stream);
  const GemmSpec& spec() const { return spec_; }

  // The algorithms the heuristic offered for this shape (at most kMaxCandidates, best first by
  // its estimate; then any add_enumerated_candidates() added) and the one run() uses: the first,
  // until choose() picks another (gemm_tuning.h times them).
  static constexpr size_t kMaxCandidates = 8;
  size_t candidates() const { return candidates_.size(); }
  size_t chosen() const { return chosen_; }
  void choose(size_t candidate);
  // Adds the enumerated configurations (cublaslt_heuristic.h) after the heuristic's candidates,
  // at most `limit` of them; returns how many.
  size_t add_enumerated_candidates(size_t limit);
  // Candidate `i`'s algorithm id and configuration, as text ("algo 21 tile 20 stages 8 ...").
  std::string candidate_config(size_t candidate) const;

 private:
  void release();

  const CublasLtHandle& handle_;
  GemmSpec spec_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::vector<cublasLtMatmulAlgo_t> candidates_;
  size_t chosen_ = 0;
};

}  // namespace gf::cuda
