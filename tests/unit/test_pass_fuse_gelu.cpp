// GELU recognition, erf and tanh forms.
#include <cmath>

#include "passes/fuse_gelu.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::f32;

constexpr float kSqrt2 = 1.41421356f;

enum class Association { kXTimesOnePlusThenHalf, kHalfXThenTimes, kXTimesHalfOnePlus };

struct ErfForm {
  Association assoc = Association::kXTimesOnePlusThenHalf;
  bool multiply_by_inverse = false;  // x * 0.7071 instead of x / 1.4142
  bool swap_operands = false;
  float half = 0.5f;                 // near miss when not 0.5
  float root = kSqrt2;               // near miss when not sqrt(2)
  bool leak_erf = false;             // near miss: erf output is also a graph output
  DType dtype = DType::kF32;
};

Graph erf_gelu_graph(const ErfForm& f) {
  GraphBuilder b;
  ValueId x = b.input("x", f.dtype, {4, 6});
  auto c = [&](float v) { return b.constant_scalar(v, f.dtype); };
  auto mul = [&](ValueId p, ValueId q) { return f.swap_operands ? b.mul(q, p) : b.mul(p, q); };
  ValueId u = f.multiply_by_inverse ? b.op1(Op::kMul, {x, c(1.0f / f.root)}, {}, "gelu/scale")
                                    : b.op1(Op::kDiv, {x, c(f.root)}, {}, "gelu/scale");
  ValueId e = b.unary(Op::kErf, u);
  ValueId a = f.swap_operands ? b.add(c(1.0f), e) : b.add(e, c(1.0f));
  ValueId y = kNoValue;
  switch (f.assoc) {
    case Association::kXTimesOnePlusThenHalf: y = mul(mul(x, a), c(f.half)); break;
    case Association::kHalfXThenTimes: y = mul(mul(x, c(f.half)), a); break;
    case Association::kXTimesHalfOnePlus: y = mul(x, mul(c(f.half), a)); break;
  }
  b.output(y);
  if (f.leak_erf) b.output(e);
  return b.build();
}

struct TanhForm {
  bool cube_by_mul = false;  // x * (x * x) instead of Pow(x, 3)
  float coefficient = 0.044715f;
  DType dtype = DType::kF32;
};

// GPT-2's gelu_new exactly as the dynamo exporter writes it.
Graph tanh_gelu_graph(const TanhForm& f) {
  GraphBuilder b;
  ValueId x = b.input("x", f.dtype, {3, 10});
  auto c = [&](float v) { return b.constant_scalar(v, f.dtype); };
  ValueId half_x = b.op1(Op::kMul, {x, c(0.5f)}, {}, "mlp/mul_1");
  ValueId cube = f.cube_by_mul ? b.mul(x, b.mul(x, x)) : b.binary(Op::kPow, x, c(3.0f));
  ValueId inner = b.add(x, b.mul(cube, c(f.coefficient)));
  ValueId t = b.unary(Op::kTanh, b.mul(inner, c(0.7978846f)));
  b.output(b.mul(half_x, b.add(t, c(1.0f))));
  return b.build();
}

void expect_gelu(Graph g, const std::string& approximate, const std::string& name, double tol) {
  const Graph original = g;
  EXPECT_EQ(fuse_gelus(g), 1);
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).op, Op::kGelu);
  EXPECT_EQ(g.node(0).attrs.get_string("approximate", ""), approximate);
  EXPECT_EQ(g.node(0).name, name);
  testing::expect_same_results(original, g, tol, tol);
}

TEST(PassFuseGelu, ErfFormInEveryAssociation) {
  for (Association a : {Association::kXTimesOnePlusThenHalf, Association::kHalfXThenTimes,
                        Association::kXTimesHalfOnePlus}) {
    for (bool swap : {false, true}) {
      SCOPED_TRACE(static_cast<int>(a) * 2 + swap);
      expect_gelu(erf_gelu_graph({.assoc = a, .swap_operands = swap}), "none",
                  "gelu/scale/fused_gelu", 1e-6);
    }
  }
}

TEST(PassFuseGelu, ErfFormMultiplyingByInverseSqrt2) {
  expect_gelu(erf_gelu_graph({.multiply_by_inverse = true}), "none", "gelu/scale/fused_gelu",
              1e-6);
}

TEST(PassFuseGelu, ErfFormInHalfPrecision) {
  expect_gelu(erf_gelu_graph({.dtype = DType::kF16}), "none", "gelu/scale/fused_gelu", 5e-3);
}

TEST(PassFuseGelu, TanhFormAsGpt2Exports) {
  expect_gelu(tanh_gelu_graph({}), "tanh", "mlp/mul_1/fused_gelu", 1e-6);
  expect_gelu(tanh_gelu_graph({.cube_by_mul = true}), "tanh", "mlp/mul_1/fused_gelu", 1e-6);
  expect_gelu(tanh_gelu_graph({.dtype = DType::kBF16}), "tanh", "mlp/mul_1/fused_gelu", 5e-2);
}

TEST(PassFuseGelu, NearMissesAreLeftAlone) {
  std::vector<Graph> misses;
  misses.push_back(erf_gelu_graph({.half = 0.6f}));
  misses.push_back(erf_gelu_graph({.root = 1.7320508f}));
  misses.push_back(erf_gelu_graph({.root = 1.4142f}));  // off by 1e-5: beyond f32's tolerance
  misses.push_back(erf_gelu_graph({.leak_erf = true}));
  misses.push_back(tanh_gelu_graph({.coefficient = 0.05f}));
  for (Graph& g : misses) {
    const size_t nodes = g.num_nodes();
    EXPECT_EQ(fuse_gelus(g), 0);
    EXPECT_EQ(g.num_nodes(), nodes);
    EXPECT_EQ(count_ops(g, Op::kGelu), 0);
  }
}

TEST(PassFuseGelu, ProductOfAnotherValueIsNoGelu) {
  // y * 0.5 * (1 + erf(x / sqrt 2)): the outer x differs.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {5});
  ValueId y = b.input("y", DType::kF32, {5});
  ValueId e = b.unary(Op::kErf, b.binary(Op::kDiv, x, b.constant_scalar(kSqrt2, DType::kF32)));
  ValueId a = b.add(e, b.constant_scalar(1.0f, DType::kF32));
  b.output(b.mul(b.mul(y, a), b.constant_scalar(0.5f, DType::kF32)));
  Graph g = b.build();
  EXPECT_EQ(fuse_gelus(g), 0);
}

TEST(PassFuseGelu, ABroadcastingConstantThatChangesTheShapeIsNoGelu) {
  // 0.5 as a [1, 1] constant turns x [5] into [1, 5]: Gelu(x) would have the wrong shape.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {5});
  ValueId e = b.unary(Op::kErf, b.binary(Op::kDiv, x, b.constant_scalar(kSqrt2, DType::kF32)));
  ValueId a = b.add(e, b.constant_scalar(1.0f, DType::kF32));
  b.output(b.mul(b.mul(x, a), b.constant("half", f32({1, 1}, {0.5f}))));
  Graph g = b.build();
  EXPECT_EQ(fuse_gelus(g), 0);
}

}  // namespace
}  // namespace gf
