// Driver entry points through cudaGetDriverEntryPointByVersion, and CudaModule.
#include "runtime/cuda/cuda_module.h"

#include <cuda_runtime_api.h>

#include "graphfuse/error.h"

namespace gf {

namespace {

struct ResolvedDriver {
  CudaDriverApi api;
  std::string error;  // empty when usable
};

// Asks for each symbol in its CUDA 12.0 form: the prototypes the fields' types come from are
// the classic ones, while asking as of CUDA_VERSION (13.0) would hand back newer variants with
// other signatures (cuCtxSynchronize takes a context from 13.0 on: calling that one with none
// failed on an H200 with CUDA_ERROR_CONTEXT_IS_DESTROYED).
constexpr int kDriverApiVersion = 12000;
// The optional functions' version: cuGraphAddNode here is the form with edge data (_v2), as the
// header declares it.
constexpr int kOptionalApiVersion = 12030;
ResolvedDriver resolve_driver() {
  ResolvedDriver d;
  const auto resolve = [&](const char* symbol, void** fn) {
    if (!d.error.empty()) return;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t err =
        cudaGetDriverEntryPointByVersion(symbol, fn, kDriverApiVersion, cudaEnableDefault, &status);
    if (err != cudaSuccess) {
      d.error = std::string("no usable CUDA driver (") + cudaGetErrorString(err) + ")";
      cudaGetLastError();  // not sticky: leave the runtime clean for its other users
    } else if (status != cudaDriverEntryPointSuccess || *fn == nullptr) {
      d.error = std::string("the CUDA driver lacks ") + symbol +
                (status == cudaDriverEntryPointVersionNotSufficent ? " (driver too old)" : "");
    }
  };
#define GF_CUDA_DRIVER_RESOLVE(name) resolve(#name, reinterpret_cast<void**>(&d.api.name));
  GF_CUDA_DRIVER_FUNCTIONS(GF_CUDA_DRIVER_RESOLVE)
#undef GF_CUDA_DRIVER_RESOLVE
  const auto resolve_optional = [&](const char* symbol, void** fn) {
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    if (!d.error.empty() ||
        cudaGetDriverEntryPointByVersion(symbol, fn, kOptionalApiVersion, cudaEnableDefault,
                                         &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      *fn = nullptr;
      cudaGetLastError();
    }
  };
#define GF_CUDA_DRIVER_RESOLVE_OPTIONAL(name) \
  resolve_optional(#name, reinterpret_cast<void**>(&d.api.name));
  GF_CUDA_DRIVER_OPTIONAL_FUNCTIONS(GF_CUDA_DRIVER_RESOLVE_OPTIONAL)
#undef GF_CUDA_DRIVER_RESOLVE_OPTIONAL
  if (d.error.empty()) {
    const CUresult r = d.api.cuInit(0);
    if (r != CUDA_SUCCESS) {
      const char* name = nullptr;
      if (d.api.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "unknown error";
      d.error = std::string("cuInit failed: ") + name;
    }
  }
  return d;
}

}  // namespace

const CudaDriverApi& cuda_driver() {
  static const ResolvedDriver driver = resolve_driver();
  if (!driver.error.empty()) {
    throw Error(ErrorCode::kDeviceError, "CUDA driver unavailable: " + driver.error);
  }
  return driver.api;
}

void check_cu(CUresult result, const std::string& call) {
  if (result == CUDA_SUCCESS) return;
  const CudaDriverApi& cu = cuda_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name) name = "unknown CUresult";
  if (cu.cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) text = "";
  throw Error(ErrorCode::kDeviceError, call + " failed: " + name + " (" + text + ", code " +
                                           std::to_string(static_cast<int>(result)) + ")");
}

std::unique_ptr<CudaModule> CudaModule::load(const std::string& cubin, const std::string& label) {
  const CudaDriverApi& cu = cuda_driver();
  CUmodule module = nullptr;
  check_cu(cu.cuModuleLoadData(&module, cubin.data()),
           "cuModuleLoadData (module '" + label + "', " + std::to_string(cubin.size()) +
               " bytes)");
  return std::unique_ptr<CudaModule>(new CudaModule(module, label));
}

CudaModule::~CudaModule() {
  // Unload errors (a context already torn down) cannot be reported from a destructor.
  if (module_) cuda_driver().cuModuleUnload(module_);
}

void allow_dynamic_shared_memory(CUfunction fn, uint32_t bytes, const std::string& label) {
  constexpr uint32_t kWithoutOptIn = 48 * 1024;
  if (bytes <= kWithoutOptIn) return;
  check_cu(cuda_driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            static_cast<int>(bytes)),
           "cuFuncSetAttribute (" + label + ", " + std::to_string(bytes) + " bytes of shared memory)");
}

void allow_cluster_blocks(CUfunction fn, uint32_t blocks, const std::string& label) {
  constexpr uint32_t kPortable = 8;
  if (blocks <= kPortable) return;
  check_cu(
      cuda_driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      "cuFuncSetAttribute (" + label + ", clusters of " + std::to_string(blocks) + " blocks)");
}

CUfunction CudaModule::function(const std::string& name) const {
  CUfunction fn = nullptr;
  check_cu(cuda_driver().cuModuleGetFunction(&fn, module_, name.c_str()),
           "cuModuleGetFunction ('" + name + "' in module '" + label_ + "')");
  return fn;
}

}  // namespace gf
