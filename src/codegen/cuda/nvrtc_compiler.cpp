// NVRTC runs, and the in-memory and on-disk cubin caches.
//
// On disk, key K is cached as gf_K.cubin: the cubin followed by a 16-byte trailer (its FNV-1a
// hash, then the magic "gfcubin1"), written to a temporary name and renamed into place in one
// step, so another process never reads a half-written file. A file whose trailer does not match
// (truncated, corrupted) is recompiled rather than trusted. The source is kept beside it as
// gf_K.cu: NVRTC's messages name it, and a reader of the cache sees each kernel's code.
#include "codegen/cuda/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "codegen/common/cache_files.h"
#include "codegen/common/compiler_log.h"
#include "codegen/common/hash.h"
#include "codegen/common/parallel_compile.h"
#include "codegen/cpu/jit_compiler.h"
#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/error.h"

namespace gf::codegen {

namespace fs = std::filesystem;

namespace {

constexpr int kLogLinesShown = 12;
constexpr char kTrailerMagic[8] = {'g', 'f', 'c', 'u', 'b', 'i', 'n', '1'};
constexpr size_t kTrailerSize = 16;
constexpr const char* kCacheWhat = "CUDA kernel cache";

std::string with_trailer(const std::string& cubin) {
  std::string bytes = cubin;
  const uint64_t hash = fnv1a64(cubin);
  char trailer[kTrailerSize];
  std::memcpy(trailer, &hash, sizeof hash);
  std::memcpy(trailer + 8, kTrailerMagic, sizeof kTrailerMagic);
  bytes.append(trailer, kTrailerSize);
  return bytes;
}

// The cubin inside a cache file, or nothing when the trailer does not vouch for it.
CubinPtr strip_trailer(const std::string& bytes) {
  if (bytes.size() <= kTrailerSize) return {};
  const size_t n = bytes.size() - kTrailerSize;
  if (std::memcmp(bytes.data() + n + 8, kTrailerMagic, sizeof kTrailerMagic) != 0) return {};
  uint64_t hash = 0;
  std::memcpy(&hash, bytes.data() + n, sizeof hash);
  auto cubin = std::make_shared<std::string>(bytes, 0, n);
  if (fnv1a64(*cubin) != hash) return {};
  return cubin;
}

std::vector<int> supported_archs() {
  int n = 0;
  std::vector<int> archs;
  if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    archs.resize(static_cast<size_t>(n));
    if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) archs.clear();
  }
  return archs;
}

void check_arch(int compute_capability) {
  static const std::vector<int> archs = supported_archs();
  if (std::find(archs.begin(), archs.end(), compute_capability) != archs.end()) return;
  std::string list;
  for (int a : archs) list += (list.empty() ? "" : ", ") + sm_arch_name(a);
  throw Error(ErrorCode::kUnsupported, "NVRTC " + nvrtc_version() + " cannot compile for " +
                                           sm_arch_name(compute_capability) + " (it supports " +
                                           list + ")");
}

// Destroys the program on every path out of run_nvrtc.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) nvrtcDestroyProgram(&program);
  }
};

[[noreturn]] void nvrtc_failed(const char* call, nvrtcResult r, const fs::path& source) {
  throw Error(ErrorCode::kCompileError, std::string("NVRTC: ") + call + " failed (" +
                                            nvrtcGetErrorString(r) + ") for " + source.string());
}

}  // namespace

NvrtcOptions nvrtc_options_from_environment() {
  NvrtcOptions o;
  o.cache_dir = jit_options_from_environment().cache_dir / "cuda";
  return o;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

ArchTarget arch_target_of(const CudaKernelSource& source) {
  return source.arch_specific ? ArchTarget::kSpecific : ArchTarget::kPortable;
}

std::string sm_arch_name(int compute_capability, ArchTarget target) {
  return "sm_" + std::to_string(compute_capability) + (target == ArchTarget::kSpecific ? "a" : "");
}

NvrtcCompiler::NvrtcCompiler(NvrtcOptions options) : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = nvrtc_options_from_environment().cache_dir;
}

uint64_t NvrtcCompiler::cache_key(const std::string& source, int compute_capability,
                                  ArchTarget target) const {
  static const std::string version = nvrtc_version();
  Fnv1a64 h;
  h.add_field(source).add_field(version).add_field(sm_arch_name(compute_capability, target));
  for (const char* flag : kNvrtcFlags) h.add_field(flag);
  return h.value();
}

fs::path NvrtcCompiler::cubin_path(uint64_t key) const {
  return options_.cache_dir / ("gf_" + hex64(key) + ".cubin");
}

CubinPtr NvrtcCompiler::compile(const std::string& source, int compute_capability,
                                ArchTarget target) {
  check_arch(compute_capability);
  const uint64_t key = cache_key(source, compute_capability, target);
  return compiled_.get(key,
                       [&] { return load_or_compile(source, compute_capability, target, key); });
}

CubinPtr NvrtcCompiler::load_or_compile(const std::string& source, int compute_capability,
                                        ArchTarget target, uint64_t key) {
  const fs::path path = cubin_path(key);
  if (options_.use_disk_cache) {
    std::string bytes;
    if (read_whole_file(path, bytes)) {
      if (CubinPtr cached = strip_trailer(bytes)) return cached;
    }
  }
  std::error_code ec;
  fs::create_directories(options_.cache_dir, ec);
  if (ec) {
    throw Error(ErrorCode::kIoError, std::string(kCacheWhat) + ": cannot create " +
                                         options_.cache_dir.string() + ": " + ec.message());
  }
  fs::path source_path = path;
  source_path.replace_extension(".cu");
  write_file_atomically(source_path, source, kCacheWhat);
  auto cubin = std::make_shared<const std::string>(
      run_nvrtc(source, source_path, compute_capability, target));
  write_file_atomically(path, with_trailer(*cubin), kCacheWhat);
  return cubin;
}

std::string NvrtcCompiler::run_nvrtc(const std::string& source, const fs::path& source_path,
                                     int compute_capability, ArchTarget target) {
  ++nvrtc_runs_;
  ProgramGuard guard;
  const std::string name = source_path.filename().string();
  nvrtcResult r =
      nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) nvrtc_failed("nvrtcCreateProgram", r, source_path);
  const std::string arch = "--gpu-architecture=" + sm_arch_name(compute_capability, target);
  std::vector<const char*> flags = {arch.c_str()};
  flags.insert(flags.end(), kNvrtcFlags.begin(), kNvrtcFlags.end());
  const nvrtcResult compiled =
      nvrtcCompileProgram(guard.program, static_cast<int>(flags.size()), flags.data());
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(guard.program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (nvrtcGetProgramLog(guard.program, log.data()) != NVRTC_SUCCESS) log.clear();
      while (!log.empty() && log.back() == '\0') log.pop_back();
    }
    throw Error(ErrorCode::kCompileError, "NVRTC " + nvrtc_version() + " failed (" +
                                              nvrtcGetErrorString(compiled) +
                                              ") on generated source " + source_path.string() +
                                              " for " + sm_arch_name(compute_capability, target) +
                                              ":" + first_error_lines(log, kLogLinesShown));
  }
  size_t size = 0;
  r = nvrtcGetCUBINSize(guard.program, &size);
  if (r != NVRTC_SUCCESS) nvrtc_failed("nvrtcGetCUBINSize", r, source_path);
  std::string cubin(size, '\0');
  r = nvrtcGetCUBIN(guard.program, cubin.data());
  if (r != NVRTC_SUCCESS) nvrtc_failed("nvrtcGetCUBIN", r, source_path);
  if (cubin.empty()) {
    throw Error(ErrorCode::kCompileError, "NVRTC produced no cubin for " + source_path.string() +
                                              " (" + sm_arch_name(compute_capability, target) +
                                              ")");
  }
  return cubin;
}

std::vector<CubinPtr> NvrtcCompiler::compile_all(const std::vector<std::string>& sources,
                                                 int compute_capability,
                                                 const std::vector<ArchTarget>& targets) {
  if (!targets.empty() && targets.size() != sources.size()) {
    throw Error(ErrorCode::kInvalidArgument, "compile_all: " + std::to_string(targets.size()) +
                                                 " targets for " + std::to_string(sources.size()) +
                                                 " sources");
  }
  CompileProgress progress("CUDA kernels", sources.size());
  return compile_in_parallel<CubinPtr>(
      sources.size(),
      [&](size_t i) {
        return compile(sources[i], compute_capability,
                       targets.empty() ? ArchTarget::kPortable : targets[i]);
      },
      &progress);
}

}  // namespace gf::codegen
