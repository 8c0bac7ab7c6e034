// cuDNN's fused attention (scaled dot-product attention, forward, no softmax statistics) through
// the cuDNN backend API: the operation graph S = scale * Q K^T, an optional causal mask,
// softmax, O = P V, handed to cuDNN's engine heuristics; the first engine that builds a plan
// wins, preferring one that supports cuDNN's native CUDA graph API.
//
// With such an engine, populate() puts the call's nodes into a graph the caller made (and adds
// as one child graph node of its own), and update() re-points those nodes at new buffers, which
// the caller then passes to its instantiated graph (cuGraphExecChildGraphNodeSetParams): one
// level of nesting, updated in place. Any engine can also run() on a stream, which a stream
// capture records.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graphfuse/dtype.h"

namespace gf::cuda {

class CudnnHandle;

// The version of the cuDNN library loaded (cudnnGetVersion), 0 in a build without cuDNN.
size_t cudnn_runtime_version();

// One attention call: Q [batch, q_heads, q_len, head_dim], K and V [batch, kv_heads, kv_len,
// head_dim], O like Q, each laid out by its element strides over those four dims (the last
// must be 1). kv_heads divides q_heads (grouped-query attention).
struct SdpaDims {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  std::array<int64_t, 4> q_strides{}, k_strides{}, v_strides{}, o_strides{};
  DType dtype = DType::kF16;  // of Q, K, V and O: f16 or bf16
  bool causal = false;        // query i sees keys 0..i (top-left aligned, as ONNX's is_causal)
  float scale = 0;            // multiplies Q K^T

  // Contiguous [B, H, S, D] strides for all four.
  static SdpaDims contiguous(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t q_len,
                             int64_t kv_len, int64_t head_dim, DType dtype, bool causal,
                             float scale);
  std::string to_string() const;  // "B=2 Hq=8 Hkv=2 Sq=100 Skv=200 D=128 f16 causal"
};

struct SdpaBuffers {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  void* workspace = nullptr;  // workspace_bytes() of device memory (may be null when 0)
};

class CudnnSdpa {
 public:
  // Builds the operation graph and a plan for `dims`. `what` names the caller's node in errors.
  // Throws kUnsupported naming the node and dims when this build has no cuDNN or cuDNN has no
  // engine for the call; kInvalidArgument for dims that are not an attention call; kDeviceError
  // naming the cuDNN call that failed otherwise.
  CudnnSdpa(const CudnnHandle& handle, const SdpaDims& dims, std::string what);
  ~CudnnSdpa();
  CudnnSdpa(const CudnnSdpa&) = delete;
  CudnnSdpa& operator=(const CudnnSdpa&) = delete;

  const SdpaDims& dims() const;
  size_t workspace_bytes() const;
  // Whether the chosen engine supports populate() and update().
  bool native_graph() const;
  // The chosen engine: "engine 8 (native CUDA graph)", for plans and benchmarks.
  std::string engine() const;

  // Enqueues the call on `stream`.
  void run(const SdpaBuffers& buffers, cudaStream_t stream) const;
  // Adds the call's nodes to `graph`, an empty graph of the caller's. Needs native_graph().
  void populate(const SdpaBuffers& buffers, cudaGraph_t graph) const;
  // Re-points the nodes populate() put in `graph` at `buffers`. Needs native_graph().
  void update(const SdpaBuffers& buffers, cudaGraph_t graph) const;

 private:
  struct State;
  const CudnnHandle& handle_;
  std::unique_ptr<State> state_;
};

}  // namespace gf::cuda
