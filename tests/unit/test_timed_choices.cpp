// Choices timed at compile time, kept beside the CUDA kernel cache (runtime/cuda/timed_choices.h):
// a stored value comes back under its key only; a file whose key differs (a hash collision, or
// a file from elsewhere) is not taken. Needs no GPU: only the cache folder is involved.
#ifdef GF_HAVE_CUDA

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "codegen/common/cache_files.h"
#include "codegen/common/hash.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "runtime/cuda/cublaslt_heuristic.h"
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

// cuBLASLt's algorithms go to disk as text: every bit comes back, and text that is not what
// encode_algorithms writes is refused (the heuristic is asked again).
TEST(TimedChoices, CublasLtAlgorithmsSurviveTheirTextForm) {
  std::vector<cublasLtMatmulAlgo_t> algorithms(3);
  uint64_t v = 0x0123456789abcdefULL;
  for (cublasLtMatmulAlgo_t& a : algorithms)
    for (uint64_t& word : a.data) word = (v = v * 6364136223846793005ULL + 1442695040888963407ULL);
  algorithms[1].data[0] = 0;
  algorithms[2].data[7] = ~uint64_t{0};
  const std::string text = cuda::encode_algorithms(algorithms);
  EXPECT_EQ(text.size(), 3 * 128 + 2);
  std::vector<cublasLtMatmulAlgo_t> back;
  ASSERT_TRUE(cuda::decode_algorithms(text, back));
  ASSERT_EQ(back.size(), algorithms.size());
  for (size_t i = 0; i < back.size(); ++i)
    for (size_t w = 0; w < 8; ++w)
      EXPECT_EQ(back[i].data[w], algorithms[i].data[w]) << i << " " << w;

  EXPECT_FALSE(cuda::decode_algorithms(text.substr(0, 200), back));   // cut short
  EXPECT_FALSE(cuda::decode_algorithms("x" + text.substr(1), back));  // not hex
  EXPECT_FALSE(cuda::decode_algorithms(text.substr(0, 128) + "," + text.substr(129), back));
  EXPECT_TRUE(cuda::decode_algorithms("", back));
  EXPECT_TRUE(back.empty());
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
