// Building and planning cuDNN backend operation graphs: tensors and operations added in dataflow
// order (their descriptors kept alive together), the engine configurations cuDNN's heuristics
// rank for the graph, and the execution plans that build from them. Shared by the fused
// attention (cudnn_sdpa.cpp) and the matmul with a pointwise epilogue (cudnn_matmul.cpp).
#pragma once

#ifdef GF_HAVE_CUDNN

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cudnn_backend.h"

namespace gf::cuda::cudnn_backend {

class OpGraphBuilder {
 public:
  // Intermediates (virtual tensors) take unique ids from `first_virtual_uid` on.
  explicit OpGraphBuilder(int64_t first_virtual_uid) : next_virtual_(first_virtual_uid) {}

  const Descriptor& tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides,
                           cudnnDataType_t type, bool is_virtual, bool by_value = false);
  // A virtual tensor of these dims (f32 unless told), contiguous.
  const Descriptor& virtual_like(const std::vector<int64_t>& dims,
                                 cudnnDataType_t type = CUDNN_DATA_FLOAT);

  // c = a b, accumulated in f32.
  void matmul(const Descriptor& a, const Descriptor& b, const Descriptor& c);
  // y = mode(x, b) (b null for unary modes; t the condition of BINARY_SELECT; axis for
  // GEN_INDEX).
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, const Descriptor& x,
                 const Descriptor* b, const Descriptor& y, const Descriptor* t = nullptr,
                 int64_t axis = -1);
  void reduction(cudnnReduceTensorOp_t mode, const Descriptor& x, const Descriptor& y);

  // The finalized operation graph of every operation added.
  Descriptor finish(cudnnHandle_t handle);

 private:
  void keep(Descriptor d) { others_.push_back(std::move(d)); }
  void keep_op(Descriptor d) { ops_.push_back(std::move(d)); }

  int64_t next_virtual_;
  std::vector<std::unique_ptr<Descriptor>> tensors_;  // stable addresses: ops hold references
  std::vector<Descriptor> others_, ops_;
};

struct EngineInfo {
  int64_t index = -1;         // cuDNN's global engine index
  bool native_graph = false;  // supports cudnnBackendPopulateCudaGraph / UpdateCudaGraph
};

struct BuiltPlan {
  Descriptor plan;
  EngineInfo engine;
  int64_t workspace = 0;  // bytes
};

// The execution plans that build for `graph`, in the order cuDNN's heuristics rank their
// configurations (mode A, then the fallback mode when A gave none), each needing at most
// `max_workspace` bytes: at most `max_plans`, and none after the first for which `enough`
// (when given) holds. Building a plan may compile kernels, so callers ask for few. Empty when
// none builds; `last_error` then says why (cuDNN's last refusal).
std::vector<BuiltPlan> buildable_plans(cudnnHandle_t handle, const Descriptor& graph,
                                       int64_t max_workspace, size_t max_plans,
                                       const std::function<bool(const BuiltPlan&)>& enough,
                                       std::string& last_error);

// A variant pack binding `ptrs` to the tensors of unique ids `uids`, with `workspace`.
Descriptor variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& ptrs,
                        void* workspace);

// Enqueues `plan` with `pack` on `stream`; errors name `what`.
void execute(cudnnHandle_t handle, const Descriptor& plan, const Descriptor& pack,
             cudaStream_t stream, const std::string& what);

// cudnnBackendPopulateCudaGraph (kPopulate: adds the call's nodes to `graph`) or
// cudnnBackendUpdateCudaGraph (kUpdate: re-points them at `pack`'s buffers). Throws
// kUnsupported naming `what` when `engine` lacks cuDNN's native CUDA graph note.
enum class NativeGraphCall { kPopulate, kUpdate };
void native_graph_call(cudnnHandle_t handle, NativeGraphCall call, const Descriptor& plan,
                       const EngineInfo& engine, const Descriptor& pack, cudaGraph_t graph,
                       const std::string& what);

}  // namespace gf::cuda::cudnn_backend

#endif  // GF_HAVE_CUDNN
