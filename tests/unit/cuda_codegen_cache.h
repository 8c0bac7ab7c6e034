// The fixture of the CUDA code generator's unit tests: a cubin cache directory of its own per
// test, removed after it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "codegen/cuda/nvrtc_compiler.h"

namespace gf::testing {

class CudaCodegenCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("gf_test_cuda_codegen_" + std::to_string(getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  codegen::NvrtcOptions options() const {
    codegen::NvrtcOptions o;
    o.cache_dir = dir_;
    return o;
  }
  std::filesystem::path dir_;
};

}  // namespace gf::testing
