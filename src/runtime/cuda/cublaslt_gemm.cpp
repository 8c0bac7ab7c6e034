#include "runtime/cuda/cublaslt_gemm.h"

#include "graphfuse/error.h"
#include "runtime/cuda/cublaslt_heuristic.h"

namespace gf::cuda {

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Error(ErrorCode::kDeviceError,
                std::string(call) + " failed: " + cublasLtGetStatusString(status));
  }
}

CublasLtHandle::CublasLtHandle() {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
}
CublasLtHandle::~CublasLtHandle() {
  if (handle_) cublasLtDestroy(handle_);
}

GemmEpilogue gemm_epilogue(bool bias, GemmActivation activation) {
  switch (activation) {
    case GemmActivation::kNone:
      return bias ? GemmEpilogue::kBias : GemmEpilogue::kNone;
    case GemmActivation::kRelu:
      return bias ? GemmEpilogue::kBiasRelu : GemmEpilogue::kRelu;
    case GemmActivation::kGeluTanh:
      return bias ? GemmEpilogue::kBiasGeluTanh : GemmEpilogue::kGeluTanh;
    case GemmActivation::kGeluErf:
      return bias ? GemmEpilogue::kBiasGeluErf : GemmEpilogue::kGeluErf;
  }
  return GemmEpilogue::kNone;
}

GemmActivation activation_of(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone:
    case GemmEpilogue::kBias:
      return GemmActivation::kNone;
    case GemmEpilogue::kRelu:
    case GemmEpilogue::kBiasRelu:
      return GemmActivation::kRelu;
    case GemmEpilogue::kGeluTanh:
    case GemmEpilogue::kBiasGeluTanh:
      return GemmActivation::kGeluTanh;
    case GemmEpilogue::kGeluErf:
    case GemmEpilogue::kBiasGeluErf:
      return GemmActivation::kGeluErf;
  }
  return GemmActivation::kNone;
}

bool has_bias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias || epilogue == GemmEpilogue::kBiasRelu ||
         epilogue == GemmEpilogue::kBiasGeluTanh || epilogue == GemmEpilogue::kBiasGeluErf;
}

const char* gemm_epilogue_name(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone:
      return "none";
    case GemmEpilogue::kBias:
      return "bias";
    case GemmEpilogue::kRelu:
      return "relu";
    case GemmEpilogue::kBiasRelu:
      return "bias+relu";
    case GemmEpilogue::kGeluTanh:
      return "gelu_tanh";
    case GemmEpilogue::kBiasGeluTanh:
      return "bias+gelu_tanh";
    case GemmEpilogue::kGeluErf:
      return "gelu";
    case GemmEpilogue::kBiasGeluErf:
      return "bias+gelu";
  }
  return "?";
}

std::string GemmSpec::to_string() const {
  return std::string(dtype_name(dtype)) + " batch " + std::to_string(batch) + " m " +
         std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
         (trans_a ? " A^T" : "") + (trans_b ? " B^T" : "") +
         (epilogue == GemmEpilogue::kNone
              ? ""
              : std::string(" epilogue ") + gemm_epilogue_name(epilogue));
}

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      throw Error(ErrorCode::kUnsupported, "cuBLASLt GEMM: dtype " + std::string(dtype_name(t)) +
                                               " is not f32, f16 or bf16");
  }
}

cublasLtEpilogue_t lt_epilogue(GemmEpilogue e) {
  switch (e) {
    case GemmEpilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::kBiasRelu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::kGeluTanh:
      return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::kBiasGeluTanh:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case GemmEpilogue::kGeluErf:
    case GemmEpilogue::kBiasGeluErf:
      throw Error(ErrorCode::kUnsupported,
                  std::string("cuBLASLt GEMM: no exact (erf) GELU epilogue (") +
                      gemm_epilogue_name(e) + "; cuBLASLt's GELU is the tanh approximation)");
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  check_cublas(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
               "cublasLtMatmulDescSetAttribute");
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t batch_stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows),
                                          static_cast<uint64_t>(cols), ld),
               "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    check_cublas(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &count, sizeof(count)),
                 "cublasLtMatrixLayoutSetAttribute");
    check_cublas(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                         &batch_stride, sizeof(batch_stride)),
        "cublasLtMatrixLayoutSetAttribute");
  }
  return layout;
}

}  // namespace

CublasLtGemm::CublasLtGemm(const CublasLtHandle& handle, const GemmSpec& spec,
                           size_t workspace_bytes)
    : handle_(handle), spec_(spec), workspace_bytes_(workspace_bytes) {
  if (spec.m <= 0 || spec.n <= 0 || spec.k <= 0 || spec.batch <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "cuBLASLt GEMM: empty shape " + spec.to_string());
  }
  const cudaDataType_t type = cuda_type(spec.dtype);
  const cublasComputeType_t compute = spec.dtype == DType::kF32 && spec.allow_tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  try {
    check_cublas(cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's "A" is our B and its "B" our
    // A, and the bias then runs along cuBLASLt's rows, which are our output features.
    const cublasOperation_t op_a = spec.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = spec.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
    // The bias's batch stride stays at its default 0: one row for every batch entry, as an
    // [N] bias broadcasts over a batched product.
    set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(spec.epilogue));
    const int64_t m = spec.m, n = spec.n, k = spec.k;
    // Our B ([k, n], or [n, k] transposed) seen column-major; a shared B has batch stride 0.
    const int64_t b_stride = spec.shared_b ? 0 : n * k;
    a_layout_ = spec.trans_b ? make_layout(type, k, n, k, spec.batch, b_stride)
                             : make_layout(type, n, k, n, spec.batch, b_stride);
    // Our A ([m, k], or [k, m] transposed) seen column-major.
    b_layout_ = spec.trans_a ? make_layout(type, m, k, m, spec.batch, m * k)
                             : make_layout(type, k, m, k, spec.batch, m * k);
    c_layout_ = make_layout(type, n, m, n, spec.batch, m * n);

    candidates_ = heuristic_candidates(handle_, spec_, {desc_, a_layout_, b_layout_, c_layout_},
                                       workspace_bytes_, kMaxCandidates);
    if (candidates_.empty()) {
      throw Error(ErrorCode::kUnsupported,
                  "cuBLASLt has no algorithm for GEMM " + spec.to_string());
    }
    algo_ = candidates_.front();
  } catch (...) {
    release();  // a throwing constructor runs no destructor
    throw;
  }
}

CublasLtGemm::~CublasLtGemm() {
  release();
}

void CublasLtGemm::choose(size_t candidate) {
  GF_ASSERT(candidate < candidates_.size(), "cuBLASLt GEMM: no such candidate algorithm");
  algo_ = candidates_[candidate];
  chosen_ = candidate;
}

size_t CublasLtGemm::add_enumerated_candidates(size_t limit) {
  const std::vector<cublasLtMatmulAlgo_t> more = enumerated_candidates(
      handle_, {desc_, a_layout_, b_layout_, c_layout_}, candidates_, workspace_bytes_, limit);
  candidates_.insert(candidates_.end(), more.begin(), more.end());
  return more.size();
}

std::string CublasLtGemm::candidate_config(size_t candidate) const {
  GF_ASSERT(candidate < candidates_.size(), "cuBLASLt GEMM: no such candidate algorithm");
  const cublasLtMatmulAlgo_t& algo = candidates_[candidate];
  const auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
    uint32_t v = 0;  // every attribute read here is 32 bits wide
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
    return std::to_string(v);
  };
  return "algo " + get(CUBLASLT_ALGO_CONFIG_ID) + " tile " + get(CUBLASLT_ALGO_CONFIG_TILE_ID) +
         " stages " + get(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " splitk " +
         get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM) + " swizzle " +
         get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) + " custom " +
         get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION) + " cluster " +
         get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
}

void CublasLtGemm::release() {
  if (c_layout_) cublasLtMatrixLayoutDestroy(c_layout_);
  if (b_layout_) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_) cublasLtMatrixLayoutDestroy(a_layout_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  c_layout_ = b_layout_ = a_layout_ = nullptr;
  desc_ = nullptr;
}

void CublasLtGemm::run(const void* a, const void* b, const void* bias, void* c, void* workspace,
                       cudaStream_t stream) {
  if (has_bias(spec_.epilogue)) {
    if (bias == nullptr)
      throw Error(ErrorCode::kInvalidArgument, "cuBLASLt GEMM: the bias epilogue needs a bias");
    set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  const float alpha = 1.0f, beta = 0.0f;
  check_cublas(cublasLtMatmul(handle_.get(), desc_, &alpha, b, a_layout_, a, b_layout_, &beta, c,
                              c_layout_, c, c_layout_, &algo_, workspace, workspace_bytes_, stream),
               "cublasLtMatmul");
}

}  // namespace gf::cuda
