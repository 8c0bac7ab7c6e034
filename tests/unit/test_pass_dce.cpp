// Dead-code elimination as a pipeline pass.
#include "passes/dead_code.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;

TEST(PassDce, RemovesNodesNoOutputDependsOnAndKeepsInputs) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3});
  ValueId unused_input = b.input("unused", DType::kF32, {4});
  b.unary(Op::kExp, b.unary(Op::kRelu, x));  // dead chain
  b.unary(Op::kNeg, unused_input);           // dead too
  b.output(b.unary(Op::kTanh, x));
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(eliminate_dead_code(g), 3);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(count_ops(g, Op::kTanh), 1);
  EXPECT_EQ(g.inputs().size(), 2u);
  testing::expect_same_results(original, g);
}

TEST(PassDce, LiveGraphIsUnchanged) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {3});
  b.output(b.add(b.unary(Op::kRelu, x), x));
  Graph g = b.build();
  EXPECT_EQ(eliminate_dead_code(g), 0);
  EXPECT_EQ(g.num_nodes(), 2u);
}

}  // namespace
}  // namespace gf
