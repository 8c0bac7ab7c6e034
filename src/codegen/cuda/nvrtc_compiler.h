// Run-time compilation of generated CUDA sources with NVRTC into cubins for one GPU
// architecture (no nvcc at build time). Cubins are cached in memory and on disk, keyed by a hash
// of the source, NVRTC's version, the architecture and the flags, so a second start of a model
// compiles nothing. Loading a cubin is the runtime's part (src/runtime/cuda/cuda_module.h).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codegen/common/once_per_key.h"

namespace gf::codegen {

// Fixed for every compile, besides --gpu-architecture=sm_XX. -fmad=false: no fused multiply-add,
// so kernels round like the reference kernels (and the CPU JIT's -ffp-contract=off).
// -default-device: the prelude's helpers need no __device__ of their own.
inline constexpr std::array<const char*, 3> kNvrtcFlags = {"-default-device", "--std=c++17",
                                                           "-fmad=false"};

struct NvrtcOptions {
  std::filesystem::path cache_dir;  // where sources and cubins live
  bool use_disk_cache = true;       // false: never reuse a cubin from disk
};

// cache_dir: the CPU JIT's cache directory (jit_options_from_environment) plus "/cuda".
NvrtcOptions nvrtc_options_from_environment();

// NVRTC's version, "13.0".
std::string nvrtc_version();

// Which instruction set a source is compiled for: the portable one of its compute capability,
// or the architecture-specific one (sm_90a), whose extra instructions (wgmma, setmaxnreg) run on
// that architecture only. A source that uses them says so (CudaKernelSource::arch_specific).
enum class ArchTarget { kPortable, kSpecific };

struct CudaKernelSource;
// The target an emitted source asks for (CudaKernelSource::arch_specific).
ArchTarget arch_target_of(const CudaKernelSource& source);

// A compute capability as NVRTC names it: 90 -> "sm_90", or "sm_90a" for kSpecific.
std::string sm_arch_name(int compute_capability, ArchTarget target = ArchTarget::kPortable);

using CubinPtr = std::shared_ptr<const std::string>;  // the cubin's bytes

// Thread-safe. Concurrent compiles of the same source share one NVRTC run.
class NvrtcCompiler {
 public:
  explicit NvrtcCompiler(NvrtcOptions options = nvrtc_options_from_environment());

  // `compute_capability`: major * 10 + minor (90 for an H100/H200). Throws kCompileError with
  // the first lines of NVRTC's log and the kept source's path, kUnsupported for an
  // architecture this NVRTC cannot target, kIoError when the cache cannot be written.
  CubinPtr compile(const std::string& source, int compute_capability,
                   ArchTarget target = ArchTarget::kPortable);
  // Compiles in parallel (at most hardware_concurrency threads); results in the order of
  // `sources`. `targets`: one per source, or empty for all portable. Rethrows the first failure
  // after every compile has finished.
  std::vector<CubinPtr> compile_all(const std::vector<std::string>& sources, int compute_capability,
                                    const std::vector<ArchTarget>& targets = {});

  uint64_t cache_key(const std::string& source, int compute_capability,
                     ArchTarget target = ArchTarget::kPortable) const;
  // How many times this object ran NVRTC (for tests of the cache).
  int nvrtc_runs() const { return nvrtc_runs_.load(); }
  const NvrtcOptions& options() const { return options_; }
  // Where `key`'s cubin is (or would be) kept.
  std::filesystem::path cubin_path(uint64_t key) const;

 private:
  CubinPtr load_or_compile(const std::string& source, int compute_capability, ArchTarget target,
                           uint64_t key);
  std::string run_nvrtc(const std::string& source, const std::filesystem::path& source_path,
                        int compute_capability, ArchTarget target);

  NvrtcOptions options_;
  OncePerKey<uint64_t, CubinPtr> compiled_;  // in memory, by cache key
  std::atomic<int> nvrtc_runs_{0};
};

}  // namespace gf::codegen
