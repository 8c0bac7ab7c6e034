// File helpers of the on-disk kernel caches.
#include "codegen/common/cache_files.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "graphfuse/error.h"

namespace gf::codegen {

namespace fs = std::filesystem;

bool read_whole_file(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return false;
  out = ss.str();
  return true;
}

void write_file_atomically(const fs::path& path, const std::string& bytes,
                           const std::string& what) {
  // Unique per process and call, so concurrent writers of the same key never share a file.
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp =
      path.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(++counter);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(ErrorCode::kIoError, what + ": cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::kIoError, what + ": cannot rename into " + path.string());
  }
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace gf::codegen
