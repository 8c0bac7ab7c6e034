// Constant folding and graph compaction.
#include "passes/fold_constants.h"

#include "passes/compact_graph.h"
#include "test_util.h"

namespace gf {
namespace {

using testing::expect_values;

std::vector<Tensor> evaluate(const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); }

TEST(FoldConstants, FoldsNodesWhoseInputsAreAllConstant) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2});
  ValueId c1 = b.constant("c1", testing::f32({2}, {1, -5}));
  ValueId c2 = b.constant("c2", testing::f32({2}, {2, 3}));
  ValueId folded = b.op1(Op::kRelu, {b.add(c1, c2)}, {}, "relu_const");  // relu([3, -2])
  b.output(b.add(x, folded), "y");
  Graph g = b.build();
  ASSERT_EQ(g.num_nodes(), 4u);  // add, relu, add, identity (the named output)
  FoldStats stats = fold_constants(g, evaluate);
  EXPECT_EQ(stats.folded_nodes, 2);
  EXPECT_EQ(stats.removed_nodes, 2);
  ASSERT_EQ(g.num_nodes(), 2u);
  const ValueId relu_out = g.find_value("relu_const");
  ASSERT_NE(relu_out, kNoValue);
  ASSERT_TRUE(g.value(relu_out).is_constant());
  expect_values(g.value(relu_out).constant, {2}, {3, 0});
  EXPECT_EQ(g.find_value("c1"), kNoValue);  // constants nothing reads are dropped
  Session s(std::move(g));
  expect_values(s.run({testing::f32({2}, {10, 20})})[0], {2}, {13, 20});
}

TEST(FoldConstants, ChainsFoldInOneSweepAndOutputsMayBecomeConstants) {
  GraphBuilder b;
  ValueId c = b.constant("c", testing::f32({3}, {-1, 2, -3}));
  ValueId r = b.unary(Op::kRelu, c);
  ValueId s = b.add(r, r);
  b.output(s);
  Graph g = b.build();
  fold_constants(g, evaluate);
  EXPECT_EQ(g.num_nodes(), 0u);
  ASSERT_EQ(g.outputs().size(), 1u);
  expect_values(g.value(g.outputs()[0]).constant, {3}, {0, 4, 0});
}

TEST(FoldConstants, LeavesNodesWithRuntimeInputsAndKeepsUnusedGraphInputs) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {Dim(std::string("n"))});
  b.input("unused", DType::kF32, {1});
  b.output(b.unary(Op::kRelu, x));
  Graph g = b.build();
  fold_constants(g, evaluate);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.inputs().size(), 2u);
}

TEST(FoldConstants, ResultsOverTheSizeCapStayComputed) {
  GraphBuilder b;
  ValueId c = b.constant("c", Tensor(DType::kF32, {1024}));
  b.output(b.unary(Op::kRelu, c));
  Graph g = b.build();
  fold_constants(g, evaluate, FoldOptions{.max_folded_bytes = 1024});
  EXPECT_EQ(g.num_nodes(), 1u);
  fold_constants(g, evaluate, FoldOptions{.max_folded_bytes = 4096});
  EXPECT_EQ(g.num_nodes(), 0u);
}

TEST(FoldConstants, EvaluatorErrorsPropagateButUnsupportedNodesStay) {
  GraphBuilder b;
  ValueId c = b.constant("c", testing::f32({1}, {1}));
  b.output(b.unary(Op::kRelu, c));
  Graph g = b.build();
  auto unsupported = [](const Node& n, std::span<const Tensor>) -> std::vector<Tensor> {
    throw Error(ErrorCode::kUnsupported, "no kernel for " + n.name);
  };
  fold_constants(g, unsupported);
  EXPECT_EQ(g.num_nodes(), 1u);
  auto broken = [](const Node& n, std::span<const Tensor>) -> std::vector<Tensor> {
    throw Error(ErrorCode::kInvalidArgument, "bad data in " + n.name);
  };
  testing::expect_error([&] { fold_constants(g, broken); }, ErrorCode::kInvalidArgument, {"bad data"});
}

TEST(FoldConstants, ShapeOfAStaticValueFoldsAndSoDoesItsShapeSubgraph) {
  // x: [batch, 6] bound to [2, 6]; y = Reshape(x, Concat(Gather(Shape(x), 0), [-1, 3])).
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {Dim(int64_t{2}), Dim(int64_t{6})});
  ValueId shape = b.op1(Op::kShape, {x});
  ValueId batch = b.op1(Op::kGather, {shape, b.constant_ints({0})}, {{"axis", int64_t{0}}});
  ValueId target = b.op1(Op::kConcat, {batch, b.constant_ints({-1, 3})}, {{"axis", int64_t{0}}});
  b.output(b.op1(Op::kReshape, {x, target}), "y");
  Graph g = b.build();
  fold_constants(g, evaluate);
  for (const Node& n : g.nodes()) EXPECT_NE(n.op, Op::kShape) << print_graph(g);
  ASSERT_EQ(g.num_nodes(), 2u) << print_graph(g);  // Reshape + the output Identity
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[2,2,3]");
  Session s(std::move(g));
  expect_values(s.run({testing::f32({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})})[0], {2, 2, 3},
                {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
}

TEST(FoldConstants, ShapeHonoursStartAndEnd) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {Dim(int64_t{2}), Dim(int64_t{3}), Dim(int64_t{4})});
  b.output(b.op1(Op::kShape, {x}, {{"start", int64_t{-2}}}), "tail");
  b.output(b.op1(Op::kSize, {x}), "size");
  Graph g = b.build();
  fold_constants(g, evaluate);
  expect_values(g.value(g.find_value("tail")).constant, {2}, {3, 4});
}

TEST(CompactGraph, RemovesDeadNodesAndKeepsNamesAndOrder) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2});
  b.op1(Op::kRelu, {x}, {}, "dead");
  ValueId live = b.op1(Op::kRelu, {x}, {}, "live");
  b.output(b.add(live, x));
  Graph g = b.build();
  remove_dead_nodes(g);
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.node(0).name, "live");
  EXPECT_EQ(g.find_value("dead"), kNoValue);
  verify_graph(g);
}

TEST(CompactGraph, ReplacementsCutTheirProducers) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2});
  ValueId r = b.op1(Op::kRelu, {x}, {}, "r");
  b.output(b.add(r, x), "y");
  Graph g = b.build();
  Graph c = compact_graph(g, {{g.find_value("r"), testing::f32({2}, {5, 6})}});
  EXPECT_EQ(c.num_nodes(), 2u);  // add + identity; the Relu is gone
  ASSERT_TRUE(c.value(c.find_value("r")).is_constant());
  Session s(std::move(c));
  expect_values(s.run({testing::f32({2}, {1, 1})})[0], {2}, {6, 7});
}

}  // namespace
}  // namespace gf
