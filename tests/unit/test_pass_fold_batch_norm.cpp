// BatchNormalization folding into a preceding Conv.
#include "passes/fold_batch_norm.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

struct ConvBn {
  Graph graph;
  ValueId conv_out = kNoValue;
};

// x [2,3,6,6] -> Conv(4 filters 3x3, pad 1, bias optional) -> BN -> output.
ConvBn conv_bn(DType dtype, bool conv_bias, bool runtime_mean = false, bool second_reader = false) {
  GraphBuilder b;
  ValueId x = b.input("x", dtype, {2, 3, 6, 6});
  ValueId w = b.constant("w", random_tensor(dtype, {4, 3, 3, 3}, 1));
  std::vector<ValueId> conv_in{x, w};
  if (conv_bias) conv_in.push_back(b.constant("b", random_tensor(dtype, {4}, 2)));
  ValueId c = b.op1(Op::kConv, conv_in, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv");
  ValueId scale = b.constant("scale", random_tensor(dtype, {4}, 3, 0.5, 2.0));
  ValueId bias = b.constant("bn_bias", random_tensor(dtype, {4}, 4));
  ValueId mean = runtime_mean ? b.input("mean", dtype, {4})
                              : b.constant("mean", random_tensor(dtype, {4}, 5));
  ValueId var = b.constant("var", random_tensor(dtype, {4}, 6, 0.1, 3.0));
  ValueId y = b.op1(Op::kBatchNormalization, {c, scale, bias, mean, var}, {{"epsilon", 1e-3f}});
  b.output(y);
  if (second_reader) b.output(b.unary(Op::kRelu, c));
  return {b.build(), c};
}

TEST(PassFoldBatchNorm, FoldsIntoConvWithBias) {
  ConvBn m = conv_bn(DType::kF32, true);
  const Graph original = m.graph;
  EXPECT_EQ(fold_batch_norms(m.graph), 1);
  EXPECT_EQ(count_ops(m.graph, Op::kBatchNormalization), 0);
  ASSERT_EQ(count_ops(m.graph, Op::kConv), 1);
  EXPECT_EQ(m.graph.node(0).name, "conv/fused_batchnorm");
  EXPECT_EQ(m.graph.node(0).inputs.size(), 3u);
  testing::expect_same_results(original, m.graph, 1e-5, 1e-5);
}

TEST(PassFoldBatchNorm, FoldsIntoConvWithoutBiasInEveryFloatDtype) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    ConvBn m = conv_bn(t, false);
    const Graph original = m.graph;
    EXPECT_EQ(fold_batch_norms(m.graph), 1);
    EXPECT_EQ(count_ops(m.graph, Op::kBatchNormalization), 0);
    // 16-bit weights are rounded once more after scaling.
    const double tol = t == DType::kBF16 ? 0.1 : t == DType::kF16 ? 2e-2 : 1e-5;
    testing::expect_same_results(original, m.graph, tol, tol);
  }
}

TEST(PassFoldBatchNorm, ConvOutputWithAnotherReaderIsNotFolded) {
  ConvBn m = conv_bn(DType::kF32, true, false, true);
  EXPECT_EQ(fold_batch_norms(m.graph), 0);
  EXPECT_EQ(count_ops(m.graph, Op::kBatchNormalization), 1);
}

TEST(PassFoldBatchNorm, RunTimeStatisticsAreNotFolded) {
  ConvBn m = conv_bn(DType::kF32, true, true);
  const size_t values = m.graph.num_values();
  EXPECT_EQ(fold_batch_norms(m.graph), 0);
  EXPECT_EQ(count_ops(m.graph, Op::kBatchNormalization), 1);
  EXPECT_EQ(m.graph.num_values(), values);
}

TEST(PassFoldBatchNorm, BatchNormAfterAnythingButConvStays) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {1, 2, 3});
  ValueId p = b.constant("p", random_tensor(DType::kF32, {2}, 1, 0.5, 1.0));
  b.output(b.op1(Op::kBatchNormalization, {b.unary(Op::kRelu, x), p, p, p, p}));
  Graph g = b.build();
  EXPECT_EQ(fold_batch_norms(g), 0);
  EXPECT_EQ(count_ops(g, Op::kBatchNormalization), 1);
}

}  // namespace
}  // namespace gf
