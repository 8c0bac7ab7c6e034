// Packed 16-bit ops in the CUDA code generator, without a GPU: which ops of a rounded f16/bf16
// chain take two values per instruction (cuda_packed.cpp), which stay in float, and that the
// kernels compile with NVRTC for sm_90. tests/gpu/test_cuda_16bit_intermediates.cpp runs them
// over every 16-bit input against the reference interpreter.
#ifdef GF_HAVE_CUDA

#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "fusion/cost_model.h"
#include "fusion/kernel_ir.h"
#include "fusion/plan.h"
#include "graphfuse/builder.h"
#include "unit/cuda_codegen_cache.h"

namespace gf {
namespace {

using testing::CudaCodegenCache;

constexpr int kSm90 = 90;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The one generated kernel of a graph that fuses into one.
std::string emit_only_kernel(const Graph& g, const codegen::CudaEmitOptions& options = {}) {
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  std::vector<std::string> sources;
  for (const fusion::Group& group : plan.groups)
    if (group.kind == fusion::GroupKind::kPointwise)
      sources.push_back(
          codegen::emit_cuda_kernel(fusion::lower_group(g, group, "k"), g, options).source);
  EXPECT_EQ(sources.size(), 1u);
  return sources.empty() ? std::string() : sources.front();
}

// y = sigmoid(neg(abs(relu(x * 0.5 + y) * c) - 0.25)): c = 1.5 or 1e-5.
Graph chain(DType t, float c) {
  GraphBuilder b("packed");
  const ValueId x = b.input("x", t, Shape{64, 1024});
  const ValueId y = b.input("y", t, Shape{64, 1024});
  ValueId v = b.add(b.mul(x, b.constant_scalar(0.5f, t)), y);
  v = b.mul(b.unary(Op::kRelu, v), b.constant_scalar(c, t));
  v = b.binary(Op::kSub, v, b.constant_scalar(0.25f, t));
  v = b.unary(Op::kSigmoid, b.unary(Op::kNeg, b.unary(Op::kAbs, v)));
  b.output(v, "z");
  return b.build();
}

TEST_F(CudaCodegenCache, RoundedSixteenBitChainsComputeTwoValuesPerInstruction) {
  std::vector<std::string> sources;
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(t));
    const std::string x2 = t == DType::kBF16 ? "_bf16x2(" : "_f16x2(";
    const std::string src = emit_only_kernel(chain(t, 1.5f));
    // Mul, Add, Relu, Mul and Sub each a pair per instruction; Abs and Neg, which only the
    // float Sigmoid reads, stay float modifiers.
    EXPECT_EQ(count(src, "= gf_mul" + x2), 2u) << src;
    EXPECT_EQ(count(src, "= gf_add" + x2), 1u) << src;
    EXPECT_EQ(count(src, "= gf_sub" + x2), 1u) << src;
    EXPECT_EQ(count(src, "= gf_relu" + x2), 1u) << src;
    EXPECT_EQ(count(src, "0x7fff7fffu"), 0u) << src;
    EXPECT_NE(src.find(t == DType::kBF16 ? "= gf_bf16x2_at(gf_h" : "= gf_f16x2_at(gf_h"),
              std::string::npos);
    EXPECT_EQ(count(src, "_pairs<8>(gf_r"), 0u) << src;  // nothing left to round in float
    sources.push_back(src);
  }
  // A bf16 product with a constant that is not a multiple of 2^-16 can fall below float's
  // smallest step, where the float product rounds before the bf16 rounding: that Mul stays in
  // float, and so do the ops after it. x * 0.5 + y still pairs; the Relu between, which only
  // the float Mul reads, goes back to float.
  const std::string fine = emit_only_kernel(chain(DType::kBF16, 1.0e-5f));
  EXPECT_EQ(count(fine, "= gf_mul_bf16x2("), 1u) << fine;
  EXPECT_EQ(count(fine, "= gf_add_bf16x2("), 1u) << fine;
  EXPECT_EQ(count(fine, "= gf_relu_bf16x2("), 0u) << fine;  // only the float Mul reads it
  EXPECT_EQ(count(fine, "= gf_sub_bf16x2("), 0u) << fine;
  EXPECT_NE(fine.find("gf_round_bf16_pairs<8>(gf_r"), std::string::npos) << fine;
  // f16 products are exact in float, whatever the constant.
  EXPECT_EQ(count(emit_only_kernel(chain(DType::kF16, 1.0e-5f)), "= gf_mul_f16x2("), 2u);
  sources.push_back(fine);
  // With f32 intermediates nothing rounds per op and nothing pairs; before sm_90 bf16 does not.
  codegen::CudaEmitOptions f32;
  f32.round_16bit_intermediates = false;
  EXPECT_EQ(count(emit_only_kernel(chain(DType::kBF16, 1.5f), f32), "x2("), 0u);
  codegen::CudaEmitOptions sm80;
  sm80.compute_capability = 80;
  EXPECT_EQ(count(emit_only_kernel(chain(DType::kBF16, 1.5f), sm80), "bf16x2("), 0u);
  EXPECT_EQ(count(emit_only_kernel(chain(DType::kF16, 1.5f), sm80), "= gf_mul_f16x2("), 2u);
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all(sources, kSm90).size(), sources.size());
}

// A residual add of two bf16 tensors stores its pairs as they are: no float at all.
TEST_F(CudaCodegenCache, PackedResultsAreStoredAsTheyAre) {
  GraphBuilder b("residual");
  const ValueId x = b.input("x", DType::kBF16, Shape{64, 1024});
  const ValueId y = b.input("y", DType::kBF16, Shape{64, 1024});
  b.output(b.unary(Op::kNeg, b.add(x, y)), "z");
  const std::string src = emit_only_kernel(b.build());
  EXPECT_EQ(count(src, "= gf_add_bf16x2(gf_pair16("), 1u) << src;
  EXPECT_EQ(count(src, " ^ 0x80008000u;"), 1u) << src;  // the stored Neg pairs too
  EXPECT_NE(src.find("gf_store_vec<uint32_t, 4>(reinterpret_cast<uint32_t*>(gf_q"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("gf_store_vec_pairs<8"), std::string::npos) << src;
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all({src}, kSm90).size(), 1u);
}

// A one-element input (a scalar constant) is read once, ahead of the grid-stride loop.
TEST(CudaCodegen, ScalarInputsAreReadAheadOfThePointwiseLoop) {
  GraphBuilder b("scale");
  const ValueId x = b.input("x", DType::kF32, Shape{64, 1024});
  b.output(b.mul(x, b.constant_scalar(0.5f, DType::kF32)), "y");
  const std::string src = emit_only_kernel(b.build());
  const size_t read = src.find("= b2[0];");
  ASSERT_NE(read, std::string::npos) << src;
  EXPECT_LT(read, src.find("for (int64_t gf_run"));
  EXPECT_EQ(src.find("*gf_p"), std::string::npos) << src;  // no read of it inside
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
