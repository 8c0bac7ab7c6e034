#include "passes/fuse_sibling_matmuls.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

TEST(PassFuseSiblingMatmuls, QkvProjectionsBecomeOneProductWithSlices) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{2, 5, 8});
  const int64_t widths[] = {4, 4, 6};
  for (int i = 0; i < 3; ++i) {
    ValueId w = b.constant("w" + std::to_string(i), random_tensor(DType::kF32, {8, widths[i]}, 10 + i));
    ValueId bias = b.constant("b" + std::to_string(i), random_tensor(DType::kF32, {widths[i]}, 20 + i));
    b.output(b.add(b.matmul(x, w), bias), "y" + std::to_string(i));
  }
  const Graph original = b.build();
  Graph g = original;
  EXPECT_EQ(fuse_sibling_matmuls(g), 2);
  EXPECT_EQ(count_ops(g, Op::kMatMul), 1);
  EXPECT_EQ(count_ops(g, Op::kAdd), 1);
  EXPECT_EQ(count_ops(g, Op::kSlice), 3);
  verify_graph(g);
  infer_shapes(g);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(g.value(g.outputs()[static_cast<size_t>(i)]).name, "y" + std::to_string(i));
  testing::expect_same_results(original, g);
}

TEST(PassFuseSiblingMatmuls, LeavesRuntimeWeightsAndLoneProductsAlone) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{3, 8});
  ValueId runtime_w = b.input("w_in", DType::kF32, Shape{8, 4});
  b.output(b.matmul(x, runtime_w), "a");
  b.output(b.matmul(x, b.constant("w", random_tensor(DType::kF32, {8, 4}, 1))), "b");
  Graph g = b.build();
  EXPECT_EQ(fuse_sibling_matmuls(g), 0);  // one constant-weight product: nothing to merge
  EXPECT_EQ(count_ops(g, Op::kMatMul), 2);
}

TEST(PassFuseSiblingMatmuls, BiasedAndUnbiasedProductsAreNotMixed) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{3, 8});
  ValueId w0 = b.constant("w0", random_tensor(DType::kF32, {8, 4}, 1));
  ValueId w1 = b.constant("w1", random_tensor(DType::kF32, {8, 4}, 2));
  ValueId w2 = b.constant("w2", random_tensor(DType::kF32, {8, 2}, 3));
  b.output(b.add(b.matmul(x, w0), b.constant("b0", random_tensor(DType::kF32, {4}, 4))), "biased");
  b.output(b.matmul(x, w1), "plain1");
  b.output(b.matmul(x, w2), "plain2");
  const Graph original = b.build();
  Graph g = original;
  EXPECT_EQ(fuse_sibling_matmuls(g), 1);  // the two unbiased products merge
  EXPECT_EQ(count_ops(g, Op::kMatMul), 2);
  testing::expect_same_results(original, g);
}

}  // namespace
}  // namespace gf
