// LayerNorm recognition.
#include "passes/fuse_layer_norm.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::random_tensor;

struct LnForm {
  bool square_by_mul = false;   // d * d instead of Pow(d, 2)
  bool reciprocal = false;      // d * Reciprocal(sqrt) instead of d / sqrt
  bool swap_operands = false;   // constants and scale first in commutative ops
  bool bias = true;
  int64_t axis = -1;            // the ReduceMean axes
  bool mean_minus_x = false;    // a near miss: mean - x
  bool eps_input = false;       // a near miss: eps is a graph input
  bool leak_d = false;          // a near miss: x - mean is also a graph output
  DType dtype = DType::kF32;
  Shape shape{2, 5, 8};
};

// The decomposition torch.onnx emits for layer_norm over the last axis.
Graph layer_norm_graph(const LnForm& f) {
  GraphBuilder b;
  ValueId x = b.input("x", f.dtype, f.shape);
  const int64_t d_model = f.shape[f.shape.rank() - 1].value();
  auto bin = [&](Op op, ValueId a, ValueId c) {
    return f.swap_operands && op != Op::kSub && op != Op::kDiv ? b.binary(op, c, a)
                                                               : b.binary(op, a, c);
  };
  ValueId mean = b.op1(Op::kReduceMean, {x, b.constant_ints({f.axis})}, {}, "ln/mean");
  ValueId d = f.mean_minus_x ? b.binary(Op::kSub, mean, x) : b.binary(Op::kSub, x, mean);
  ValueId sq = f.square_by_mul ? b.mul(d, d)
                               : b.binary(Op::kPow, d, b.constant_scalar(2.0f, f.dtype));
  ValueId var = b.reduce(Op::kReduceMean, sq, {f.axis});
  ValueId eps = f.eps_input ? b.input("eps", f.dtype, {}) : b.constant_scalar(1e-5f, f.dtype);
  ValueId sd = b.unary(Op::kSqrt, bin(Op::kAdd, var, eps));
  ValueId n = f.reciprocal ? bin(Op::kMul, d, b.unary(Op::kReciprocal, sd))
                           : b.binary(Op::kDiv, d, sd);
  ValueId scale = b.constant("scale", random_tensor(f.dtype, {d_model}, 11, 0.5, 1.5));
  ValueId y = bin(Op::kMul, n, scale);
  if (f.bias) y = bin(Op::kAdd, y, b.constant("bias", random_tensor(f.dtype, {d_model}, 12)));
  b.output(y);
  if (f.leak_d) b.output(d);
  return b.build();
}

void expect_fused(const LnForm& f, int inputs) {
  Graph g = layer_norm_graph(f);
  const Graph original = g;
  EXPECT_EQ(fuse_layer_norms(g), 1);
  ASSERT_EQ(count_ops(g, Op::kLayerNormalization), 1);
  EXPECT_EQ(count_ops(g, Op::kReduceMean), 0);
  EXPECT_EQ(count_ops(g, Op::kSqrt), 0);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).name, "ln/mean/fused_layernorm");
  EXPECT_EQ(static_cast<int>(g.node(0).inputs.size()), inputs);
  if (f.dtype == DType::kF32) {
    EXPECT_FLOAT_EQ(g.node(0).attrs.get_float("epsilon", 0), 1e-5f);
  }
  const double tol = f.dtype == DType::kF32 ? 1e-5 : f.dtype == DType::kF16 ? 1e-2 : 5e-2;
  testing::expect_same_results(original, g, tol, tol);
}

TEST(PassFuseLayerNorm, TorchScriptFormPowDivScaleBias) { expect_fused({}, 3); }

TEST(PassFuseLayerNorm, DynamoFormMulReciprocalCommutedOperands) {
  expect_fused({.square_by_mul = true, .reciprocal = true, .swap_operands = true, .axis = 2}, 3);
}

TEST(PassFuseLayerNorm, WithoutBias) { expect_fused({.bias = false}, 2); }

TEST(PassFuseLayerNorm, HalfPrecisionDtypes) {
  expect_fused({.dtype = DType::kF16}, 3);
  expect_fused({.dtype = DType::kBF16}, 3);
}

TEST(PassFuseLayerNorm, SymbolicBatchDims) {
  LnForm f{.shape = Shape{Dim(std::string("batch")), Dim(std::string("seq")), 8}};
  Graph g = layer_norm_graph(f);
  EXPECT_EQ(fuse_layer_norms(g), 1);
  EXPECT_EQ(count_ops(g, Op::kLayerNormalization), 1);
  const Shape& out = g.value(g.outputs()[0]).type.shape;
  EXPECT_EQ(out, f.shape);
}

TEST(PassFuseLayerNorm, AResidualAddAfterTheScaleIsNoBias) {
  // The decomposition without bias, followed by a residual add of x itself.
  Graph g = layer_norm_graph({.bias = false});
  const ValueId y = g.outputs()[0];
  const ValueId x = g.inputs()[0];
  const NodeId add = g.add_node(Op::kAdd, "residual", {y, x}, {"res"});
  g.set_outputs({g.node(add).outputs[0]});
  infer_shapes(g);
  const Graph original = g;
  EXPECT_EQ(fuse_layer_norms(g), 1);
  EXPECT_EQ(count_ops(g, Op::kLayerNormalization), 1);
  EXPECT_EQ(count_ops(g, Op::kAdd), 1);
  testing::expect_same_results(original, g);
}

TEST(PassFuseLayerNorm, NearMissesAreLeftAlone) {
  const LnForm misses[] = {
      {.axis = 1},               // not the last axis
      {.mean_minus_x = true},    // mean - x
      {.eps_input = true},       // eps not a constant
      {.leak_d = true},          // x - mean read outside the pattern
  };
  for (const LnForm& f : misses) {
    Graph g = layer_norm_graph(f);
    const size_t nodes = g.num_nodes();
    EXPECT_EQ(fuse_layer_norms(g), 0);
    EXPECT_EQ(g.num_nodes(), nodes);
    EXPECT_EQ(count_ops(g, Op::kLayerNormalization), 0);
  }
}

TEST(PassFuseLayerNorm, ReduceMeanWithoutKeepDimsIsNoMatch) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 1});
  // keepdims=0 over the last axis of [2, 1] still subtracts (broadcast [2] over [2, 1]).
  ValueId mean = b.reduce(Op::kReduceMean, x, {-1}, false);
  ValueId d = b.binary(Op::kSub, x, mean);
  ValueId var = b.reduce(Op::kReduceMean, b.mul(d, d), {-1});
  ValueId n = b.binary(Op::kDiv, d, b.unary(Op::kSqrt, b.add(var, b.constant_scalar(1e-5f, DType::kF32))));
  b.output(b.mul(n, b.constant_scalar(2.0f, DType::kF32)));
  Graph g = b.build();
  EXPECT_EQ(fuse_layer_norms(g), 0);
}

}  // namespace
}  // namespace gf
