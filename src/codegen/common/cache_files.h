// File helpers of the on-disk kernel caches: whole-file reads, and writes that other processes
// never see half done (a temporary sibling renamed into place).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gf::codegen {

// False when the file cannot be opened or read.
bool read_whole_file(const std::filesystem::path& path, std::string& out);

// Throws kIoError naming `what` ("CUDA kernel cache") and the path on failure.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes,
                           const std::string& what);

// 16 lowercase hex digits.
std::string hex64(uint64_t v);

}  // namespace gf::codegen
