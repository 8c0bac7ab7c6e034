// Transpose folding into Gemm flags and MatMul constant weights.
#include "passes/fold_transpose.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

int64_t gemm_flag(const Graph& g, const char* name) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kGemm) return n.attrs.get_int(name, 0);
  }
  return -1;
}

TEST(PassFoldTranspose, TransposedGemmInputsBecomeFlags) {
  GraphBuilder b;
  ValueId a = b.input("a", DType::kF32, {4, 3});
  ValueId w = b.input("w", DType::kF32, {5, 4});
  ValueId bias = b.input("bias", DType::kF32, {5});
  // [3, 4] x [4, 5] + bias
  b.output(b.op1(Op::kGemm, {b.transpose(a, {1, 0}), b.transpose(w, {1, 0}), bias},
                 {{"alpha", 0.5f}}));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(fold_transposes(g), 2);
  EXPECT_EQ(gemm_flag(g, "transA"), 1);
  EXPECT_EQ(gemm_flag(g, "transB"), 1);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
  testing::expect_same_results(original, g);
}

TEST(PassFoldTranspose, AnExistingFlagIsToggledOff) {
  GraphBuilder b;
  ValueId a = b.input("a", DType::kF32, {2, 3});
  ValueId w = b.input("w", DType::kF32, {3, 4});
  b.output(b.op1(Op::kGemm, {a, b.transpose(w, {1, 0})}, {{"transB", int64_t{1}}}));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(fold_transposes(g), 1);
  EXPECT_EQ(gemm_flag(g, "transB"), 0);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
  testing::expect_same_results(original, g);
}

TEST(PassFoldTranspose, ConstantWeightOfMatMulIsTransposedInPlace) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3, 4});
  ValueId w = b.constant("w", random_tensor(DType::kF32, {2, 5, 4}, 3));
  ValueId w3 = b.constant("w3", random_tensor(DType::kF32, {5, 6}, 4));
  ValueId h = b.matmul(x, b.transpose(w, {0, 2, 1}));  // [2, 3, 5]
  b.output(b.matmul(h, w3));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(fold_transposes(g), 1);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
  EXPECT_EQ(g.find_value("w"), kNoValue);  // the original weight is no longer read
  testing::expect_same_results(original, g);
}

TEST(PassFoldTranspose, TransposedMatrixWeightOfMatMulBecomesGemmTransBOverItsStorage) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3, 4});
  ValueId x2 = b.input("x2", DType::kF32, {3, 4});
  ValueId w = b.constant("w", random_tensor(DType::kF32, {5, 4}, 5));  // [n, k], as an embedding
  const ValueId wt = b.transpose(w, {1, 0});
  b.output(b.matmul(x, wt));   // [2, 3, 5]: rows folded into a 2-D Gemm
  b.output(b.matmul(x2, wt));  // [3, 5]: a Gemm as it is
  b.output(b.op1(Op::kGather, {w, b.constant("ids", Tensor::scalar<int64_t>(2))}, {{"axis", int64_t{0}}}));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(fold_transposes(g), 2);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
  EXPECT_EQ(count_ops(g, Op::kMatMul), 0);
  EXPECT_EQ(count_ops(g, Op::kGemm), 2);
  EXPECT_EQ(gemm_flag(g, "transB"), 1);
  // No transposed copy: the only 20-element constant is the weight, read by both and the Gather.
  int weight_sized = 0;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const Value& v = g.value(static_cast<ValueId>(i));
    weight_sized += v.is_constant() && v.constant.numel() == 20;
  }
  EXPECT_EQ(weight_sized, 1);
  testing::expect_same_results(original, g);
}

TEST(PassFoldTranspose, MatMulOverATransposedWeightWithDynamicRowsFoldsTheConstant) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim("batch"), Dim(4)});
  ValueId w = b.constant("w", random_tensor(DType::kF32, {5, 4}, 6));
  b.output(b.matmul(x, b.transpose(w, {1, 0})));
  Graph g = b.build();
  EXPECT_EQ(fold_transposes(g), 1);
  EXPECT_EQ(count_ops(g, Op::kMatMul), 1);  // no static rows to fold: the constant is transposed
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
  EXPECT_EQ(g.find_value("w"), kNoValue);
}

TEST(PassFoldTranspose, RunTimeTransposesIntoMatMulAndIdentityPermsStay) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {3, 4});
  ValueId y = b.input("y", DType::kF32, {3, 4});
  ValueId m = b.matmul(x, b.transpose(y, {1, 0}));                       // [3, 3]
  b.output(b.op1(Op::kGemm, {b.transpose(m, {0, 1}), m}, {}));          // identity perm
  Graph g = b.build();
  EXPECT_EQ(fold_transposes(g), 0);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 2);
}

TEST(PassFoldTranspose, ATransposeWithOtherReadersStaysForThem) {
  GraphBuilder b;
  ValueId a = b.input("a", DType::kF32, {3, 2});
  ValueId w = b.input("w", DType::kF32, {3, 4});
  ValueId at = b.transpose(a, {1, 0});
  b.output(b.op1(Op::kGemm, {at, w}, {}));
  b.output(b.unary(Op::kRelu, at));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(fold_transposes(g), 1);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 1);
  EXPECT_EQ(gemm_flag(g, "transA"), 1);
  testing::expect_same_results(original, g);
}

}  // namespace
}  // namespace gf
