// Removal of nodes that compute nothing (Identity, Cast to the same dtype).
#include "passes/remove_no_ops.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;

TEST(PassRemoveNoOps, SameDtypeCastsAndIdentitiesGoAndReadersTakeTheirInput) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 3});
  // x -> Cast(f32) -> Identity -> Relu; a real Cast to f16 stays.
  ValueId y = b.unary(Op::kRelu, b.op1(Op::kIdentity, {b.cast(x, DType::kF32)}));
  b.output(b.cast(b.unary(Op::kSoftmax, y), DType::kF16), "half");
  Graph g = b.build();
  const Graph original = g;
  EXPECT_EQ(remove_no_ops(g), 2);
  // Left: Relu, Softmax, the Cast to f16, and the Identity that names the output "half".
  EXPECT_EQ(count_ops(g, Op::kIdentity), 1);
  EXPECT_EQ(count_ops(g, Op::kCast), 1);
  EXPECT_EQ(g.num_nodes(), 4u);
  for (NodeId id = 0; id < static_cast<NodeId>(g.num_nodes()); ++id) {
    if (g.node(id).op == Op::kRelu) {
      EXPECT_EQ(g.node(id).inputs[0], g.inputs()[0]);  // reads x itself
    }
  }
  testing::expect_same_results(original, g);
}

TEST(PassRemoveNoOps, AGraphOutputKeepsItsNode) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {4});
  const ValueId y = b.cast(b.unary(Op::kExp, x), DType::kF32);
  b.output(y);
  Graph g = b.build();
  const std::string name = g.value(g.outputs()[0]).name;
  EXPECT_EQ(remove_no_ops(g), 0);
  EXPECT_EQ(count_ops(g, Op::kCast), 1);
  EXPECT_EQ(g.value(g.outputs()[0]).name, name);
}

}  // namespace
}  // namespace gf
