#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;

TEST(Graph, BuilderInfersSymbolicBroadcast) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 4});
  ValueId y = b.input("y", DType::kF32, Shape{4});
  ValueId z = b.add(x, y);
  EXPECT_EQ(b.type(z).to_string(), "f32[batch,4]");
  ValueId w = b.input("w", DType::kF32, Shape{3, 1, 1});
  EXPECT_EQ(b.type(b.add(z, w)).to_string(), "f32[3,batch,4]");
}

TEST(Graph, BuilderRejectsImpossibleBroadcastNamingNodeAndShapes) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{2, 3});
  ValueId y = b.input("y", DType::kF32, Shape{4});
  expect_error([&] { b.op1(Op::kAdd, {x, y}, {}, "bad_add"); }, ErrorCode::kShapeMismatch,
               {"bad_add", "Add", "f32[2,3]", "f32[4]"});
  // The rejected node left no trace.
  EXPECT_EQ(b.graph().num_nodes(), 0u);
}

TEST(Graph, BuilderRejectsDtypeMismatch) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{2});
  ValueId y = b.input("y", DType::kI64, Shape{2});
  expect_error([&] { b.add(x, y); }, ErrorCode::kShapeMismatch, {"Add", "f32", "i64"});
}

TEST(Graph, VerifierRejectsWrongArity) {
  Graph g;
  ValueId x = g.add_input("x", TensorType{DType::kF32, Shape{2}});
  g.add_node(Op::kAdd, "lonely_add", {x}, {"y"});
  expect_error([&] { verify_graph(g); }, ErrorCode::kInvalidGraph, {"lonely_add", "Add", "2"});
}

TEST(Graph, VerifierRejectsCycles) {
  Graph g;
  ValueId x = g.add_input("x", TensorType{DType::kF32, Shape{2}});
  // a = Add(x, b); b = Relu(a): a cycle through both nodes.
  g.add_node(Op::kAdd, "a_node", {x, kNoValue}, {"a"});
  g.add_node(Op::kRelu, "b_node", {g.find_value("a")}, {"b"});
  g.node(0).inputs[1] = g.find_value("b");
  expect_error([&] { verify_graph(g); }, ErrorCode::kInvalidGraph, {"cycle"});
}

TEST(Graph, VerifierRejectsDanglingValues) {
  Graph g;
  ValueId x = g.add_input("x", TensorType{DType::kF32, Shape{2}});
  g.add_node(Op::kRelu, "r", {x}, {"y"});
  g.node(0).inputs[0] = 57;
  expect_error([&] { verify_graph(g); }, ErrorCode::kInvalidGraph, {"r"});
}

TEST(Graph, DuplicateNamesAreRejected) {
  Graph g;
  g.add_input("x", TensorType{DType::kF32, Shape{2}});
  expect_error([&] { g.add_input("x", TensorType{DType::kF32, Shape{2}}); },
               ErrorCode::kInvalidGraph, {"'x'"});
}

TEST(Graph, PrinterShowsTypesOpsAndNames) {
  GraphBuilder b("tiny");
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 3});
  ValueId y = b.op1(Op::kRelu, {x}, {}, "act");
  b.output(y);
  Graph g = b.build();
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("graph tiny"), std::string::npos) << text;
  EXPECT_NE(text.find("input %x: f32[n,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("%act: f32[n,3] = Relu(%x)  # act"), std::string::npos) << text;
}

}  // namespace
}  // namespace gf
