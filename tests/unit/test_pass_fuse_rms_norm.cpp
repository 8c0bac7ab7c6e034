// RMSNorm recognition.
#include "passes/fuse_layer_norm.h"
#include "passes/fuse_rms_norm.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

struct RmsForm {
  bool square_by_mul = false;  // x * x instead of Pow(x, 2)
  bool divide = false;         // x / sqrt instead of x * Reciprocal(sqrt)
  float one_over = 0.0f;       // nonzero: x * Div(one_over, sqrt) (TorchScript's form when 1)
  bool swap_operands = false;  // constants and scale first in commutative ops
  double exponent = 2.0;       // a near miss when not 2
  int64_t axis = -1;
  bool scale = true;           // a near miss: no scale
};

// The decomposition torch.onnx emits for rms_norm (LLaMA's RMSNorm) over the last axis.
Graph rms_norm_graph(const RmsForm& f) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {3, 4, 16});
  auto bin = [&](Op op, ValueId a, ValueId c) {
    return f.swap_operands ? b.binary(op, c, a) : b.binary(op, a, c);
  };
  ValueId sq = f.square_by_mul
                   ? b.op1(Op::kMul, {x, x}, {}, "rms/square")
                   : b.op1(Op::kPow, {x, b.constant_scalar(static_cast<float>(f.exponent), DType::kF32)},
                           {}, "rms/square");
  ValueId var = b.reduce(Op::kReduceMean, sq, {f.axis});
  ValueId sd = b.unary(Op::kSqrt, bin(Op::kAdd, var, b.constant_scalar(1e-6f, DType::kF32)));
  ValueId n;
  if (f.divide) {
    n = b.binary(Op::kDiv, x, sd);
  } else if (f.one_over != 0.0f) {
    n = bin(Op::kMul, x, b.binary(Op::kDiv, b.constant_scalar(f.one_over, DType::kF32), sd));
  } else {
    n = bin(Op::kMul, x, b.unary(Op::kReciprocal, sd));
  }
  if (f.scale) n = bin(Op::kMul, n, b.constant("w", random_tensor(DType::kF32, {16}, 5, 0.5, 1.5)));
  b.output(n);
  return b.build();
}

void expect_fused(const RmsForm& f) {
  Graph g = rms_norm_graph(f);
  const Graph original = g;
  EXPECT_EQ(fuse_rms_norms(g), 1);
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).op, Op::kRMSNormalization);
  EXPECT_EQ(g.node(0).name, "rms/square/fused_rmsnorm");
  EXPECT_FLOAT_EQ(g.node(0).attrs.get_float("epsilon", 0), 1e-6f);
  testing::expect_same_results(original, g);
}

TEST(PassFuseRmsNorm, PowReciprocalScale) { expect_fused({}); }

TEST(PassFuseRmsNorm, MulSquareDivideCommutedOperands) {
  expect_fused({.square_by_mul = true, .divide = true, .swap_operands = true});
}

TEST(PassFuseRmsNorm, OneOverSqrtAsDivTorchScriptForm) { expect_fused({.one_over = 1.0f}); }

TEST(PassFuseRmsNorm, NearMissesAreLeftAlone) {
  for (const RmsForm& f : {RmsForm{.exponent = 3.0}, RmsForm{.axis = 1}, RmsForm{.scale = false},
                           RmsForm{.one_over = 2.0f}}) {
    Graph g = rms_norm_graph(f);
    const size_t nodes = g.num_nodes();
    EXPECT_EQ(fuse_rms_norms(g), 0);
    EXPECT_EQ(g.num_nodes(), nodes);
  }
}

TEST(PassFuseRmsNorm, LayerNormFirstLeavesNoRmsNormInside) {
  // x - mean normalized by its RMS is a LayerNorm; fused first, nothing is left for RMSNorm.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 8});
  ValueId d = b.binary(Op::kSub, x, b.reduce(Op::kReduceMean, x, {-1}));
  ValueId var = b.reduce(Op::kReduceMean, b.mul(d, d), {-1});
  ValueId sd = b.unary(Op::kSqrt, b.add(var, b.constant_scalar(1e-5f, DType::kF32)));
  b.output(b.mul(b.binary(Op::kDiv, d, sd), b.constant("w", random_tensor(DType::kF32, {8}, 1))));
  Graph g = b.build();
  Graph rms_only = g;
  const Graph original = g;
  EXPECT_EQ(fuse_layer_norms(g), 1);
  EXPECT_EQ(fuse_rms_norms(g), 0);
  // Alone, the RMSNorm pass finds the tail, which is still exact.
  EXPECT_EQ(fuse_rms_norms(rms_only), 1);
  EXPECT_EQ(count_ops(rms_only, Op::kRMSNormalization), 1);
  testing::expect_same_results(original, rms_only);
}

}  // namespace
}  // namespace gf
