// The CUDA code generator's handling of f16/bf16 values without a GPU: conversions, where
// results are rounded (per op, in pairs, by the store, or not at all), and the 16-bit forms of
// Sigmoid and Gelu. The kernels compile with NVRTC for sm_90; tests/gpu/
// test_cuda_16bit_intermediates.cpp runs them.
#ifdef GF_HAVE_CUDA

#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "fusion/kernel_ir.h"
#include "gpu/cuda_kernel_cases.h"
#include "unit/cuda_codegen_cache.h"

namespace gf {
namespace {

using testing::CudaCodegenCache;

constexpr int kSm90 = 90;

TEST(CudaCodegen, SixteenBitValuesUseTheSharedBitManipulation) {
  const auto src = codegen::emit_cuda_kernel(testing::half_chain_case().kernel, Graph{});
  EXPECT_EQ(src.source.find("cuda_fp16"), std::string::npos);
  EXPECT_EQ(src.source.find("__half"), std::string::npos);
  EXPECT_NE(src.source.find("uint16_t gf_f32_to_f16(float f)"), std::string::npos);
  // Each f16 op result is rounded to f16 and back, as the reference stores it; the last one,
  // which only the store reads, is rounded once, by the store.
  EXPECT_NE(src.source.find("= gf_f16_to_f32(gf_f32_to_f16((t10 + t9)));  // Add"),
            std::string::npos);
  EXPECT_NE(src.source.find("= gf_f16_to_f32(gf_f32_to_f16((t11 * t9)));  // Mul"),
            std::string::npos);
  EXPECT_NE(src.source.find("= tanhf(t12);  // Tanh"), std::string::npos);
  EXPECT_NE(src.source.find("gf_store_vec_pairs<8, gf_pack_f16>"), std::string::npos);
  codegen::CudaEmitOptions fast;
  fast.round_16bit_intermediates = false;
  EXPECT_EQ(codegen::emit_cuda_kernel(testing::half_chain_case().kernel, Graph{}, fast)
                .source.find("gf_f16_to_f32(gf_f32_to_f16("),
            std::string::npos);
}

TEST_F(CudaCodegenCache, SixteenBitRoundingIsLeftOutWhereTheOpCannotChangeTheValue) {
  // bf16: y = sigmoid(-|relu(x) * s|) / s. Relu, Abs and Neg of a bf16 value are bf16 values:
  // no rounding; the product and the sigmoid are rounded, and the quotient, which only the store
  // reads, by the store's conversion (not the byte permute of an exact value).
  testing::KernelBuilder b("exact_ops");
  const int x = b.buffer("x", DType::kBF16, {1000}, false);
  const int y = b.buffer("y", DType::kBF16, {1000}, true);
  b.k.outer_dims = {1000};
  const auto i = b.outer(0);
  const auto t = DType::kBF16;
  const auto s = b.constant(t, 1.5);
  const auto prod = b.op(Op::kMul, t, {b.op(Op::kRelu, t, {b.load(x, i)}), s});
  const auto e = b.op(Op::kSigmoid, t, {b.op(Op::kNeg, t, {b.op(Op::kAbs, t, {prod})})});
  b.store(y, i, b.op(Op::kDiv, t, {e, s}));
  const std::string rounded = codegen::emit_cuda_kernel(b.k, Graph{}).source;
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // The run of 8 points computes each rounded result for all of them first and rounds them a
  // pair per conversion; the next wave reads them.
  EXPECT_EQ(count(rounded, "= gf_round_bf16("), 0u) << rounded;
  EXPECT_EQ(count(rounded, "gf_round_bf16_pairs<8>(gf_r"), 2u) << rounded;
  EXPECT_NE(rounded.find("gf_round_bf16_pairs<8>(gf_r" + std::to_string(prod) + ");"),
            std::string::npos);
  EXPECT_NE(rounded.find("gf_round_bf16_pairs<8>(gf_r" + std::to_string(e) + ");"),
            std::string::npos);
  EXPECT_NE(rounded.find("= gf_r" + std::to_string(e) + "[gf_j];"), std::string::npos);
  EXPECT_NE(rounded.find("gf_store_vec_pairs<8, gf_pack_bf16>"), std::string::npos);
  EXPECT_NE(rounded.find("gf_sigmoid_faithful(t"), std::string::npos);  // rounded right after
  EXPECT_EQ(rounded.find("gf_div_approx(t"), std::string::npos);        // only the prelude helper
  // f32 intermediates: no rounding before the store, and the device's approximations.
  codegen::CudaEmitOptions f32;
  f32.round_16bit_intermediates = false;
  const std::string approx = codegen::emit_cuda_kernel(b.k, Graph{}, f32).source;
  EXPECT_EQ(count(approx, "= gf_round_bf16("), 0u);
  EXPECT_EQ(count(approx, "gf_sigmoid_approx("), 2u);  // the helper and its call
  EXPECT_NE(approx.find("gf_div_approx(t"), std::string::npos);
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all({rounded, approx}, kSm90).size(), 2u);
}

// Gelu with a 16-bit result takes the form for values rounded to 16 bits; an f32 one erff.
TEST_F(CudaCodegenCache, SixteenBitGeluTakesItsOwnForm) {
  std::vector<std::string> sources;
  for (DType t : {DType::kBF16, DType::kF32}) {
    testing::KernelBuilder b("gelu");
    const int x = b.buffer("x", t, {1000}, false);
    const int y = b.buffer("y", t, {1000}, true);
    b.k.outer_dims = {1000};
    const auto i = b.outer(0);
    b.store(y, i, b.op(Op::kGelu, t, {b.load(x, i)}));
    sources.push_back(codegen::emit_cuda_kernel(b.k, Graph{}).source);
  }
  EXPECT_NE(sources[0].find("= gf_gelu_erf_16bit(t"), std::string::npos) << sources[0];
  EXPECT_EQ(sources[1].find("= gf_gelu_erf_16bit(t"), std::string::npos);
  EXPECT_NE(sources[1].find("erff("), std::string::npos) << sources[1];
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all(sources, kSm90).size(), 2u);
}

// A 16-bit op result is left to its store's rounding only when stores of its own format are
// all that read it: p = x * s is stored and also read by the sum (rounded per op); q = p + s is
// stored in bf16 and in f32 (rounded per op: the f32 store does not round); r = q * s is only
// stored in bf16 (rounded by the store's conversion).
TEST_F(CudaCodegenCache, OnlyResultsThatOnlyTheirOwnFormatsStoresReadAreLeftToTheStore) {
  testing::KernelBuilder b("stored_results");
  const auto t = DType::kBF16;
  const int x = b.buffer("x", t, {1000}, false);
  const int yp = b.buffer("yp", t, {1000}, true);
  const int yq = b.buffer("yq", t, {1000}, true);
  const int yq32 = b.buffer("yq32", DType::kF32, {1000}, true);
  const int yr = b.buffer("yr", t, {1000}, true);
  b.k.outer_dims = {1000};
  const auto i = b.outer(0);
  const auto s = b.constant(t, 1.5);
  const auto p = b.op(Op::kMul, t, {b.load(x, i), s});
  const auto q = b.op(Op::kAdd, t, {p, s});
  const auto r = b.op(Op::kMul, t, {q, s});
  b.store(yp, i, p);
  b.store(yq, i, q);
  b.store(yq32, i, b.cast(DType::kF32, q));
  b.store(yr, i, r);
  const std::string src = codegen::emit_cuda_kernel(b.k, Graph{}).source;
  // p and q are rounded (a pair per conversion, in two waves: q reads p), r is not.
  EXPECT_EQ(src.find("= gf_round_bf16(("), std::string::npos) << src;
  for (const auto id : {p, q})
    EXPECT_NE(src.find("gf_round_bf16_pairs<8>(gf_r" + std::to_string(id) + ");"),
              std::string::npos)
        << src;
  EXPECT_EQ(src.find("gf_r" + std::to_string(r) + "["), std::string::npos) << src;
  EXPECT_LT(src.find("gf_round_bf16_pairs<8>(gf_r" + std::to_string(p) + ");"),
            src.find("gf_r" + std::to_string(q) + "[gf_j] = "));
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all({src}, kSm90).size(), 1u);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
