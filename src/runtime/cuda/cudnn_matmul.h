// A matrix product with a fused pointwise epilogue through cuDNN's backend API: C = act(A B +
// bias), the bias and activation applied in f32 to the product before the one rounding to the
// output type. It takes the exact (erf) GELU, which cuBLASLt's epilogues do not (theirs is the
// tanh approximation), so a Gelu after a GEMM need not be a kernel of its own.
//
// cuDNN's heuristics rank the engines that take the graph; the plans that build are kept as
// candidates (best first by that ranking), one of which is chosen (the first unless choose()
// says otherwise: the caller may time them). Like CudnnSdpa, an engine with cuDNN's native CUDA
// graph note can populate() a caller's graph and update() it in place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graphfuse/dtype.h"

namespace gf::cuda {

class CudnnHandle;

enum class MatmulActivation { kNone, kRelu, kGeluErf, kGeluTanh };
const char* matmul_activation_name(MatmulActivation a);  // "none", "relu", "gelu", "gelu_tanh"

// C [m, n] = act(A [m, k] B + bias [n]), row-major; B is [k, n], or [n, k] with b_transposed
// (a weight laid out for the device, weight_layout.h).
struct CudnnMatmulSpec {
  DType dtype = DType::kF16;  // of A, B, bias and C: f16 or bf16
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = false;
  bool bias = false;
  MatmulActivation activation = MatmulActivation::kNone;
  std::string to_string() const;  // "128x768x3072 f16 B^T bias+gelu"
};

struct CudnnMatmulBuffers {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* bias = nullptr;  // needed when spec.bias
  void* c = nullptr;
  void* workspace = nullptr;  // workspace_bytes() of device memory (may be null when 0)
};

class CudnnMatmul {
 public:
  // At most this many plans are built (each may compile kernels).
  static constexpr size_t kMaxCandidates = 6;

  // Builds the operation graph and the plans of up to `max_candidates` engines. `what` names the
  // caller's node in errors. Throws kUnsupported naming the node and spec when this build has no
  // cuDNN or no engine takes the graph; kInvalidArgument for a spec that is no product;
  // kDeviceError naming the cuDNN call that failed otherwise.
  CudnnMatmul(const CudnnHandle& handle, const CudnnMatmulSpec& spec, std::string what,
              size_t max_candidates = kMaxCandidates);
  ~CudnnMatmul();
  CudnnMatmul(const CudnnMatmul&) = delete;
  CudnnMatmul& operator=(const CudnnMatmul&) = delete;

  const CudnnMatmulSpec& spec() const;
  size_t candidates() const;
  size_t chosen() const;
  void choose(size_t candidate);
  // The chosen candidate's engine: "engine 3 (native CUDA graph)".
  std::string engine() const;
  size_t workspace_bytes() const;  // of the chosen candidate
  bool native_graph() const;       // whether the chosen candidate supports populate()/update()

  void run(const CudnnMatmulBuffers& buffers, cudaStream_t stream) const;
  // Adds the call's nodes to `graph`, an empty graph of the caller's. Needs native_graph().
  void populate(const CudnnMatmulBuffers& buffers, cudaGraph_t graph) const;
  // Re-points the nodes populate() put in `graph` at `buffers`. Needs native_graph().
  void update(const CudnnMatmulBuffers& buffers, cudaGraph_t graph) const;

 private:
  struct State;
  const CudnnHandle& handle_;
  std::unique_ptr<State> state_;
};

}  // namespace gf::cuda
