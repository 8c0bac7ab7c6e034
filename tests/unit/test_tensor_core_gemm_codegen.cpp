// The sm_90 tensor-core GEMM without a GPU: every tile and epilogue is emitted and compiled by
// NVRTC for sm_90a; the tile choice, launch shape, buffer order and refusals follow the
// documented rules. Running it against products computed in double is
// tests/gpu/test_tensor_core_gemm.cpp.
#ifdef GF_HAVE_CUDA

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tensor_core_gemm.h"
#include "graphfuse/error.h"
#include "test_util.h"

namespace gf {
namespace {

using codegen::TensorCoreGemmActivation;
using codegen::TensorCoreGemmBuffer;
using codegen::TensorCoreGemmSpec;
using codegen::TensorCoreGemmTile;

TensorCoreGemmSpec product(int64_t m, int64_t n, int64_t k) {
  TensorCoreGemmSpec s;
  s.m = m;
  s.n = n;
  s.k = k;
  return s;
}

TEST(TensorCoreGemmCodegen, EveryTileAndEpilogueCompilesForSm90a) {
  codegen::NvrtcOptions o;
  o.cache_dir =
      std::filesystem::temp_directory_path() / ("gf_test_tc_gemm_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(o);
  std::vector<std::string> sources;
  int i = 0;
  for (const TensorCoreGemmTile& t : codegen::tensor_core_gemm_tiles()) {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      TensorCoreGemmSpec s = product(300, 1000 + 4 * (i % 2), 776);
      s.dtype = dtype;
      s.tile = t;
      s.has_bias = i % 3 != 0;
      s.activation = static_cast<TensorCoreGemmActivation>(i % 4);
      const codegen::CudaKernelSource src =
          codegen::emit_tensor_core_gemm_kernel(s, "gf_tc_" + std::to_string(i++), 132, 90);
      EXPECT_TRUE(src.arch_specific);
      sources.push_back(src.source);
    }
  }
  const std::vector<codegen::ArchTarget> targets(sources.size(), codegen::ArchTarget::kSpecific);
  EXPECT_EQ(compiler.compile_all(sources, 90, targets).size(), sources.size());
  // wgmma is not in the portable sm_90 instruction set: NVRTC must refuse it there.
  EXPECT_THROW(compiler.compile(sources.front(), 90, codegen::ArchTarget::kPortable), Error);
  std::filesystem::remove_all(o.cache_dir);
}

TEST(TensorCoreGemmCodegen, ArchSpecificTargetsHaveTheirOwnNameAndCacheKey) {
  EXPECT_EQ(codegen::sm_arch_name(90), "sm_90");
  EXPECT_EQ(codegen::sm_arch_name(90, codegen::ArchTarget::kSpecific), "sm_90a");
  codegen::NvrtcCompiler compiler;
  EXPECT_NE(compiler.cache_key("x", 90),
            compiler.cache_key("x", 90, codegen::ArchTarget::kSpecific));
}

// The tiles the H200 measurements favour at GPT-2 / BERT shapes (x [m, 768] W [3072, 768]):
// 64 x 64 tiles at 128 rows (96 tiles fill more SMs than any wider one), 128 x 192 at 1024 rows
// (128 tiles: one round), 128 x 256 at 4096 rows.
TEST(TensorCoreGemmCodegen, TileChoiceFollowsRoundsOfWork) {
  EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(product(128, 3072, 768), 132),
            (TensorCoreGemmTile{1, 64, 8}));
  EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(product(1024, 3072, 768), 132),
            (TensorCoreGemmTile{2, 192, 4}));
  EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(product(4096, 3072, 768), 132),
            (TensorCoreGemmTile{2, 256, 3}));
  EXPECT_THROW(codegen::choose_tensor_core_gemm_tile(product(128, 3072, 768), 0), Error);
}

// With bias + GELU (H100 measurements at the same shapes, best tile per m): 128 x 192 at 4096
// rows (42.0 us against 43.4 for 128 x 256, the choice without an epilogue, with the tanh form;
// 44.1 against 45.5 with erf), where the ping-pong tiles took 55.6 and 60.4; 128 x 192 and
// 64 x 64 at 1024 and 128 rows, as without an epilogue.
TEST(TensorCoreGemmCodegen, TileChoiceWithAGeluUsesTheEfficienciesMeasuredWithIt) {
  for (TensorCoreGemmActivation a :
       {TensorCoreGemmActivation::kGeluErf, TensorCoreGemmActivation::kGeluTanh}) {
    TensorCoreGemmSpec s = product(4096, 3072, 768);
    s.has_bias = true;
    s.activation = a;
    EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(s, 132), (TensorCoreGemmTile{2, 192, 4}));
    s.m = 1024;
    EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(s, 132), (TensorCoreGemmTile{2, 192, 4}));
    s.m = 128;
    EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(s, 132), (TensorCoreGemmTile{1, 64, 8}));
  }
  // A bias alone, or with Relu, keeps the weights measured without an epilogue.
  TensorCoreGemmSpec s = product(4096, 3072, 768);
  s.has_bias = true;
  EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(s, 132), (TensorCoreGemmTile{2, 256, 3}));
  s.activation = TensorCoreGemmActivation::kRelu;
  EXPECT_EQ(codegen::choose_tensor_core_gemm_tile(s, 132), (TensorCoreGemmTile{2, 256, 3}));
}

TEST(TensorCoreGemmCodegen, LaunchIsPersistentWithALoaderWarpgroup) {
  TensorCoreGemmSpec s = product(1024, 3072, 768);
  const codegen::CudaKernelSource src = codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90);
  EXPECT_EQ(src.launch.grid, 128u);  // 8 x 16 tiles of 128 x 192, one per SM
  EXPECT_EQ(src.launch.block, 384u);
  // 4 stages of (128 + 192) rows x 128 bytes, 2 x 64 x 192 outputs of 2 bytes, 1 KiB to align.
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 4u * 320 * 128 + 2u * 64 * 192 * 2 + 1024);
  EXPECT_EQ(src.alignment, 16u);
  s = product(64, 64, 64);  // a single tile: one block
  EXPECT_EQ(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90).launch.grid, 1u);
}

// Ping-pong: each consumer stages its whole 128-row tile; the kernel is told so.
TEST(TensorCoreGemmCodegen, PingPongTilesStageWholeTilesPerConsumer) {
  TensorCoreGemmSpec s = product(4096, 3072, 768);
  s.tile = {2, 128, 5, true};
  const codegen::CudaKernelSource src = codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90);
  EXPECT_EQ(src.launch.grid, 132u);
  EXPECT_EQ(src.launch.block, 384u);
  // 5 stages of (128 + 128) rows x 128 bytes, 2 consumers x 128 x 128 outputs of 2 bytes.
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 5u * 256 * 128 + 2u * 128 * 128 * 2 + 1024);
  EXPECT_NE(src.source.find("constexpr bool kPingPong = true;"), std::string::npos);
  EXPECT_NE(s.to_string().find("128x128 ping-pong, 5 stages"), std::string::npos);
  s.tile = {2, 192, 4, true};  // 192 accumulators per thread: not a ping-pong form
  EXPECT_THROW(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90), Error);
  s.tile = {1, 128, 6, true};  // one consumer has no one to take turns with
  EXPECT_THROW(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90), Error);
  s.tile = {2, 128, 6, true};  // 6 stages and two staged tiles: more than 227 KiB
  EXPECT_THROW(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90), Error);
}

TEST(TensorCoreGemmCodegen, BiasComesBetweenWAndC) {
  TensorCoreGemmSpec s = product(64, 64, 64);
  EXPECT_EQ(
      codegen::tensor_core_gemm_buffers(s),
      (std::vector<TensorCoreGemmBuffer>{TensorCoreGemmBuffer::kA, TensorCoreGemmBuffer::kW,
                                         TensorCoreGemmBuffer::kC, TensorCoreGemmBuffer::kMaps}));
  s.has_bias = true;
  EXPECT_EQ(codegen::tensor_core_gemm_buffers(s),
            (std::vector<TensorCoreGemmBuffer>{
                TensorCoreGemmBuffer::kA, TensorCoreGemmBuffer::kW, TensorCoreGemmBuffer::kBias,
                TensorCoreGemmBuffer::kC, TensorCoreGemmBuffer::kMaps}));
}

// The maps follow the tile: A in boxes of the tile's rows, W of its columns; the private buffer
// holds the two templates and, per block of the launch, two maps and their two addresses.
TEST(TensorCoreGemmCodegen, TensorMapsFollowTheTileAndTheGrid) {
  TensorCoreGemmSpec s = product(1024, 3072, 768);  // 128 x 192 tiles, 128 blocks
  const std::array<codegen::TensorCoreGemmMap, 2> maps = codegen::tensor_core_gemm_maps(s, 132);
  EXPECT_EQ(maps[0].rows, 1024);
  EXPECT_EQ(maps[0].k, 768);
  EXPECT_EQ(maps[0].box_rows, 128);
  EXPECT_EQ(maps[1].rows, 3072);
  EXPECT_EQ(maps[1].k, 768);
  EXPECT_EQ(maps[1].box_rows, 192);
  EXPECT_EQ(codegen::tensor_core_gemm_maps_bytes(s, 132), 2 * 128 + 128 * 3 * 128);
  s.tile = {1, 64, 8};  // 16 x 48 tiles: one block per SM
  EXPECT_EQ(codegen::tensor_core_gemm_maps(s, 132)[0].box_rows, 64);
  EXPECT_EQ(codegen::tensor_core_gemm_maps(s, 132)[1].box_rows, 64);
  EXPECT_EQ(codegen::tensor_core_gemm_maps_bytes(s, 132), 2 * 128 + 132 * 3 * 128);
  EXPECT_THROW(codegen::tensor_core_gemm_maps_bytes(s, 0), Error);
}

TEST(TensorCoreGemmCodegen, RefusalsNameTheSpecAndTheReason) {
  TensorCoreGemmSpec s = product(64, 64, 100);
  EXPECT_NE(codegen::tensor_core_gemm_refusal(s, 90).find("multiple of 8"), std::string::npos);
  try {
    codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90);
    FAIL() << "k = 100 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("f16 m=64 n=64 k=100"), std::string::npos) << e.what();
  }
  s.k = 64;
  EXPECT_EQ(codegen::tensor_core_gemm_refusal(s, 90), "");
  EXPECT_NE(codegen::tensor_core_gemm_refusal(s, 80).find("sm_90 only"), std::string::npos);
  EXPECT_NE(codegen::tensor_core_gemm_refusal(s, 100).find("sm_90 only"), std::string::npos);
  s.dtype = DType::kF32;
  EXPECT_NE(codegen::tensor_core_gemm_refusal(s, 90).find("f16 or bf16"), std::string::npos);
  s.dtype = DType::kF16;
  s.tile = {3, 128, 4};
  EXPECT_THROW(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90), Error);
  s.tile = {2, 256, 4};  // 4 stages of 48 KiB and 64 KiB of epilogue: more than 227 KiB
  EXPECT_THROW(codegen::emit_tensor_core_gemm_kernel(s, "k", 132, 90), Error);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
