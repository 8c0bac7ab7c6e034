// Convolution through cuDNN: one Conv node of static shape (NCHW, 1-D to 3-D; f32, f16 or bf16)
// or NhwcConv node (channels last, 2-D: the layout of cuDNN's 16-bit tensor-core kernels),
// its algorithm chosen once, an explicit workspace so a call can be recorded into a CUDA graph.
// Built only where cuDNN was found (GF_HAVE_CUDNN); elsewhere the constructor refuses with
// kUnsupported and the executor uses another path.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graphfuse/graph.h"

namespace gf::cuda {

// Whether this build has cuDNN.
bool cudnn_available();

// One cuDNN handle per device context; not for concurrent use from several threads.
class CudnnHandle {
 public:
  CudnnHandle();  // throws kUnsupported without cuDNN, kDeviceError when cuDNN fails to start
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  void* get() const { return handle_; }  // a cudnnHandle_t

  // The plan built on this handle for `key` (everything the plan depends on: the operation
  // graph, the engines tried), built by `build` the first time only, so that identical calls,
  // the layers of a model, share one. Kept until the handle goes; a build that throws keeps
  // nothing.
  template <class Plan>
  std::shared_ptr<const Plan> shared_plan(
      const std::string& key, const std::function<std::shared_ptr<const Plan>()>& build) const {
    std::lock_guard lock(plans_mutex_);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, build()).first;
    return std::static_pointer_cast<const Plan>(it->second);
  }
  size_t shared_plans() const {
    std::lock_guard lock(plans_mutex_);
    return plans_.size();
  }

 private:
  void* handle_ = nullptr;
  mutable std::mutex plans_mutex_;
  mutable std::map<std::string, std::shared_ptr<const void>> plans_;
};

class CudnnConv {
 public:
  // `conv` is a Conv or NhwcConv node of `g` with static shapes. Throws kUnsupported naming the
  // node, op and shapes for what cuDNN (or this wrapper) does not take.
  CudnnConv(const CudnnHandle& handle, const Node& conv, const Graph& g, bool allow_tf32);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  size_t workspace_bytes() const;
  // y = conv(x, w) + bias (bias may be null when the node has none); enqueued on `stream`.
  void run(const void* x, const void* w, const void* bias, void* y, void* workspace,
           cudaStream_t stream) const;

 private:
  struct State;
  const CudnnHandle& handle_;
  std::unique_ptr<State> state_;
};

}  // namespace gf::cuda
