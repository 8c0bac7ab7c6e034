// How MatMul and Gemm nodes map onto cuBLASLt calls (plan_gemm): batch folding, strided
// batches, broadcast batches as per-entry offsets, the bias epilogue, refusals. No device
// needed; the calls themselves run in tests/gpu.
#ifdef GF_HAVE_CUDA

#include "runtime/cuda/gemm_plan.h"
#include "test_util.h"

namespace gf {
namespace {

struct OneNode {
  Graph g;
  const Node& node() const { return g.node(0); }
};

OneNode matmul(Shape a, Shape b, DType dtype = DType::kF32) {
  GraphBuilder bld;
  bld.output(bld.matmul(bld.input("a", dtype, std::move(a)), bld.input("b", dtype, std::move(b))));
  return {bld.build()};
}

TEST(GemmPlan, SharedWeightFoldsTheBatchIntoRows) {
  OneNode m = matmul(Shape{2, 7, 5}, Shape{5, 3});
  const cuda::GemmPlan p = cuda::plan_gemm(m.g, m.node(), false);
  EXPECT_EQ(p.spec.batch, 1);
  EXPECT_EQ(p.spec.m, 14);
  EXPECT_EQ(p.spec.n, 3);
  EXPECT_EQ(p.spec.k, 5);
  ASSERT_EQ(p.calls.size(), 1u);
}

TEST(GemmPlan, VectorsBecomeRowsAndColumns) {
  OneNode row = matmul(Shape{5}, Shape{5, 3});
  cuda::GemmPlan p = cuda::plan_gemm(row.g, row.node(), false);
  EXPECT_EQ(p.spec.m, 1);
  EXPECT_EQ(p.spec.n, 3);
  OneNode col = matmul(Shape{4, 2, 5}, Shape{5});
  p = cuda::plan_gemm(col.g, col.node(), false);
  EXPECT_EQ(p.spec.m, 8);
  EXPECT_EQ(p.spec.n, 1);
  EXPECT_EQ(p.spec.k, 5);
}

TEST(GemmPlan, EqualBatchesAreOneStridedCall) {
  OneNode m = matmul(Shape{2, 3, 4, 5}, Shape{2, 3, 5, 6}, DType::kBF16);
  const cuda::GemmPlan p = cuda::plan_gemm(m.g, m.node(), false);
  EXPECT_EQ(p.spec.batch, 6);
  EXPECT_EQ(p.spec.m, 4);
  EXPECT_EQ(p.spec.dtype, DType::kBF16);
  EXPECT_EQ(p.calls.size(), 1u);
}

TEST(GemmPlan, BroadcastBatchesAreOneCallPerEntryWithOffsets) {
  // a [2,1,8,16] x b [3,16,8] -> [2,3,8,8]: entry (i, j) reads a[i] and b[j].
  OneNode m = matmul(Shape{2, 1, 8, 16}, Shape{3, 16, 8});
  const cuda::GemmPlan p = cuda::plan_gemm(m.g, m.node(), false);
  EXPECT_EQ(p.spec.batch, 1);
  ASSERT_EQ(p.calls.size(), 6u);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      const cuda::GemmCall& c = p.calls[static_cast<size_t>(i * 3 + j)];
      EXPECT_EQ(c.a_offset, i * 8 * 16);
      EXPECT_EQ(c.b_offset, j * 16 * 8);
      EXPECT_EQ(c.c_offset, (i * 3 + j) * 8 * 8);
    }
  }
  // Entries of 4x5 floats sit at 80-byte steps: refused, the heuristic assumes aligned operands.
  OneNode odd = matmul(Shape{2, 1, 4, 5}, Shape{3, 5, 6});
  testing::expect_error([&] { cuda::plan_gemm(odd.g, odd.node(), false); }, ErrorCode::kUnsupported,
                        {"not 256-byte aligned"});
}

TEST(GemmPlan, GemmTakesTransposesAndABiasRow) {
  GraphBuilder bld;
  const ValueId a = bld.input("a", DType::kF16, Shape{5, 3});  // transA: [K, M]
  const ValueId b = bld.input("b", DType::kF16, Shape{4, 5});  // transB: [N, K]
  const ValueId c = bld.input("c", DType::kF16, Shape{4});
  bld.output(bld.op1(Op::kGemm, {a, b, c}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}));
  Graph g = bld.build();
  const cuda::GemmPlan p = cuda::plan_gemm(g, g.node(0), true);
  EXPECT_TRUE(p.spec.trans_a);
  EXPECT_TRUE(p.spec.trans_b);
  EXPECT_EQ(p.spec.m, 3);
  EXPECT_EQ(p.spec.n, 4);
  EXPECT_EQ(p.spec.k, 5);
  EXPECT_EQ(p.spec.epilogue, cuda::GemmEpilogue::kBias);
  EXPECT_EQ(p.bias, c);
  EXPECT_TRUE(p.spec.allow_tf32);
}

TEST(GemmPlan, RefusesWhatCublasLtDoesNotTake) {
  OneNode ints = matmul(Shape{2, 3}, Shape{3, 4}, DType::kI32);
  testing::expect_error([&] { cuda::plan_gemm(ints.g, ints.node(), false); }, ErrorCode::kUnsupported,
                        {"MatMul", "i32"});
  OneNode empty = matmul(Shape{2, 0}, Shape{0, 4});
  testing::expect_error([&] { cuda::plan_gemm(empty.g, empty.node(), false); }, ErrorCode::kUnsupported,
                        {"empty"});
  GraphBuilder bld;
  const ValueId a = bld.input("a", DType::kF32, Shape{2, 3});
  const ValueId b = bld.input("b", DType::kF32, Shape{3, 4});
  bld.output(bld.op1(Op::kGemm, {a, b}, {{"alpha", 2.0f}}));
  Graph g = bld.build();
  testing::expect_error([&] { cuda::plan_gemm(g, g.node(0), false); }, ErrorCode::kUnsupported, {"alpha"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
