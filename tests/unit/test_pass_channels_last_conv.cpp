// channels_last_convs: 16-bit 2-D Convs become NhwcConvs on transposed data, elementwise chains
// between them follow, and the rewritten graph computes what the original did on the reference
// interpreter. NhwcConv itself is checked against Conv on transposed operands.
#include "ir/tensor_transpose.h"
#include "passes/channels_last_conv.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

const std::vector<int64_t> kToLast{0, 2, 3, 1};

Attributes conv_attrs(int64_t pad, int64_t stride = 1) {
  return {{"pads", std::vector<int64_t>{pad, pad, pad, pad}},
          {"strides", std::vector<int64_t>{stride, stride}}};
}

// x -> Conv 3x3 (bias) -> Relu -> Conv 1x1 -> Add x -> Relu -> MaxPool -> y, and the second
// Relu's output as a graph output of its own. Without the bias the rewrite moves elements only,
// so the results are bit-equal.
Graph residual_block(DType t, bool bias) {
  GraphBuilder b("block");
  const ValueId x = b.input("x", t, Shape{2, 8, 9, 7});
  const ValueId w1 = b.constant("w1", random_tensor(t, {6, 8, 3, 3}, 1, -0.3, 0.3));
  const ValueId b1 = b.constant("b1", random_tensor(t, {6}, 2));
  const ValueId w2 = b.constant("w2", random_tensor(t, {8, 6, 1, 1}, 3, -0.5, 0.5));
  ValueId v = b.op1(Op::kConv, bias ? std::vector<ValueId>{x, w1, b1} : std::vector<ValueId>{x, w1},
                    conv_attrs(1), "conv1");
  v = b.unary(Op::kRelu, v);
  v = b.op1(Op::kConv, {v, w2}, conv_attrs(0), "conv2");
  v = b.add(v, x);
  const ValueId r = b.unary(Op::kRelu, v);
  b.output(r, "r");
  b.output(b.op1(Op::kMaxPool, {r}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, "pool"), "y");
  return b.build();
}

TEST(ChannelsLastConvs, AResidualBlockRunsChannelsLastBetweenOneTransposeInAndOneOut) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    const Graph g = residual_block(t, false);
    Graph nhwc = g;
    EXPECT_EQ(channels_last_convs(nhwc), 2);
    verify_graph(nhwc);
    EXPECT_EQ(count_ops(nhwc, Op::kConv), 0);
    EXPECT_EQ(count_ops(nhwc, Op::kNhwcConv), 2);
    // x in (read by both the first Conv and the residual Add); the last Relu out, for the pool
    // and the graph output.
    EXPECT_EQ(count_ops(nhwc, Op::kTranspose), 2) << print_graph(nhwc);
    for (const Node& n : nhwc.nodes()) {
      if (n.op != Op::kNhwcConv) continue;
      EXPECT_TRUE(nhwc.value(n.inputs[1]).is_constant()) << "W is transposed once, here";
    }
    EXPECT_EQ(nhwc.value(nhwc.outputs()[0]).name, "r");
    EXPECT_EQ(nhwc.value(nhwc.outputs()[1]).name, "y");
    testing::expect_same_results(g, nhwc, 0, 0);
  }
}

TEST(ChannelsLastConvs, TheBiasBecomesAnAddOverTheLastAxis) {
  GraphBuilder b("bias");
  const ValueId x = b.input("x", DType::kBF16, Shape{2, 5, 6, 6});
  const ValueId w = b.constant("w", random_tensor(DType::kBF16, {3, 5, 3, 3}, 1, -0.3, 0.3));
  const ValueId bias = b.constant("b", random_tensor(DType::kBF16, {3}, 2));
  b.output(b.unary(Op::kRelu, b.op1(Op::kConv, {x, w, bias}, conv_attrs(1), "conv")), "y");
  const Graph g = b.build();
  Graph nhwc = g;
  EXPECT_EQ(channels_last_convs(nhwc), 1);
  verify_graph(nhwc);
  for (const Node& n : nhwc.nodes()) {
    if (n.op != Op::kNhwcConv) continue;
    EXPECT_EQ(n.inputs.size(), 2u) << "the bias is an Add of its own";
  }
  EXPECT_EQ(count_ops(nhwc, Op::kAdd), 1);
  // The bias now adds to the rounded product: one rounding more, up to half a unit of bf16 of
  // the product (2^-8 relative to it; products here stay below 8) plus one of the sum.
  testing::expect_same_results(g, nhwc, 8e-3, 0.04);
}

TEST(ChannelsLastConvs, ConvsCuDnnTakesChannelsFirstOnlyStayAsTheyAre) {
  GraphBuilder b("mixed");
  const ValueId x32 = b.input("x32", DType::kF32, Shape{1, 4, 6, 6});
  const ValueId x16 = b.input("x16", DType::kF16, Shape{1, 4, 6, 6});
  const ValueId x1d = b.input("x1d", DType::kF16, Shape{1, 4, 6});
  const ValueId w32 = b.constant("w32", random_tensor(DType::kF32, {4, 4, 3, 3}, 1));
  const ValueId w16 = b.constant("w16", random_tensor(DType::kF16, {4, 4, 2, 2}, 2));
  const ValueId w1d = b.constant("w1d", random_tensor(DType::kF16, {4, 4, 3}, 3));
  b.output(b.op1(Op::kConv, {x32, w32}, conv_attrs(1), "f32"), "y32");
  // SAME_UPPER with an even kernel pads 0 before and 1 after.
  b.output(b.op1(Op::kConv, {x16, w16}, {{"auto_pad", std::string("SAME_UPPER")}}, "uneven"),
           "y16");
  b.output(b.op1(Op::kConv, {x1d, w1d}, {{"pads", std::vector<int64_t>{1, 1}}}, "one_d"), "y1d");
  Graph g = b.build();
  EXPECT_EQ(channels_last_convs(g), 0);
  EXPECT_EQ(count_ops(g, Op::kConv), 3);
  EXPECT_EQ(count_ops(g, Op::kTranspose), 0);
}

TEST(ChannelsLastConvs, APerChannelOperandSendsTheChainBackToChannelsFirst) {
  GraphBuilder b("scale");
  const ValueId x = b.input("x", DType::kF16, Shape{2, 4, 5, 5});
  const ValueId w = b.constant("w", random_tensor(DType::kF16, {4, 4, 3, 3}, 4, -0.3, 0.3));
  ValueId v = b.op1(Op::kConv, {x, w}, conv_attrs(1, 2), "conv");
  v = b.mul(v, b.constant("s", random_tensor(DType::kF16, {4, 1, 1}, 5)));  // channels-first shape
  v = b.mul(v, b.constant_scalar(0.5f, DType::kF16));
  b.output(v, "y");
  const Graph g = b.build();
  Graph nhwc = g;
  EXPECT_EQ(channels_last_convs(nhwc), 1);
  verify_graph(nhwc);
  EXPECT_EQ(count_ops(nhwc, Op::kTranspose),
            2);  // x in, the Conv's output out before the [4,1,1] Mul
  testing::expect_same_results(g, nhwc, 1e-3, 1e-3);
}

TEST(NhwcConv, IsConvOnChannelsLastOperands) {
  const Tensor x = random_tensor(DType::kF32, {2, 6, 7, 5}, 6);
  const Tensor w = random_tensor(DType::kF32, {4, 3, 3, 3}, 7);  // group 2: 3 channels per group
  const Tensor bias = random_tensor(DType::kF32, {4}, 8);
  const Attributes attrs{{"group", int64_t{2}},
                         {"pads", std::vector<int64_t>{1, 0, 1, 0}},
                         {"dilations", std::vector<int64_t>{1, 2}}};
  const Tensor want = transpose_tensor(testing::run_op1(Op::kConv, {x, w, bias}, attrs), kToLast);
  const Tensor got = testing::run_op1(
      Op::kNhwcConv, {transpose_tensor(x, kToLast), transpose_tensor(w, kToLast), bias}, attrs);
  testing::expect_values(got, want.dims(), testing::doubles(want), 1e-6, 1e-6);
}

TEST(NhwcConv, ChannelsThatDoNotMatchAreReportedWithTheNode) {
  testing::expect_error(
      [] {
        testing::run_op1(Op::kNhwcConv,
                         {Tensor(DType::kF32, {1, 5, 5, 3}), Tensor(DType::kF32, {2, 3, 3, 4})});
      },
      ErrorCode::kShapeMismatch, {"NhwcConv", "[1,5,5,3]", "channels"});
}

}  // namespace
}  // namespace gf
