// The skinny GEMM kernel family without a GPU: every variant is emitted and compiled by NVRTC
// for sm_90; the split and workspace sizes follow the documented rules. Running them against
// the reference is tests/gpu/test_skinny_gemm.cpp.
#ifdef GF_HAVE_CUDA

#include <nvrtc.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/skinny_gemm.h"
#include "test_util.h"

namespace gf {
namespace {

using codegen::SkinnyActivation;
using codegen::SkinnyBuffer;
using codegen::SkinnyGemmSpec;

codegen::NvrtcOptions scratch_cache() {
  codegen::NvrtcOptions o;
  o.cache_dir =
      std::filesystem::temp_directory_path() / ("gf_test_skinny_gemm_" + std::to_string(getpid()));
  return o;
}

// A product of m rows by W of [k, n] elements (stored [n, k] when `w_transposed`); the rest of
// the spec at its defaults.
SkinnyGemmSpec product(DType dtype, int64_t m, int64_t n, int64_t k, bool w_transposed) {
  SkinnyGemmSpec s;
  s.dtype = dtype;
  s.m = m;
  s.n = n;
  s.k = k;
  s.w_transposed = w_transposed;
  return s;
}

// `source` compiled by NVRTC to PTX for compute_90, with the flags every kernel gets.
std::string ptx_for_sm90(const std::string& source) {
  nvrtcProgram program = nullptr;
  EXPECT_EQ(nvrtcCreateProgram(&program, source.c_str(), "skinny.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  std::vector<const char*> flags(codegen::kNvrtcFlags.begin(), codegen::kNvrtcFlags.end());
  flags.push_back("--gpu-architecture=compute_90");
  std::string ptx;
  if (nvrtcCompileProgram(program, static_cast<int>(flags.size()), flags.data()) == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetPTXSize(program, &size);
    ptx.resize(size);
    nvrtcGetPTX(program, ptx.data());
  }
  nvrtcDestroyProgram(&program);
  EXPECT_FALSE(ptx.empty()) << "NVRTC did not compile the kernel to PTX";
  return ptx;
}

TEST(SkinnyGemmCodegen, EveryVariantCompiles) {
  codegen::NvrtcCompiler compiler(scratch_cache());
  std::vector<std::string> sources;
  int i = 0;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool transposed : {false, true}) {
      for (int64_t n : {768, 771}) {             // vector loads, and the scalar path
        for (bool constant_w : {false, true}) {  // W moved before the wait, or read after it
          SkinnyGemmSpec s;
          s.prefetch_weights = constant_w;
          s.constant_epilogue = constant_w;
          s.dtype = dtype;
          s.m = transposed ? 3 : 16;
          s.n = n;
          s.k = 768;
          s.w_transposed = transposed;
          s.has_bias = true;
          s.activation = SkinnyActivation::kGeluTanh;
          s.has_residual = true;
          sources.push_back(
              codegen::emit_skinny_gemm_kernel(s, "gf_skinny_" + std::to_string(i++)).source);
          s.gated = true;
          sources.push_back(
              codegen::emit_skinny_gemm_kernel(s, "gf_skinny_" + std::to_string(i++)).source);
          if (!transposed) continue;
          // With the norm before the product read into the kernel (W [n, k] only).
          s.row_norm = codegen::SkinnyRowNorm::kLayerNorm;
          s.row_norm_bias = constant_w;
          sources.push_back(
              codegen::emit_skinny_gemm_kernel(s, "gf_skinny_" + std::to_string(i++)).source);
          s.gated = false;
          s.row_norm = codegen::SkinnyRowNorm::kRmsNorm;
          s.row_norm_epsilon = 1e-6f;
          sources.push_back(
              codegen::emit_skinny_gemm_kernel(s, "gf_skinny_" + std::to_string(i++)).source);
        }
      }
    }
  }
  EXPECT_NO_THROW(compiler.compile_all(sources, 90));
  std::filesystem::remove_all(compiler.options().cache_dir);
}

// The norm's operands come right after A, and a norm with W [k, n] is refused.
TEST(SkinnyGemmCodegen, RowNormReadsScaleAndBiasAfterAAndNeedsWTransposed) {
  SkinnyGemmSpec s = product(DType::kF16, 2, 64, 96, true);
  s.row_norm = codegen::SkinnyRowNorm::kLayerNorm;
  s.row_norm_bias = true;
  s.has_bias = true;
  const std::vector<SkinnyBuffer> b = codegen::skinny_gemm_buffers(s, 132);
  ASSERT_GE(b.size(), 5u);
  EXPECT_EQ(b[0], SkinnyBuffer::kA);
  EXPECT_EQ(b[1], SkinnyBuffer::kNormScale);
  EXPECT_EQ(b[2], SkinnyBuffer::kNormBias);
  EXPECT_EQ(b[3], SkinnyBuffer::kW);
  s.row_norm = codegen::SkinnyRowNorm::kRmsNorm;  // RMSNorm has no bias
  EXPECT_EQ(codegen::skinny_gemm_buffers(s, 132)[2], SkinnyBuffer::kW);
  s.w_transposed = false;
  EXPECT_THROW(codegen::emit_skinny_gemm_kernel(s, "k", 132), Error);
  s.w_transposed = true;
  s.row_norm_epsilon = -1.0f;
  EXPECT_THROW(codegen::emit_skinny_gemm_kernel(s, "k", 132), Error);
}

TEST(SkinnyGemmCodegen, SplitsKOnlyWhenColumnsAloneLeaveSmsIdle) {
  SkinnyGemmSpec s = product(DType::kF16, 1, 768, 768, false);
  // 768 columns = 96 groups of 8 = 3 tiles; 264 blocks wanted: k is split, and the kernel
  // then needs its counters and partials.
  const uint64_t ws = codegen::skinny_gemm_workspace_bytes(s, 132);
  EXPECT_GT(ws, 256u);
  const codegen::CudaKernelSource src = codegen::emit_skinny_gemm_kernel(s, "k", 132);
  EXPECT_GT(src.launch.grid, 3u * 8);
  EXPECT_EQ(codegen::skinny_gemm_buffers(s, 132).back(), SkinnyBuffer::kWorkspace);
  // Eight rows: the partials' traffic bounds the split harder.
  s.m = 8;
  EXPECT_LT(codegen::skinny_gemm_workspace_bytes(s, 132), ws * 8);
  // W [n, k] on CUDA cores: one warp per column, no split, no workspace. 768 columns in blocks
  // of 8 warps would be 96 blocks for 132 SMs: blocks of 4 (192).
  s.w_transposed = true;
  s.math = codegen::SkinnyMath::kCudaCores;
  EXPECT_EQ(codegen::skinny_gemm_workspace_bytes(s, 132), 0u);
  codegen::CudaKernelSource t = codegen::emit_skinny_gemm_kernel(s, "k", 132);
  EXPECT_EQ(t.launch.grid, 192u);
  EXPECT_EQ(t.launch.block, 128u);
  EXPECT_EQ(codegen::skinny_gemm_buffers(s, 132).back(), SkinnyBuffer::kC);
  s.n = 2304;  // 288 blocks of 8 warps
  t = codegen::emit_skinny_gemm_kernel(s, "k", 132);
  EXPECT_EQ(t.launch.grid, 288u);
  EXPECT_EQ(t.launch.block, 256u);
}

TEST(SkinnyGemmCodegen, ConstantRowsThatFitInRegistersAreLoadedBeforeTheWait) {
  SkinnyGemmSpec s = product(DType::kF16, 1, 768, 3072, true);  // 12 pieces of 16 bytes per lane
  const auto pieces = [&] {
    const std::string src = codegen::emit_skinny_gemm_kernel(s, "k", 132).source;
    const size_t at = src.find("constexpr int kPreloadPieces = ");
    EXPECT_NE(at, std::string::npos);
    return std::atoi(src.c_str() + at + 31);
  };
  EXPECT_EQ(pieces(), 0);  // W may be written by the kernels before: read after the wait
  s.prefetch_weights = true;
  EXPECT_EQ(pieces(), 12);
  s.gated = true;  // W and W_up: 24 pieces, more than the registers allow
  EXPECT_EQ(pieces(), 0);
  s.k = 1536;
  EXPECT_EQ(pieces(), 6);
  s.gated = false;
  s.k = 3076;  // rows not 16-byte aligned: scalar loads after the wait
  EXPECT_EQ(pieces(), 0);
}

// ptxas moves read-only loads (__ldg, ld.global.nc) below griddepcontrol.wait, which would
// leave the weights waiting for the kernel before after all (the GPT-2 step's 48 products at one
// row measured 116 us so, 92 us with coherent loads): what the W [n, k] kernel reads before its
// wait goes through gf_load_before_wait, never __ldg.
TEST(SkinnyGemmCodegen, ReadsBeforeTheWaitAreCoherentLoads) {
  SkinnyGemmSpec s = product(DType::kBF16, 2, 768, 768, true);
  s.math = codegen::SkinnyMath::kCudaCores;
  s.prefetch_weights = true;
  s.constant_epilogue = true;
  s.gated = true;
  s.row_norm = codegen::SkinnyRowNorm::kLayerNorm;
  s.row_norm_bias = true;
  const std::string src = codegen::emit_skinny_gemm_kernel(s, "k", 132).source;
  const size_t kernel = src.find("W is [n, k]: warp w of the grid computes column w.");
  ASSERT_NE(kernel, std::string::npos);
  const size_t wait = src.find("gf_grid_dependency_sync();", kernel);
  ASSERT_NE(wait, std::string::npos);
  const std::string before_wait = src.substr(kernel, wait - kernel);
  EXPECT_NE(before_wait.find("wq[p] = gf_load_before_wait("), std::string::npos);
  EXPECT_NE(before_wait.find("uq[kGated ? p : 0] = gf_load_before_wait("), std::string::npos);
  EXPECT_NE(before_wait.find("sq[kPreloadNorm ? p : 0] = gf_load_before_wait("), std::string::npos);
  EXPECT_EQ(before_wait.find("__ldg"), std::string::npos);
  EXPECT_EQ(before_wait.find("gf_load_vec("), std::string::npos);  // its vector path is __ldg
  // What NVVM makes of it: before the wait, W's, W_up's and the norm's pieces as coherent
  // vector loads and no read-only load at all.
  const std::string ptx = ptx_for_sm90(src);
  const size_t ptx_wait = ptx.find("griddepcontrol.wait");
  ASSERT_NE(ptx_wait, std::string::npos);
  const std::string ptx_before = ptx.substr(0, ptx_wait);
  size_t vector_loads = 0;
  for (size_t at = ptx_before.find("ld.global.v4.u32"); at != std::string::npos;
       at = ptx_before.find("ld.global.v4.u32", at + 1))
    ++vector_loads;
  EXPECT_GE(vector_loads, 4u);  // W, W_up, the scale and the bias, 3 pieces each when unrolled
  EXPECT_EQ(ptx_before.find("ld.global.nc"), std::string::npos);
}

// Where the caller vouches that no binding repoints them, the addresses of A and the residual
// are read before the wait (one L2 round trip fewer after it); otherwise after it, in both
// layouts: gf_bind_in may still be writing them.
TEST(SkinnyGemmCodegen, InputAddressesAreReadBeforeTheWaitOnlyWhenStable) {
  const auto loads_before_wait = [](SkinnyGemmSpec s) {
    const std::string ptx = ptx_for_sm90(codegen::emit_skinny_gemm_kernel(s, "k", 132).source);
    const size_t wait = ptx.find("griddepcontrol.wait");
    EXPECT_NE(wait, std::string::npos);
    const std::string before = ptx.substr(0, wait);
    size_t n = 0;
    for (size_t at = before.find("ld.global.u64"); at != std::string::npos;
         at = before.find("ld.global.u64", at + 1))
      ++n;
    return n;
  };
  for (const bool transposed : {true, false}) {
    SCOPED_TRACE(transposed ? "W [n, k]" : "W [k, n]");
    SkinnyGemmSpec s = product(DType::kF16, 1, 768, 768, transposed);
    s.prefetch_weights = true;
    s.constant_epilogue = true;
    s.has_residual = transposed;  // the W [k, n] kernel reads the residual in its last block
    const size_t late = loads_before_wait(s);
    s.stable_input_addresses = true;
    const std::string src = codegen::emit_skinny_gemm_kernel(s, "k", 132).source;
    EXPECT_NE(src.find("constexpr bool kStableInputAddresses = true;"), std::string::npos);
    EXPECT_EQ(loads_before_wait(s), late + (transposed ? 2u : 1u));  // A (and the residual)
  }
}

// A kernel given the next kernel's weights (next_w_bytes, next_w_up_bytes) takes their
// addresses as its last two buffers and moves them towards L2 before its wait, in every layout;
// without them its buffers and its prefetches are as before.
TEST(SkinnyGemmCodegen, NextKernelsWeightsAreMovedTowardsL2BeforeTheWait) {
  const auto prefetches_before_wait = [](const SkinnyGemmSpec& s) {
    const std::string ptx = ptx_for_sm90(codegen::emit_skinny_gemm_kernel(s, "k", 132).source);
    const std::string before = ptx.substr(0, ptx.find("griddepcontrol.wait"));
    size_t n = 0;
    for (size_t at = before.find("cp.async.bulk.prefetch.L2"); at != std::string::npos;
         at = before.find("cp.async.bulk.prefetch.L2", at + 1))
      ++n;
    return n;
  };
  struct Layout {
    const char* name;
    bool transposed;
    codegen::SkinnyMath math;
  };
  for (const Layout& l :
       {Layout{"W [k, n]", false, codegen::SkinnyMath::kCudaCores},
        Layout{"W [n, k], CUDA cores", true, codegen::SkinnyMath::kCudaCores},
        Layout{"W [n, k], tensor cores", true, codegen::SkinnyMath::kTensorCores}}) {
    SCOPED_TRACE(l.name);
    SkinnyGemmSpec s = product(DType::kF16, 2, 768, 768, l.transposed);
    s.math = l.math;
    s.prefetch_weights = true;
    const std::vector<SkinnyBuffer> plain = codegen::skinny_gemm_buffers(s, 132);
    const size_t plain_prefetches = prefetches_before_wait(s);
    s.next_w_bytes = 3072 * 768 * 2;
    s.next_w_up_bytes = 3072 * 768 * 2;
    std::vector<SkinnyBuffer> want = plain;
    want.push_back(SkinnyBuffer::kNextW);
    want.push_back(SkinnyBuffer::kNextWUp);
    EXPECT_EQ(codegen::skinny_gemm_buffers(s, 132), want);
    EXPECT_EQ(prefetches_before_wait(s), plain_prefetches + 2);
    s.next_w_up_bytes = 0;
    want.pop_back();
    EXPECT_EQ(codegen::skinny_gemm_buffers(s, 132), want);
    EXPECT_EQ(prefetches_before_wait(s), plain_prefetches + 1);
  }
}

// The next kernel's weights go to L2 only where this kernel's own and they are both within
// kSkinnyMaxPrefetchBytes: a larger stream on either side would evict them before their reads.
TEST(SkinnyGemmCodegen, NextWeightsArePrefetchedOnlyWhenBothSidesFitTheBound) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  EXPECT_EQ(codegen::kSkinnyMaxPrefetchBytes, 8 * kMiB);
  EXPECT_TRUE(codegen::skinny_gemm_prefetches_next(4718592, 3538944));      // GPT-2 fc2 -> qkv
  EXPECT_TRUE(codegen::skinny_gemm_prefetches_next(8 * kMiB, 8 * kMiB));    // Llama k -> v
  EXPECT_FALSE(codegen::skinny_gemm_prefetches_next(32 * kMiB, 8 * kMiB));  // Llama q -> k
  EXPECT_FALSE(codegen::skinny_gemm_prefetches_next(8 * kMiB, 8 * kMiB + 1));
  EXPECT_FALSE(codegen::skinny_gemm_prefetches_next(kMiB, 0));  // nothing to move
  SkinnyGemmSpec gated = product(DType::kBF16, 1, 11008, 4096, true);
  gated.gated = true;
  EXPECT_EQ(codegen::skinny_gemm_weight_bytes(gated), uint64_t{2} * 11008 * 4096 * 2);
}

// A LayerNorm's scale and bias join W's pieces before the wait when they are constants and
// all three fit the registers; otherwise they are read beside A.
TEST(SkinnyGemmCodegen, ConstantNormPiecesAreLoadedBeforeTheWaitWhenTheyFit) {
  SkinnyGemmSpec s =
      product(DType::kF16, 1, 2304, 768, true);  // 3 pieces per lane of W, scale, bias
  s.prefetch_weights = true;
  s.row_norm = codegen::SkinnyRowNorm::kLayerNorm;
  s.row_norm_bias = true;
  const auto preloads_norm = [&] {
    const std::string src = codegen::emit_skinny_gemm_kernel(s, "k", 132).source;
    return src.find("constexpr bool kPreloadNorm = true;") != std::string::npos;
  };
  EXPECT_FALSE(preloads_norm());  // the norm's operands may be written by the kernels before
  s.constant_epilogue = true;
  EXPECT_TRUE(preloads_norm());
  s.k = 1536;  // 6 pieces each: 18, more than 12
  EXPECT_FALSE(preloads_norm());
  s.row_norm = codegen::SkinnyRowNorm::kRmsNorm;  // no bias: 12
  s.row_norm_bias = false;
  EXPECT_TRUE(preloads_norm());
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Tensor cores take 16-bit W [n, k] with k a multiple of 8, from two rows on (or when asked):
// a block per 8 columns, clustered where the tiles leave most SMs idle, the cluster's warps
// splitting k in 32-element chunks. No workspace.
TEST(SkinnyGemmCodegen, TensorCoresTakeSixteenBitWeightsStoredNKFromTwoRows) {
  struct Want {
    DType dtype;
    int64_t m, n, k;
    uint32_t grid, block, cluster;
  };
  // 768 x 768: 96 tiles, no cluster, 24 chunks over 8 warps.
  // 2304 x 768: 288 tiles.
  // 5 x 3072: one tile, a cluster of 8, 96 chunks over 64 warps (2 each).
  // 40 x 200: 5 tiles, 7 chunks: clusters of 7 blocks of one warp.
  for (const Want& w :
       {Want{DType::kF16, 8, 768, 768, 96, 256, 1}, Want{DType::kF16, 16, 2304, 768, 288, 256, 1},
        Want{DType::kBF16, 4, 5, 3072, 8, 256, 8}, Want{DType::kF16, 2, 40, 200, 35, 32, 7}}) {
    SkinnyGemmSpec s = product(w.dtype, w.m, w.n, w.k, true);
    SCOPED_TRACE(s.to_string());
    EXPECT_TRUE(codegen::skinny_gemm_uses_tensor_cores(s));
    const codegen::CudaKernelSource src = codegen::emit_skinny_gemm_kernel(s, "k", 132);
    EXPECT_EQ(src.launch.grid, w.grid);
    EXPECT_EQ(src.launch.block, w.block);
    EXPECT_EQ(src.launch.cluster_blocks, w.cluster);
    EXPECT_EQ(codegen::skinny_gemm_workspace_bytes(s, 132), 0u);
  }
  SkinnyGemmSpec s = product(DType::kF16, 1, 768, 768, true);
  EXPECT_FALSE(codegen::skinny_gemm_uses_tensor_cores(s));  // one row: CUDA cores
  s.math = codegen::SkinnyMath::kTensorCores;
  EXPECT_TRUE(codegen::skinny_gemm_uses_tensor_cores(s));
  s.m = 8;
  s.math = codegen::SkinnyMath::kCudaCores;
  EXPECT_FALSE(codegen::skinny_gemm_uses_tensor_cores(s));
  // What they cannot take stays on CUDA cores, and asking for them there is an error.
  for (SkinnyGemmSpec other :
       {product(DType::kF32, 8, 768, 768, true), product(DType::kF16, 8, 768, 1003, true),
        product(DType::kBF16, 8, 768, 768, false)}) {
    EXPECT_FALSE(codegen::skinny_gemm_uses_tensor_cores(other)) << other.to_string();
    EXPECT_NO_THROW(codegen::emit_skinny_gemm_kernel(other, "k", 132));
    other.math = codegen::SkinnyMath::kTensorCores;
    testing::expect_error([&] { codegen::emit_skinny_gemm_kernel(other, "k", 132); },
                          ErrorCode::kUnsupported, {"tensor cores", other.to_string()});
  }
}

// The tensor-core kernel: W's pieces before the wait as coherent loads (constant W only), two
// MMAs per chunk whatever the rows (up to 16), and a cluster in the PTX's entry where it has one.
TEST(SkinnyGemmCodegen, TensorCoreKernelLoadsConstantWeightsBeforeTheWaitAndRunsAsACluster) {
  const auto ptx_of = [](const SkinnyGemmSpec& s) {
    return ptx_for_sm90(codegen::emit_skinny_gemm_kernel(s, "k", 132).source);
  };
  const auto before_wait = [](const std::string& ptx) {
    const size_t wait = ptx.find("griddepcontrol.wait");
    EXPECT_NE(wait, std::string::npos);
    return ptx.substr(0, wait);
  };
  // 768 x 3072 at 8 rows: 96 tiles, 96 chunks over 8 warps, 12 per warp.
  SkinnyGemmSpec s = product(DType::kF16, 8, 768, 3072, true);
  std::string ptx = ptx_of(s);
  EXPECT_EQ(count_of(before_wait(ptx), "ld.global.v4.u32"), 0u);  // W may be written before
  EXPECT_EQ(ptx.find(".reqnctapercluster"), std::string::npos);
  EXPECT_EQ(ptx.find("barrier.cluster"), std::string::npos);
  s.prefetch_weights = true;
  ptx = ptx_of(s);
  EXPECT_EQ(count_of(before_wait(ptx), "ld.global.v4.u32"), 12u);  // a piece per chunk
  EXPECT_EQ(count_of(before_wait(ptx), "ld.global.nc"), 0u);
  EXPECT_EQ(count_of(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 24u);  // unrolled
  s.gated = true;  // W and W_up: 24 pieces, 16 fit: 8 chunks before the wait
  ptx = ptx_of(s);
  EXPECT_EQ(count_of(before_wait(ptx), "ld.global.v4.u32"), 16u);
  s.gated = false;
  s.m = 16;  // A's rows fill the MMA's 16: no more MMAs
  s.dtype = DType::kBF16;
  EXPECT_EQ(count_of(ptx_of(s), "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 24u);
  s.n = 40;  // 5 tiles: clusters of 8
  ptx = ptx_of(s);
  EXPECT_NE(ptx.find(".reqnctapercluster 8, 1, 1"), std::string::npos);
  EXPECT_NE(ptx.find("barrier.cluster"), std::string::npos);
}

TEST(SkinnyGemmCodegen, RefusesWhatItDoesNotTake) {
  SkinnyGemmSpec s;
  s.n = 64;
  s.k = 64;
  s.m = 17;
  testing::expect_error([&] { codegen::emit_skinny_gemm_kernel(s, "k"); }, ErrorCode::kUnsupported,
                        {"f16 m=17 n=64 k=64", "m in 1..16"});
  s.m = 2;
  s.dtype = DType::kI32;
  testing::expect_error([&] { codegen::emit_skinny_gemm_kernel(s, "k"); }, ErrorCode::kUnsupported,
                        {"i32 m=2"});
  s.dtype = DType::kF32;
  testing::expect_error([&] { codegen::emit_skinny_gemm_kernel(s, "k", 0); },
                        ErrorCode::kInvalidArgument, {"sm_count"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
