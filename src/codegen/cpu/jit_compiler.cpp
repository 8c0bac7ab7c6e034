// The CPU JIT: compiler runs, the in-memory and on-disk caches, dlopen.
//
// On disk, key K is cached as gf_K.so plus gf_K.so.fnv (the .so's own FNV-1a hash and size).
// Both are written to temporary names and renamed into place, the checksum first, so another
// process never reads a half-written file; a .so whose checksum does not match (truncated,
// corrupted, or from a racing writer) is recompiled rather than trusted.
#include "codegen/cpu/jit_compiler.h"

#include <dlfcn.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/common/compiler_log.h"
#include "codegen/common/hash.h"
#include "codegen/common/parallel_compile.h"
#include "graphfuse/error.h"

namespace gf::codegen {

namespace fs = std::filesystem;

namespace {

constexpr int kErrorLinesShown = 12;

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` through the shell, stderr merged into the returned output.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool read_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// A unique sibling name for writing `path` before renaming it into place.
fs::path temp_name(const fs::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(++counter);
}

void write_atomically(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = temp_name(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw Error(ErrorCode::kIoError, "JIT cache: cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::kIoError, "JIT cache: cannot rename into " + path.string());
  }
}

std::string checksum_line(const std::string& so_bytes) {
  return hex64(fnv1a64(so_bytes)) + " " + std::to_string(so_bytes.size()) + "\n";
}

fs::path checksum_path(const fs::path& so) {
  return so.string() + ".fnv";
}

void* open_library(const fs::path& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle && error) {
    const char* e = dlerror();
    *error = e ? e : "unknown dlopen error";
  }
  return handle;
}

}  // namespace

JitOptions jit_options_from_environment() {
  JitOptions o;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    o.cache_dir = fs::path(xdg) / "graphfuse";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    o.cache_dir = fs::path(home) / ".cache" / "graphfuse";
  } else {
    o.cache_dir = fs::temp_directory_path() / "graphfuse-cache";
  }
  return o;
}

JitLibrary::~JitLibrary() {
  if (handle_) dlclose(handle_);
}

void* JitLibrary::symbol(const std::string& name) const {
  dlerror();
  void* p = dlsym(handle_, name.c_str());
  if (!p) {
    throw Error(ErrorCode::kCompileError,
                "JIT library " + path_.string() + " does not define '" + name + "'");
  }
  return p;
}

JitCompiler::JitCompiler(JitOptions options) : options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = jit_options_from_environment().cache_dir;
  // Generated kernels use OpenMP. This call makes the process itself depend on the OpenMP
  // runtime (a linker with --as-needed drops an unreferenced one), so the runtime is never
  // unloaded with the last kernel library while its worker threads live: that crashed at exit.
  (void)omp_get_max_threads();
}

const std::string& JitCompiler::compiler_version() {
  std::call_once(version_once_, [&] {
    std::string output;
    const int rc = run_command(shell_quote(options_.compiler) + " --version", output);
    if (rc != 0) {
      throw Error(ErrorCode::kCompileError, "JIT: cannot run the C++ compiler '" +
                                                options_.compiler + "'" +
                                                first_error_lines(output, kErrorLinesShown));
    }
    version_ = output.substr(0, output.find('\n'));
  });
  return version_;
}

uint64_t JitCompiler::cache_key(const std::string& source) {
  return Fnv1a64().add_field(source).add_field(compiler_version()).add_field(kCpuJitFlags).value();
}

JitLibraryPtr JitCompiler::compile(const std::string& source) {
  const uint64_t key = cache_key(source);
  return compiled_.get(key, [&] { return load_or_compile(source, key); });
}

JitLibraryPtr JitCompiler::try_load_cached(const fs::path& so_path) {
  std::string so_bytes, checksum;
  if (!read_file(so_path, so_bytes) || !read_file(checksum_path(so_path), checksum)) return {};
  if (checksum != checksum_line(so_bytes)) return {};
  void* handle = open_library(so_path, nullptr);
  if (!handle) return {};
  return std::make_shared<const JitLibrary>(handle, so_path);
}

void JitCompiler::run_compiler(const fs::path& src, const fs::path& out) {
  ++compiler_runs_;
  const std::string command = shell_quote(options_.compiler) + " " + kCpuJitFlags + " -o " +
                              shell_quote(out.string()) + " " + shell_quote(src.string());
  std::string output;
  const int rc = run_command(command, output);
  if (rc != 0) {
    std::error_code ec;
    fs::remove(out, ec);
    throw Error(ErrorCode::kCompileError, "JIT: '" + options_.compiler + "' failed (exit " +
                                              std::to_string(rc) + ") on generated source " +
                                              src.string() + ":" +
                                              first_error_lines(output, kErrorLinesShown));
  }
}

JitLibraryPtr JitCompiler::load_or_compile(const std::string& source, uint64_t key) {
  std::error_code ec;
  fs::create_directories(options_.cache_dir, ec);
  if (ec) {
    throw Error(ErrorCode::kIoError,
                "JIT cache: cannot create " + options_.cache_dir.string() + ": " + ec.message());
  }
  const std::string stem = "gf_" + hex64(key);
  const fs::path so_path = options_.cache_dir / (stem + ".so");
  if (options_.use_disk_cache) {
    if (JitLibraryPtr cached = try_load_cached(so_path)) return cached;
  }
  // The source keeps a fixed name so the object file (which records it) is the same whichever
  // process compiles it. It stays beside its library after the compile: another process may be
  // compiling the same source at this moment, and a reader of the cache sees each kernel's code.
  const fs::path src_path = options_.cache_dir / (stem + ".cpp");
  write_atomically(src_path, source);
  const fs::path tmp_so = temp_name(so_path);
  run_compiler(src_path, tmp_so);
  std::string so_bytes;
  if (!read_file(tmp_so, so_bytes)) {
    throw Error(ErrorCode::kIoError, "JIT cache: cannot read " + tmp_so.string());
  }
  write_atomically(checksum_path(so_path), checksum_line(so_bytes));
  fs::rename(tmp_so, so_path, ec);
  if (ec) throw Error(ErrorCode::kIoError, "JIT cache: cannot rename into " + so_path.string());
  std::string error;
  void* handle = open_library(so_path, &error);
  if (!handle)
    throw Error(ErrorCode::kCompileError, "JIT: cannot load " + so_path.string() + ": " + error);
  return std::make_shared<const JitLibrary>(handle, so_path);
}

std::vector<JitLibraryPtr> JitCompiler::compile_all(const std::vector<std::string>& sources) {
  CompileProgress progress("CPU kernels", sources.size());
  return compile_in_parallel<JitLibraryPtr>(
      sources.size(), [&](size_t i) { return compile(sources[i]); }, &progress);
}

}  // namespace gf::codegen
