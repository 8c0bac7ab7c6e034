// Build-time shape inference of the elementwise family through GraphBuilder: symbolic dims,
// unknown dims, dtypes of the results, and checks that can or cannot be made before the data is
// known. Ends with graphs run on the reference interpreter, binding the symbols.
#include "runtime/cpu/reference/interpreter.h"
#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;

Dim sym(const char* name) {
  return Dim(std::string(name));
}

TEST(ElementwiseInfer, UnaryOpsKeepSymbolicShapes) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kBF16, Shape{sym("batch"), sym("seq"), 64});
  for (Op op : {Op::kExp, Op::kGelu, Op::kRound, Op::kSigmoid, Op::kNeg, Op::kIdentity}) {
    EXPECT_EQ(b.type(b.unary(op, x)).to_string(), "bf16[batch,seq,64]") << op_name(op);
  }
  EXPECT_EQ(b.type(b.unary(Op::kIsNaN, x)).to_string(), "bool[batch,seq,64]");
  EXPECT_EQ(b.type(b.cast(x, DType::kI8)).to_string(), "i8[batch,seq,64]");
  const ValueId like = b.input("like", DType::kF64, Shape{sym("other")});
  EXPECT_EQ(b.type(b.op1(Op::kCastLike, {x, like})).to_string(), "f64[batch,seq,64]");
  const std::vector<ValueId> drop = b.op(Op::kDropout, {x}, {}, 2);
  EXPECT_EQ(b.type(drop[0]).to_string(), "bf16[batch,seq,64]");
  EXPECT_EQ(b.type(drop[1]).to_string(), "bool[batch,seq,64]");
}

TEST(ElementwiseInfer, BinaryOpsBroadcastSymbolicDims) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 1, 8});
  const ValueId y = b.input("y", DType::kF32, Shape{sym("seq"), 1});
  EXPECT_EQ(b.type(b.binary(Op::kSub, x, y)).to_string(), "f32[batch,seq,8]");
  EXPECT_EQ(b.type(b.binary(Op::kGreater, x, y)).to_string(), "bool[batch,seq,8]");
  const ValueId e = b.input("e", DType::kI64, Shape{sym("n")});
  EXPECT_EQ(b.type(b.binary(Op::kPow, x, e)).to_string(), "f32[batch,1,8]");
  // Two different symbols meet: the dim is unknown until shapes are bound.
  const ValueId z = b.input("z", DType::kF32, Shape{sym("m")});
  const ValueId w = b.input("w", DType::kF32, Shape{sym("k")});
  EXPECT_EQ(b.type(b.binary(Op::kMul, z, w)).to_string(), "f32[?]");
}

TEST(ElementwiseInfer, VariadicWhereClipAndPReluWithSymbols) {
  GraphBuilder b;
  const ValueId a = b.input("a", DType::kF16, Shape{sym("batch"), 1});
  const ValueId c = b.input("c", DType::kF16, Shape{4});
  const ValueId s = b.input("s", DType::kF16, Shape{});
  EXPECT_EQ(b.type(b.op1(Op::kMean, {a, c, s})).to_string(), "f16[batch,4]");
  const ValueId cond = b.input("cond", DType::kBool, Shape{sym("batch"), 1});
  EXPECT_EQ(b.type(b.op1(Op::kWhere, {cond, c, s})).to_string(), "f16[batch,4]");
  // A bound whose single dim is unknown may still turn out to be [1]: accepted.
  const ValueId lo = b.input("lo", DType::kF16, Shape{sym("one")});
  EXPECT_EQ(b.type(b.op1(Op::kClip, {a, lo})).to_string(), "f16[batch,1]");
  const ValueId x = b.input("x", DType::kF16, Shape{sym("batch"), 3, sym("h")});
  const ValueId slope = b.input("slope", DType::kF16, Shape{3, 1});
  EXPECT_EQ(b.type(b.op1(Op::kPRelu, {x, slope})).to_string(), "f16[batch,3,h]");
}

TEST(ElementwiseInfer, ProvablyWrongShapesFailAtBuildTime) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 3});
  const ValueId y = b.input("y", DType::kF32, Shape{sym("batch"), 4});
  expect_error(
      [&] {
        b.op1(Op::kAdd, {x, y}, {}, "bad_add");
      },
      ErrorCode::kShapeMismatch, {"bad_add", "Add", "f32[batch,3]", "f32[batch,4]"});
  const ValueId slope = b.input("slope", DType::kF32, Shape{2, 4});
  expect_error(
      [&] {
        b.op1(Op::kPRelu, {x, slope}, {}, "bad_prelu");
      },
      ErrorCode::kShapeMismatch, {"bad_prelu", "PRelu", "f32[batch,3]", "f32[2,4]"});
  // A slope of [2,3] fits only if batch is 2: accepted now, checked when batch is bound.
  const ValueId maybe = b.input("maybe", DType::kF32, Shape{2, 3});
  EXPECT_EQ(b.type(b.op1(Op::kPRelu, {x, maybe})).to_string(), "f32[batch,3]");
  expect_error(
      [&] { b.op1(Op::kExp, {b.input("i", DType::kI32, Shape{sym("n")})}, {}, "bad_exp"); },
      ErrorCode::kShapeMismatch, {"bad_exp", "Exp", "i32[n]"});
  EXPECT_EQ(b.graph().num_nodes(), 1u);  // only the accepted PRelu
}

TEST(ElementwiseInfer, DropoutTrainingIsCheckedWhenItsValueIsKnown) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{sym("n")});
  const ValueId yes = b.constant("yes", Tensor::scalar(true));
  expect_error(
      [&] {
        b.op1(Op::kDropout, {x, kNoValue, yes}, {}, "train_drop");
      },
      ErrorCode::kUnsupported, {"train_drop", "Dropout", "f32[n]"});
  // A training flag that is a graph input is only known at run time.
  const ValueId flag = b.input("flag", DType::kBool, Shape{});
  const ValueId y = b.op1(Op::kDropout, {x, kNoValue, flag}, {}, "late_drop");
  b.output(y);
  Graph g = b.build();
  const std::vector<Tensor> ok =
      ref::run_graph(g, std::vector<Tensor>{f32({2}, {1, 2}), Tensor::scalar(false)});
  expect_values(ok[0], {2}, {1, 2});
  expect_error(
      [&] {
        ref::run_graph(g, std::vector<Tensor>{f32({2}, {1, 2}), Tensor::scalar(true)});
      },
      ErrorCode::kUnsupported, {"late_drop", "Dropout", "training"});
}

TEST(ElementwiseInfer, SymbolicGraphRunsWithBoundShapes) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 3});
  const ValueId bias = b.constant("bias", f32({3}, {1, -1, 0.5f}));
  const ValueId h = b.op1(Op::kAdd, {x, bias});
  const ValueId act = b.gelu(h, /*tanh_approximation=*/true);
  const ValueId mask = b.binary(Op::kGreater, act, b.constant_scalar(0.0f, DType::kF32));
  const ValueId out = b.op1(Op::kWhere, {mask, act, b.constant_scalar(-1.0f, DType::kF32)});
  const ValueId half = b.cast(out, DType::kF16);
  b.output(half);
  Graph g = b.build();
  EXPECT_EQ(g.value(half).type.to_string(), "f16[batch,3]");
  const std::vector<Tensor> y =
      ref::run_graph(g, std::vector<Tensor>{f32({2, 3}, {0, 0, 0, -2, 2, 1})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].dtype(), DType::kF16);
  // gelu_tanh(1) = 0.841192, gelu_tanh(-1) < 0, gelu_tanh(0.5) = 0.345714, gelu_tanh(1.5) =
  // 1.399572; f16 rounding.
  expect_values(
      y[0], {2, 3},
      {0.8411919857864306, -1, 0.34571400982514394, -1, 0.8411919857864306, 1.3995715764013544},
      1e-3);
}

}  // namespace
}  // namespace gf
