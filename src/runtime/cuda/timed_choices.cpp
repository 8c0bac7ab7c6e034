#include "runtime/cuda/timed_choices.h"

#include <filesystem>
#include <system_error>

#include "codegen/common/cache_files.h"
#include "codegen/common/hash.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"

namespace gf::cuda {

namespace {

std::filesystem::path choice_path(const std::string& kind, const std::string& key) {
  return process_nvrtc().options().cache_dir /
         (kind + "_" + codegen::hex64(codegen::fnv1a64(key)) + ".choice");
}

}  // namespace

std::optional<std::string> stored_choice(const std::string& kind, const std::string& key) {
  if (!process_nvrtc().options().use_disk_cache) return std::nullopt;
  std::string text;
  if (!codegen::read_whole_file(choice_path(kind, key), text)) return std::nullopt;
  const size_t end = text.find('\n');
  if (end == std::string::npos || text.compare(end + 1, std::string::npos, key) != 0)
    return std::nullopt;
  return text.substr(0, end);
}

void store_choice(const std::string& kind, const std::string& key, const std::string& value) {
  if (!process_nvrtc().options().use_disk_cache) return;
  std::error_code ec;
  std::filesystem::create_directories(process_nvrtc().options().cache_dir, ec);
  try {
    codegen::write_file_atomically(choice_path(kind, key), value + "\n" + key, "CUDA kernel cache");
  } catch (const Error&) {
    // The next process times again.
  }
}

}  // namespace gf::cuda
