// Build-time shape inference of the layout family through GraphBuilder: symbolic dims, operands
// whose data is unknown until run time, and the same graphs run with concrete inputs.
#include "test_layout_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::kI64Max;

Dim sym(const char* name) {
  return Dim(std::string(name));
}

// Expects adding node `name` to fail with `code` and every one of `parts` in the message.
void expect_build_error(GraphBuilder& b, Op op, const std::vector<ValueId>& inputs,
                        const Attributes& attrs, const std::string& name, ErrorCode code,
                        const std::vector<std::string>& parts) {
  expect_error([&] { b.op1(op, inputs, attrs, name); }, code, parts);
}

// A graph input holding a 1-D i64 operand of length n, so its values are unknown at build time.
ValueId runtime_ints(GraphBuilder& b, const std::string& name, int64_t n) {
  return b.input(name, DType::kI64, Shape{n});
}

TEST(LayoutSymbolic, ReshapeCopiesSymbolsAndResolvesMinusOneByCancelling) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), sym("seq"), 768});
  EXPECT_EQ(b.type(b.reshape(x, {0, 0, 12, 64})).to_string(), "f32[batch,seq,12,64]");
  EXPECT_EQ(b.type(b.reshape(x, {0, 0, -1, 64})).to_string(), "f32[batch,seq,12,64]");
  EXPECT_EQ(b.type(b.reshape(x, {-1, 0, 768})).to_string(), "f32[batch,seq,768]");
  // batch*seq has no single name: the -1 stays unknown.
  EXPECT_EQ(b.type(b.reshape(x, {-1, 768})).to_string(), "f32[?,768]");
  // The static rest still divides: 768 / 12 = 64 whatever batch and seq are.
  EXPECT_EQ(b.type(b.reshape(x, {0, 0, 12, -1})).to_string(), "f32[batch,seq,12,64]");
  expect_build_error(b, Op::kReshape, {x, b.constant_ints({0, 0, 7, -1})}, {}, "bad_reshape",
                     ErrorCode::kShapeMismatch,
                     {"bad_reshape", "Reshape", "f32[batch,seq,768]", "[0,0,7,-1]"});
}

TEST(LayoutSymbolic, ReshapeWithRuntimeShapeKnowsOnlyTheRank) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF16, Shape{sym("n"), 4});
  EXPECT_EQ(b.type(b.op1(Op::kReshape, {x, runtime_ints(b, "s", 3)})).to_string(), "f16[?,?,?]");
  ValueId dynamic_len = b.input("s2", DType::kI64, Shape{sym("k")});
  expect_build_error(b, Op::kReshape, {x, dynamic_len}, {}, "r", ErrorCode::kUnsupported,
                     {"'r'", "Reshape", "i64[k]", "output rank is unknown"});
}

TEST(LayoutSymbolic, ReshapeOfAShapeNodeRunsWithBoundDims) {
  // y = Reshape(x, Shape(like)): the shape is a node's output, unknown at build time.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("n"), 6});
  ValueId like = b.input("like", DType::kF32, Shape{sym("a"), sym("b")});
  ValueId shape = b.op1(Op::kShape, {like});
  EXPECT_EQ(b.type(shape).to_string(), "i64[2]");
  ValueId y = b.op1(Op::kReshape, {x, shape});
  EXPECT_EQ(b.type(y).to_string(), "f32[?,?]");
  b.output(y);
  const Graph g = b.build();
  EXPECT_EQ(g.node(0).op, Op::kShape);  // stays a node; folding is a pass's job
  const auto out = ref::run_graph(
      g, std::vector<Tensor>{testing::iota_f32({2, 6}), Tensor(DType::kF32, {3, 4})});
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(out[0].element_as_double(11), 11.0);
}

TEST(LayoutSymbolic, TransposeSqueezeUnsqueezeFlattenMoveSymbols) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kBF16, Shape{sym("batch"), 1, sym("seq"), 8});
  EXPECT_EQ(b.type(b.transpose(x, {2, 0, 3, 1})).to_string(), "bf16[seq,batch,8,1]");
  EXPECT_EQ(b.type(b.op1(Op::kTranspose, {x})).to_string(), "bf16[8,seq,1,batch]");
  EXPECT_EQ(b.type(b.op1(Op::kSqueeze, {x, b.constant_ints({1})})).to_string(),
            "bf16[batch,seq,8]");
  // A symbolic dim named in axes must be 1 at run time; inference takes it out.
  EXPECT_EQ(b.type(b.op1(Op::kSqueeze, {x, b.constant_ints({0, 1})})).to_string(), "bf16[seq,8]");
  expect_build_error(b, Op::kSqueeze, {x}, {}, "sq", ErrorCode::kUnsupported,
                     {"'sq'", "Squeeze", "bf16[batch,1,seq,8]", "dim 0 is 'batch'"});
  EXPECT_EQ(b.type(b.op1(Op::kSqueeze, {x, runtime_ints(b, "axes", 1)})).to_string(),
            "bf16[?,?,?]");
  EXPECT_EQ(b.type(b.op1(Op::kUnsqueeze, {x, b.constant_ints({-1, 0})})).to_string(),
            "bf16[1,batch,1,seq,8,1]");
  EXPECT_EQ(b.type(b.op1(Op::kUnsqueeze, {x, runtime_ints(b, "axes2", 2)})).to_string(),
            "bf16[?,?,?,?,?,?]");
  EXPECT_EQ(b.type(b.op1(Op::kFlatten, {x}, {{"axis", int64_t{2}}})).to_string(), "bf16[batch,?]");
  EXPECT_EQ(b.type(b.op1(Op::kFlatten, {x}, {{"axis", int64_t{3}}})).to_string(), "bf16[?,8]");
  ValueId z = b.input("z", DType::kBF16, Shape{4, 0, sym("n")});
  EXPECT_EQ(b.type(b.op1(Op::kFlatten, {z}, {{"axis", int64_t{2}}})).to_string(), "bf16[0,n]");
}

TEST(LayoutSymbolic, ConcatAndSplitAlongSymbolicAxes) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 3});
  ValueId y = b.input("y", DType::kF32, Shape{sym("batch"), 5});
  ValueId e = b.input("e", DType::kF32, Shape{0, 3});
  EXPECT_EQ(b.type(b.op1(Op::kConcat, {x, y}, {{"axis", int64_t{1}}})).to_string(), "f32[batch,8]");
  EXPECT_EQ(b.type(b.op1(Op::kConcat, {x, x}, {{"axis", int64_t{0}}})).to_string(), "f32[?,3]");
  EXPECT_EQ(b.type(b.op1(Op::kConcat, {e, x}, {{"axis", int64_t{0}}})).to_string(), "f32[batch,3]");
  ValueId s = b.input("s", DType::kF32, Shape{2, 4});
  EXPECT_EQ(b.type(b.op1(Op::kConcat, {x, s}, {{"axis", int64_t{1}}})).to_string(), "f32[2,7]");
  expect_build_error(b, Op::kConcat, {s, b.input("t", DType::kF32, Shape{3, 4})},
                     {{"axis", int64_t{1}}}, "cat", ErrorCode::kShapeMismatch,
                     {"'cat'", "Concat", "f32[2,4]", "f32[3,4]"});

  ValueId qkv = b.input("qkv", DType::kF32, Shape{sym("batch"), 12});
  auto parts = b.op(Op::kSplit, {qkv, b.constant_ints({4, 4, 4})}, {{"axis", int64_t{-1}}}, 3);
  EXPECT_EQ(b.type(parts[2]).to_string(), "f32[batch,4]");
  parts = b.op(Op::kSplit, {qkv}, {{"axis", int64_t{0}}}, 2);
  EXPECT_EQ(b.type(parts[1]).to_string(), "f32[?,12]");
  parts = b.op(Op::kSplit, {qkv, runtime_ints(b, "sizes", 2)}, {{"axis", int64_t{1}}}, 2);
  EXPECT_EQ(b.type(parts[0]).to_string(), "f32[batch,?]");
}

TEST(LayoutSymbolic, SliceKeepsWholeSymbolicDims) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 10, sym("seq")});
  ValueId starts = b.constant_ints({0, 2, 1});
  ValueId ends = b.constant_ints({kI64Max, -3, kI64Max});
  EXPECT_EQ(b.type(b.op1(Op::kSlice, {x, starts, ends})).to_string(), "f32[batch,5,?]");
  // Reversing a whole symbolic dim keeps it too.
  EXPECT_EQ(b.type(b.op1(Op::kSlice, {x, b.constant_ints({-1}), b.constant_ints({testing::kI64Min}),
                                      b.constant_ints({2}), b.constant_ints({-1})}))
                .to_string(),
            "f32[batch,10,seq]");
  EXPECT_EQ(b.type(b.op1(Op::kSlice, {x, runtime_ints(b, "s", 1), runtime_ints(b, "e", 1),
                                      b.constant_ints({1})}))
                .to_string(),
            "f32[batch,?,seq]");
  EXPECT_EQ(b.type(b.op1(Op::kSlice, {x, runtime_ints(b, "s2", 1), runtime_ints(b, "e2", 1)}))
                .to_string(),
            "f32[?,10,seq]");
}

TEST(LayoutSymbolic, GatherAndGatherElementsCarryIndexShapes) {
  GraphBuilder b;
  ValueId table = b.input("wte", DType::kF32, Shape{50257, 768});
  ValueId ids = b.input("ids", DType::kI64, Shape{sym("batch"), sym("seq")});
  EXPECT_EQ(b.type(b.op1(Op::kGather, {table, ids})).to_string(), "f32[batch,seq,768]");
  ValueId x = b.input("x", DType::kF32, Shape{sym("n"), 4});
  ValueId idx = b.input("idx", DType::kI32, Shape{sym("n"), 2});
  EXPECT_EQ(b.type(b.op1(Op::kGatherElements, {x, idx}, {{"axis", int64_t{1}}})).to_string(),
            "f32[n,2]");
}

TEST(LayoutSymbolic, ExpandTilePadTriluWithSymbols) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 1, 768});
  EXPECT_EQ(b.type(b.op1(Op::kExpand, {x, b.constant_ints({1, 16, 1})})).to_string(),
            "f32[batch,16,768]");
  EXPECT_EQ(b.type(b.op1(Op::kExpand, {x, runtime_ints(b, "shape", 4)})).to_string(),
            "f32[?,?,?,768]");
  EXPECT_EQ(b.type(b.op1(Op::kTile, {x, b.constant_ints({1, 3, 2})})).to_string(),
            "f32[batch,3,1536]");
  EXPECT_EQ(b.type(b.op1(Op::kTile, {x, b.constant_ints({2, 1, 1})})).to_string(), "f32[?,1,768]");
  // Zero pads keep the symbolic batch; 768 gains 1 and loses 1.
  EXPECT_EQ(b.type(b.op1(Op::kPad, {x, b.constant_ints({0, 0, 1, 0, 2, -1})})).to_string(),
            "f32[batch,3,768]");
  EXPECT_EQ(b.type(b.op1(Op::kPad, {x, b.constant_ints({1, 0, 0, 0, 0, 0})})).to_string(),
            "f32[?,1,768]");
}

TEST(LayoutSymbolic, PadRejectsWrongLengthsAtBuildTime) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 4});
  expect_build_error(b, Op::kPad, {x, b.constant_ints({1, 1})}, {}, "p", ErrorCode::kShapeMismatch,
                     {"'p'", "Pad", "f32[batch,4]", "expected 4"});
  ValueId axes = b.constant_ints({0});
  EXPECT_EQ(b.type(b.op1(Op::kPad, {x, b.constant_ints({1, 1}), kNoValue, axes})).to_string(),
            "f32[?,4]");
  EXPECT_EQ(b.type(b.op1(Op::kTrilu, {x})).to_string(), "f32[batch,4]");
}

TEST(LayoutSymbolic, ShapeProducersAtBuildTime) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 3, 4});
  EXPECT_EQ(b.type(b.op1(Op::kShape, {x}, {{"start", int64_t{1}}})).to_string(), "i64[2]");
  EXPECT_EQ(b.type(b.op1(Op::kSize, {x})).to_string(), "i64[]");
  EXPECT_EQ(b.type(b.op1(Op::kConstantOfShape, {runtime_ints(b, "shape", 2)})).to_string(),
            "f32[?,?]");
  EXPECT_EQ(b.type(b.op1(Op::kConstantOfShape, {b.constant_ints({2, 5})},
                         {{"value", testing::i64({1}, {1})}}))
                .to_string(),
            "i64[2,5]");
  ValueId limit = b.input("limit", DType::kI64, Shape{});
  ValueId zero = b.constant("zero", testing::i64({}, {0}));
  ValueId one = b.constant("one", testing::i64({}, {1}));
  ValueId r = b.op1(Op::kRange, {zero, limit, one});
  EXPECT_EQ(b.type(r).to_string(), "i64[?]");
  EXPECT_EQ(
      b.type(b.op1(Op::kRange, {zero, b.constant("ten", testing::i64({}, {10})), one})).to_string(),
      "i64[10]");
  expect_build_error(b, Op::kRange, {zero, zero, zero}, {}, "rg", ErrorCode::kInvalidArgument,
                     {"'rg'", "Range", "delta must not be 0"});
  expect_build_error(b, Op::kConstantOfShape, {b.constant_ints({1 << 30, 1 << 30, 4})}, {}, "huge",
                     ErrorCode::kInvalidArgument, {"'huge'", "ConstantOfShape", "more than 2^40"});
}

TEST(LayoutSymbolic, RunGraphBindsSymbolicDims) {
  // x[batch, 12, 64] -> Reshape [0, -1] -> Transpose -> Slice rows 1.. -> Concat with itself.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 2, 3});
  ValueId flat = b.reshape(x, {0, -1});
  EXPECT_EQ(b.type(flat).to_string(), "f32[batch,6]");
  ValueId t = b.transpose(flat, {1, 0});
  ValueId s = b.op1(Op::kSlice, {t, b.constant_ints({4}), b.constant_ints({kI64Max})});
  EXPECT_EQ(b.type(s).to_string(), "f32[2,batch]");
  ValueId c = b.op1(Op::kConcat, {s, s}, {{"axis", int64_t{1}}});
  EXPECT_EQ(b.type(c).to_string(), "f32[2,?]");
  b.output(c);
  const Graph g = b.build();
  const auto out = ref::run_graph(g, std::vector<Tensor>{testing::iota_f32({2, 2, 3})});
  // flat = [[0..5],[6..11]]; rows 4, 5 of its transpose: [4,10], [5,11].
  expect_values(out[0], {2, 4}, {4, 10, 4, 10, 5, 11, 5, 11});
}

}  // namespace
}  // namespace gf
