// The CPU JIT: generated C++ source -> shared object (system compiler) -> dlopen()ed library.
// Compiled libraries are cached in memory and on disk, keyed by a hash of the source, the
// compiler's version line and the flags, so a second start of a model compiles nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/common/once_per_key.h"

namespace gf::codegen {

// Fixed for every compile. -ffp-contract=off: no fused multiply-add, so generated kernels round
// like the reference kernels (which are built without FMA). -fno-trapping-math: values are
// unchanged, but the compiler may compute both arms of a select, which is what lets loops over
// the branch-free math of cpu_math.h vectorise.
inline constexpr const char* kCpuJitFlags =
    "-O3 -march=native -fopenmp -shared -fPIC -std=c++17 -ffp-contract=off -fno-trapping-math";

struct JitOptions {
  std::string compiler = "c++";     // a command on PATH or a path
  std::filesystem::path cache_dir;  // where sources and .so files live
  bool use_disk_cache = true;       // false: compile in cache_dir but never reuse from disk
};

// Default options: cache_dir from $XDG_CACHE_HOME/graphfuse, else ~/.cache/graphfuse, else a
// directory under the system temp dir. The one place the JIT reads the environment.
JitOptions jit_options_from_environment();

// A loaded shared object; dlclose()s on destruction, so function pointers taken from it are
// valid while it lives.
class JitLibrary {
 public:
  JitLibrary(void* handle, std::filesystem::path path) : handle_(handle), path_(std::move(path)) {}
  ~JitLibrary();
  JitLibrary(const JitLibrary&) = delete;
  JitLibrary& operator=(const JitLibrary&) = delete;

  // The address of `name`; throws kCompileError when the library does not define it.
  void* symbol(const std::string& name) const;
  // The generated kernel entry point: void name(void* const* buffers).
  using KernelFn = void (*)(void* const*);
  KernelFn kernel(const std::string& name) const {
    return reinterpret_cast<KernelFn>(symbol(name));
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  void* handle_;
  std::filesystem::path path_;
};

using JitLibraryPtr = std::shared_ptr<const JitLibrary>;

// Thread-safe. Concurrent compiles of the same source share one compiler run.
class JitCompiler {
 public:
  explicit JitCompiler(JitOptions options = jit_options_from_environment());

  // Throws kCompileError with the compiler's first error lines and the kept source's path,
  // kIoError when the cache directory cannot be written.
  JitLibraryPtr compile(const std::string& source);
  // Compiles several sources in parallel (at most hardware_concurrency threads); results in
  // the order of `sources`. Rethrows the first failure after every compile has finished.
  std::vector<JitLibraryPtr> compile_all(const std::vector<std::string>& sources);

  // The cache key of `source`: a hash of it, the compiler's version line and kCpuJitFlags.
  uint64_t cache_key(const std::string& source);
  // How many times this object ran the compiler on a source (for tests of the cache).
  int compiler_runs() const { return compiler_runs_.load(); }
  const JitOptions& options() const { return options_; }

 private:
  const std::string& compiler_version();
  JitLibraryPtr load_or_compile(const std::string& source, uint64_t key);
  JitLibraryPtr try_load_cached(const std::filesystem::path& so_path);
  void run_compiler(const std::filesystem::path& src, const std::filesystem::path& out);

  JitOptions options_;
  std::once_flag version_once_;
  std::string version_;
  OncePerKey<uint64_t, JitLibraryPtr> compiled_;  // in memory, by cache key
  std::atomic<int> compiler_runs_{0};
};

}  // namespace gf::codegen
