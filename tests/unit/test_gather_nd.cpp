// GatherND: the ONNX spec's examples, batch_dims 0/1/2, negative and out-of-range indices,
// empty tensors, every data dtype, inference errors, build-time shapes with symbolic dims, and
// a session run through the fused CPU path (GatherND fuses with the ops around it).
#include "test_layout_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_every_dtype;
using testing::expect_op_error;
using testing::expect_values;
using testing::f32;
using testing::i32;
using testing::i64;
using testing::iota_f32;
using testing::run_op1;

Attributes batch_dims(int64_t b) {
  return {{"batch_dims", b}};
}

Dim sym(const char* name) {
  return Dim(std::string(name));
}

// --- the spec's examples (ONNX GatherND, opset 13) ---

TEST(GatherND, SpecExample1TuplesAsLongAsTheRankPickScalars) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2}), i64({2, 2}, {0, 0, 1, 1})}), {2}, {0, 3});
}

TEST(GatherND, SpecExample2ShortTuplesPickRows) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2}), i64({2, 1}, {1, 0})}), {2, 2},
                {2, 3, 0, 1});
}

TEST(GatherND, SpecExample3And4PickSlicesOfRank3Data) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2, 2}), i64({2, 2}, {0, 1, 1, 0})}), {2, 2},
                {2, 3, 4, 5});
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2, 2}), i64({2, 1, 2}, {0, 1, 1, 0})}),
                {2, 1, 2}, {2, 3, 4, 5});
}

TEST(GatherND, SpecExample5BatchDims1) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2, 2}), i64({2, 1}, {1, 0})}, batch_dims(1)),
                {2, 2}, {2, 3, 4, 5});
}

// --- batch dims and index forms (values from onnx.reference's GatherND) ---

TEST(GatherND, BatchDims1IndexesWithinEachBatch) {
  // data [2,3,4], indices [2,2,1]: batch 0 takes rows 2 and 0, batch 1 row 1 twice.
  expect_values(
      run_op1(Op::kGatherND, {iota_f32({2, 3, 4}), i64({2, 2, 1}, {2, 0, 1, 1})}, batch_dims(1)),
      {2, 2, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 16, 17, 18, 19, 16, 17, 18, 19});
  // Tuples of two after one batch dim, with negative entries.
  expect_values(
      run_op1(Op::kGatherND, {iota_f32({2, 2, 3, 2}), i64({2, 2, 2}, {1, 0, 0, 2, 1, -1, 0, -3})},
              batch_dims(1)),
      {2, 2, 2}, {6, 7, 4, 5, 22, 23, 12, 13});
}

TEST(GatherND, BatchDims2SharesTwoLeadingDims) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({2, 2, 3, 2}), i64({2, 2, 1}, {2, 0, 1, -1})},
                        batch_dims(2)),
                {2, 2, 2}, {4, 5, 6, 7, 14, 15, 22, 23});
}

TEST(GatherND, OneDimensionalIndicesAreASingleTuple) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({3, 4}), i64({2}, {1, -1})}), {}, {7});
  expect_values(run_op1(Op::kGatherND, {iota_f32({3, 4}), i64({1}, {2})}), {4}, {8, 9, 10, 11});
}

TEST(GatherND, NegativeIndicesWrapPerAxis) {
  expect_values(run_op1(Op::kGatherND, {iota_f32({3, 4}), i64({3, 2}, {-1, -4, 0, -1, -3, 2})}),
                {3}, {8, 3, 2});
}

TEST(GatherND, EmptyIndicesOrSlicesGiveEmptyOutputs) {
  EXPECT_EQ(run_op1(Op::kGatherND, {iota_f32({3, 4}), i64({0, 1}, {})}).dims(),
            (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(run_op1(Op::kGatherND, {Tensor(DType::kF32, {2, 0}), i64({2, 1}, {1, -2})}).dims(),
            (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(
      run_op1(Op::kGatherND, {Tensor(DType::kF32, {0, 3}), i64({0, 1}, {})}, batch_dims(1)).dims(),
      (std::vector<int64_t>{0}));
}

TEST(GatherND, MovesEveryDataDtype) {
  expect_every_dtype(Op::kGatherND, iota_f32({2, 2, 2}), {i64({2, 2}, {0, 1, 1, 0})}, {}, {2, 2},
                     {2, 3, 4, 5});
  expect_every_dtype(Op::kGatherND, iota_f32({2, 3, 4}), {i64({2, 1}, {-1, 0})}, batch_dims(1),
                     {2, 4}, {8, 9, 10, 11, 12, 13, 14, 15});
}

TEST(GatherND, NaNAndInfAreMovedUntouched) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_values(run_op1(Op::kGatherND, {f32({3}, {nan, -inf, 1}), i64({2, 1}, {1, 0})}), {2},
                {-inf, nan});
}

// --- data-dependent errors (the kernel) ---

TEST(GatherND, OutOfRangeIndexFailsNamingItsPositionAndAxis) {
  expect_op_error(Op::kGatherND, {iota_f32({3, 4}), i64({2, 2}, {0, 1, 0, 4})}, {},
                  ErrorCode::kInvalidArgument,
                  {"GatherND_under_test", "GatherND", "f32[3,4]", "i64[2,2]", "index 4",
                   "indices[1,1]", "axis 1 of size 4"});
  expect_op_error(Op::kGatherND, {iota_f32({3, 4}), i64({1, 1}, {-4})}, {},
                  ErrorCode::kInvalidArgument, {"index -4", "indices[0,0]", "axis 0 of size 3"});
  // With batch dims the tuple's entries address data axes batch_dims, batch_dims + 1, ...
  expect_op_error(Op::kGatherND, {iota_f32({2, 3, 4}), i64({2, 1}, {2, 3})}, batch_dims(1),
                  ErrorCode::kInvalidArgument, {"index 3", "indices[1,0]", "axis 1 of size 3"});
  // Any index into an empty axis is out of range.
  expect_op_error(Op::kGatherND, {Tensor(DType::kF32, {0, 3}), i64({1, 1}, {0})}, {},
                  ErrorCode::kInvalidArgument, {"index 0", "axis 0 of size 0"});
}

// --- inference errors ---

TEST(GatherND, IndicesMustBeI64) {
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i32({1, 2}, {0, 1})}, {},
                  ErrorCode::kShapeMismatch, {"GatherND", "i32[1,2]", "expected one of i64"});
}

TEST(GatherND, ScalarsAreRefused) {
  expect_op_error(Op::kGatherND, {Tensor::scalar<float>(1.0f), i64({1, 0}, {})}, {},
                  ErrorCode::kShapeMismatch, {"GatherND", "f32[]", "scalar"});
  expect_op_error(Op::kGatherND, {iota_f32({2}), i64({}, {0})}, {}, ErrorCode::kShapeMismatch,
                  {"GatherND", "i64[]", "indices must have rank >= 1"});
}

TEST(GatherND, BatchDimsMustBeBelowBothRanks) {
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i64({2, 1}, {0, 1})}, batch_dims(2),
                  ErrorCode::kInvalidGraph, {"GatherND", "batch_dims 2", "[0, 2)"});
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i64({2, 1}, {0, 1})}, batch_dims(-1),
                  ErrorCode::kInvalidGraph, {"batch_dims -1"});
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i64({2, 1}, {0, 1})},
                  {{"batch_dims", std::string("one")}}, ErrorCode::kInvalidGraph,
                  {"GatherND_under_test", "f32[2,2]", "batch_dims"});
}

TEST(GatherND, TupleLengthMustFitTheNonBatchAxes) {
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i64({1, 3}, {0, 0, 0})}, {},
                  ErrorCode::kShapeMismatch,
                  {"GatherND", "f32[2,2]", "i64[1,3]", "3 entries", "1 to 2"});
  expect_op_error(Op::kGatherND, {iota_f32({2, 2, 2}), i64({2, 3}, {0, 0, 0, 0, 0, 0})},
                  batch_dims(1), ErrorCode::kShapeMismatch,
                  {"3 entries", "with batch_dims 1", "1 to 2"});
  expect_op_error(Op::kGatherND, {iota_f32({2, 2}), i64({2, 0}, {})}, {}, ErrorCode::kShapeMismatch,
                  {"0 entries"});
}

TEST(GatherND, BatchDimsOfDataAndIndicesMustAgree) {
  expect_op_error(Op::kGatherND, {iota_f32({2, 3}), i64({3, 1}, {0, 1, 2})}, batch_dims(1),
                  ErrorCode::kShapeMismatch,
                  {"GatherND", "f32[2,3]", "i64[3,1]", "batch dim 0 differs", "data has 2"});
}

// --- build-time inference ---

TEST(GatherND, SymbolicDimsFlowThroughAtBuildTime) {
  GraphBuilder b;
  ValueId data = b.input("data", DType::kF16, Shape{sym("batch"), sym("seq"), 768});
  ValueId rows = b.input("rows", DType::kI64, Shape{sym("batch"), sym("n"), 1});
  EXPECT_EQ(b.type(b.op1(Op::kGatherND, {data, rows}, batch_dims(1))).to_string(),
            "f16[batch,n,768]");
  ValueId pairs = b.input("pairs", DType::kI64, Shape{sym("n"), 2});
  EXPECT_EQ(b.type(b.op1(Op::kGatherND, {data, pairs})).to_string(), "f16[n,768]");
  // A static batch dim on either side wins over a symbol.
  ValueId four = b.input("four", DType::kI64, Shape{4, 2});
  EXPECT_EQ(b.type(b.op1(Op::kGatherND, {data, four}, batch_dims(1))).to_string(), "f16[4]");
}

TEST(GatherND, DynamicTupleLengthIsUnsupportedAtBuildTime) {
  GraphBuilder b;
  ValueId data = b.input("data", DType::kF32, Shape{sym("batch"), 8});
  ValueId idx = b.input("idx", DType::kI64, Shape{3, sym("k")});
  expect_error(
      [&] {
        b.op1(Op::kGatherND, {data, idx}, {}, "gnd");
      },
      ErrorCode::kUnsupported,
      {"'gnd'", "GatherND", "f32[batch,8]", "i64[3,k]", "output rank is unknown"});
}

TEST(GatherND, StaticMismatchesAreCaughtAtBuildTime) {
  GraphBuilder b;
  ValueId data = b.input("data", DType::kF32, Shape{2, sym("seq"), 4});
  ValueId idx = b.input("idx", DType::kI64, Shape{3, 1});
  expect_error(
      [&] {
        b.op1(Op::kGatherND, {data, idx}, batch_dims(1), "gnd");
      },
      ErrorCode::kShapeMismatch, {"'gnd'", "batch dim 0 differs"});
}

TEST(GatherND, RunsInASessionBetweenFusedOps) {
  // y = Relu(GatherND(x - 2, idx, batch_dims=1)): one generated kernel on the fused CPU path.
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{sym("batch"), 3, 2});
  ValueId idx = b.input("idx", DType::kI64, Shape{sym("batch"), 1});
  ValueId shifted = b.add(x, b.constant_scalar(-2.0f, DType::kF32));
  ValueId picked = b.op1(Op::kGatherND, {shifted, idx}, batch_dims(1));
  b.output(b.unary(Op::kRelu, picked), "y");
  Session session(b.build());
  const std::vector<Tensor> out = session.run({iota_f32({2, 3, 2}), i64({2, 1}, {0, -1})});
  expect_values(out[0], {2, 2}, {0, 0, 8, 9});
  EXPECT_EQ(session.stats().fused_kernels, 1);
  EXPECT_EQ(session.stats().reference_steps, 0);
  // The reference rejects index 3 of 3 rows; the kernel reads the last row (README: the fused
  // backends clamp such indices).
  expect_values(session.run({iota_f32({2, 3, 2}), i64({2, 1}, {0, 3})})[0], {2, 2}, {0, 0, 8, 9});
}

}  // namespace
}  // namespace gf
