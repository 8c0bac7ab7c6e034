// Choices timed at compile time, kept beside the CUDA kernel cache (runtime/cuda/timed_choices.h):
// a stored value comes back under its key only; a file whose key differs (a hash collision, or
// a file from elsewhere) is not taken. Needs no GPU: only the cache folder is involved.
#ifdef GF_HAVE_CUDA

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "codegen/common/cache_files.h"
#include "codegen/common/hash.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/timed_choices.h"

namespace gf {
namespace {

TEST(TimedChoices, AValueComesBackUnderItsKeyOnly) {
  const codegen::NvrtcOptions& cache = cuda::process_nvrtc().options();
  if (!cache.use_disk_cache) GTEST_SKIP() << "the kernel cache is off";
  // A key of this run alone, so that runs in parallel never meet.
  const std::string key = "unit test key " + std::to_string(std::random_device{}()) + " " +
                          std::to_string(reinterpret_cast<uintptr_t>(&cache));
  EXPECT_FALSE(cuda::stored_choice("unit_test", key).has_value());
  cuda::store_choice("unit_test", key, "3 candidates");
  EXPECT_EQ(cuda::stored_choice("unit_test", key).value_or("none"), "3 candidates");
  EXPECT_FALSE(cuda::stored_choice("unit_test_other", key).has_value());  // another kind

  // The same file holding another key: not taken.
  const std::filesystem::path file =
      cache.cache_dir / ("unit_test_" + codegen::hex64(codegen::fnv1a64(key)) + ".choice");
  ASSERT_TRUE(std::filesystem::exists(file));
  {
    std::ofstream out(file, std::ios::trunc);
    out << "7\n" << key << " but longer";
  }
  EXPECT_FALSE(cuda::stored_choice("unit_test", key).has_value());
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
