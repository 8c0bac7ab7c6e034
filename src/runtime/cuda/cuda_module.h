// The CUDA driver API as graphfuse uses it, and a loaded kernel module.
//
// The driver's entry points are resolved at run time through the CUDA runtime (linked
// statically), not by linking libcuda: a binary must start on a machine without a driver
// (libcuda.so.1 absent) and only fail, with kDeviceError, when it actually uses the GPU.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gf {

// The functions resolved, as X(name); each field has the type of the header's declaration
// (e.g. cuMemAlloc is cuMemAlloc_v2), and is called as cuda_driver().cuMemAlloc(...).
// clang-format off
#define GF_CUDA_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet) X(cuDeviceGetCount)         \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)            \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData)              \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuMemAlloc) X(cuMemFree)  \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuLaunchKernel) X(cuMemcpyDtoDAsync)      \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime)             \
  X(cuEventDestroy) X(cuFuncSetAttribute) X(cuStreamCreate) X(cuStreamDestroy)              \
  X(cuStreamSynchronize) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuStreamWaitEvent)     \
  X(cuStreamIsCapturing) X(cuMemHostAlloc) X(cuMemFreeHost)                                 \
  X(cuLaunchKernelEx) X(cuTensorMapEncodeTiled) GF_CUDA_DRIVER_GRAPH_FUNCTIONS(X)           \
  GF_CUDA_DRIVER_VIRTUAL_MEMORY_FUNCTIONS(X)

// The graph API (runtime/cuda/kernel_graph.h).
#define GF_CUDA_DRIVER_GRAPH_FUNCTIONS(X)                                                  \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphInstantiateWithFlags) \
  X(cuGraphExecDestroy) X(cuGraphLaunch) X(cuGraphGetNodes) X(cuGraphNodeGetType)         \
  X(cuGraphExecKernelNodeSetParams) X(cuGraphAddChildGraphNode) X(cuGraphAddEmptyNode)        \
  X(cuGraphChildGraphNodeGetGraph) X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeSetParams) \
  X(cuGraphExecChildGraphNodeSetParams) X(cuGraphDestroyNode)

// Virtual memory management (runtime/cuda/session_arena.h).
#define GF_CUDA_DRIVER_VIRTUAL_MEMORY_FUNCTIONS(X)                                       \
  X(cuDeviceTotalMem) X(cuMemGetAllocationGranularity) X(cuMemAddressReserve)            \
  X(cuMemAddressFree) X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap)           \
  X(cuMemSetAccess)
// clang-format on

// Functions of CUDA 12.3 and later (conditional graph nodes, edges with data), asked for in that
// version's form; null where the driver is older, and the features that need them say so.
#define GF_CUDA_DRIVER_OPTIONAL_FUNCTIONS(X) X(cuGraphConditionalHandleCreate) X(cuGraphAddNode)

struct CudaDriverApi {
#define GF_CUDA_DRIVER_FIELD(name) decltype(&::name) name = nullptr;
  GF_CUDA_DRIVER_FUNCTIONS(GF_CUDA_DRIVER_FIELD)
  GF_CUDA_DRIVER_OPTIONAL_FUNCTIONS(GF_CUDA_DRIVER_FIELD)
#undef GF_CUDA_DRIVER_FIELD
};

// The entry points, with cuInit(0) done; resolved once per process. Throws kDeviceError
// ("CUDA driver unavailable: ...") when there is no driver or cuInit fails (no device), every
// time it is called; never crashes.
const CudaDriverApi& cuda_driver();

// Throws kDeviceError "<call> failed: CUDA_ERROR_... (description)" unless `result` is success.
void check_cu(CUresult result, const std::string& call);

// A kernel node's parameters for a 1-D launch of `fn` (every graph node graphfuse adds is one).
inline CUDA_KERNEL_NODE_PARAMS kernel_node_params(CUfunction fn, uint32_t grid, uint32_t block,
                                                  uint32_t shared_bytes, void** params) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = fn;
  p.gridDimX = grid;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = block;
  p.blockDimY = p.blockDimZ = 1;
  p.sharedMemBytes = shared_bytes;
  p.kernelParams = params;
  return p;
}

// Lets `fn` launch with `bytes` of dynamic shared memory: above the 48 KiB every launch may use,
// the kernel must opt in (cuFuncSetAttribute). Throws kDeviceError naming `label` when the
// device has less.
void allow_dynamic_shared_memory(CUfunction fn, uint32_t bytes, const std::string& label);

// Lets `fn`, compiled with __cluster_dims__(blocks, 1, 1), launch: above the portable 8 blocks
// the kernel must opt in. Throws kDeviceError naming `label` when the device refuses.
void allow_cluster_blocks(CUfunction fn, uint32_t blocks, const std::string& label);

// A cubin loaded into the current context; unloaded on destruction, which must happen while
// that context lives. Functions taken from it are valid while it lives.
class CudaModule {
 public:
  // Needs a current context. `label` names the module in errors (a kernel or program name).
  // Throws kDeviceError (no driver or device, no context, an image the device cannot run).
  static std::unique_ptr<CudaModule> load(const std::string& cubin, const std::string& label);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // Throws kDeviceError when the module has no function `name`.
  CUfunction function(const std::string& name) const;
  CUmodule handle() const { return module_; }

 private:
  CudaModule(CUmodule module, std::string label) : module_(module), label_(std::move(label)) {}
  CUmodule module_;
  std::string label_;
};

}  // namespace gf
