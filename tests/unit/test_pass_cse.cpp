// Common subexpression elimination.
#include "passes/cse.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::f32;

TEST(PassCse, MergesIdenticalNodesAndChains) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3});
  ValueId a = b.unary(Op::kExp, b.unary(Op::kRelu, x));
  ValueId c = b.unary(Op::kExp, b.unary(Op::kRelu, x));
  b.output(b.add(a, c));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(eliminate_common_subexpressions(g), 2);
  EXPECT_EQ(count_ops(g, Op::kRelu), 1);
  EXPECT_EQ(count_ops(g, Op::kExp), 1);
  ASSERT_EQ(count_ops(g, Op::kAdd), 1);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kAdd) {
      EXPECT_EQ(n.inputs[0], n.inputs[1]);
    }
  }
  testing::expect_same_results(original, g);
}

TEST(PassCse, DifferentAttributesOrInputOrderAreNotMerged) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3});
  ValueId y = b.input("y", DType::kF32, {2, 3});
  ValueId s0 = b.op1(Op::kLeakyRelu, {x}, {{"alpha", 0.1f}});
  ValueId s1 = b.op1(Op::kLeakyRelu, {x}, {{"alpha", 0.2f}});
  ValueId d0 = b.binary(Op::kSub, x, y);
  ValueId d1 = b.binary(Op::kSub, y, x);
  b.output(b.add(b.add(s0, s1), b.add(d0, d1)));
  Graph g = b.build();
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  EXPECT_EQ(count_ops(g, Op::kLeakyRelu), 2);
  EXPECT_EQ(count_ops(g, Op::kSub), 2);
}

TEST(PassCse, ConstantsWithEqualBytesBecomeOne) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2});
  ValueId c1 = b.constant("c1", f32({2}, {1.5f, -2}));
  ValueId c2 = b.constant("c2", f32({2}, {1.5f, -2}));
  ValueId other_dims = b.constant("c3", f32({1, 2}, {1.5f, -2}));  // same bytes, other dims
  b.output(b.add(b.add(b.mul(x, c1), b.mul(x, c2)), other_dims));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(eliminate_common_subexpressions(g), 2);  // c2, then the second Mul
  EXPECT_EQ(count_ops(g, Op::kMul), 1);
  EXPECT_EQ(g.find_value("c2"), kNoValue);
  EXPECT_NE(g.find_value("c3"), kNoValue);
  testing::expect_same_results(original, g);
}

TEST(PassCse, LargeConstantsAreComparedByEveryByte) {
  // 64 KiB each: the hash reads only their heads and tails, which are equal here; the one
  // element that differs lies in the middle, so only the full comparison tells them apart.
  constexpr int64_t kN = 16384;
  std::vector<float> values(kN);
  for (int64_t i = 0; i < kN; ++i) values[static_cast<size_t>(i)] = static_cast<float>(i % 97) - 48;
  std::vector<float> middle_differs = values;
  middle_differs[kN / 2] += 1;
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {kN});
  ValueId same1 = b.constant("same1", f32({kN}, values));
  ValueId same2 = b.constant("same2", f32({kN}, values));
  ValueId other = b.constant("other", f32({kN}, middle_differs));
  b.output(b.add(b.add(b.mul(x, same1), b.mul(x, same2)), b.mul(x, other)));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(eliminate_common_subexpressions(g), 2);  // same2, then its Mul
  EXPECT_EQ(g.find_value("same2"), kNoValue);
  EXPECT_NE(g.find_value("other"), kNoValue);
  EXPECT_EQ(count_ops(g, Op::kMul), 2);
  testing::expect_same_results(original, g);
}

TEST(PassCse, DuplicatesThatAreGraphOutputsKeepTheirNames) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {3});
  b.output(b.unary(Op::kRelu, x));
  b.output(b.unary(Op::kRelu, x));
  Graph g = b.build();
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  EXPECT_EQ(count_ops(g, Op::kRelu), 2);
  EXPECT_NE(g.outputs()[0], g.outputs()[1]);
}

TEST(PassCse, DropoutIsNeverMerged) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {3});
  ValueId d0 = b.unary(Op::kDropout, x);
  ValueId d1 = b.unary(Op::kDropout, x);
  b.output(b.add(d0, d1));
  Graph g = b.build();
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  EXPECT_EQ(count_ops(g, Op::kDropout), 2);
}

}  // namespace
}  // namespace gf
