// Reference kernels and run-time inference of the indexing ops: Slice, Gather, GatherElements,
// Expand, Tile, Pad, Trilu. Expected values come from the ONNX spec examples or numpy.
#include "test_layout_util.h"

namespace gf {
namespace {

using testing::expect_every_dtype;
using testing::expect_op_error;
using testing::expect_values;
using testing::f32;
using testing::i32;
using testing::i64;
using testing::iota_f32;
using testing::kI64Max;
using testing::kI64Min;
using testing::run_op1;

// --- Slice ---

TEST(LayoutSlice, SpecExamples) {
  const Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_values(run_op1(Op::kSlice, {x, i64({2}, {1, 0}), i64({2}, {2, 3}), i64({2}, {0, 1}),
                                     i64({2}, {1, 2})}),
                {1, 2}, {5, 7});
  expect_values(run_op1(Op::kSlice, {x, i64({2}, {0, 1}), i64({2}, {-1, 1000})}), {1, 3},
                {2, 3, 4});
}

TEST(LayoutSlice, NegativeStepsMatchNumpy) {
  // numpy: arange(24).reshape(2,3,4)[1::-1, ::-2, 3:0:-2]
  const Tensor y = run_op1(
      Op::kSlice, {iota_f32({2, 3, 4}), i64({3}, {1, -1, 3}), i64({3}, {kI64Min, kI64Min, 0}),
                   i64({3}, {0, 1, 2}), i64({3}, {-1, -2, -2})});
  expect_values(y, {2, 2, 2}, {23, 21, 15, 13, 11, 9, 3, 1});
}

TEST(LayoutSlice, ClampsSentinelsAndHugeSteps) {
  const Tensor x = iota_f32({5});
  // [INT64_MIN, INT64_MAX) forwards is everything; a huge step takes only the start.
  expect_values(run_op1(Op::kSlice, {x, i64({1}, {kI64Min}), i64({1}, {kI64Max})}), {5},
                {0, 1, 2, 3, 4});
  expect_values(run_op1(Op::kSlice, {x, i64({1}, {1}), i64({1}, {kI64Max}), i64({1}, {0}),
                                     i64({1}, {kI64Max})}),
                {1}, {1});
  // Backwards from past the end with step INT64_MIN: only the last element.
  expect_values(run_op1(Op::kSlice, {x, i64({1}, {kI64Max}), i64({1}, {kI64Min}), i64({1}, {0}),
                                     i64({1}, {kI64Min})}),
                {1}, {4});
  // Backwards, start clamped to dim-1, end -1+5=4 excludes everything.
  expect_values(
      run_op1(Op::kSlice, {x, i64({1}, {10}), i64({1}, {-1}), i64({1}, {0}), i64({1}, {-1})}), {0},
      {});
}

TEST(LayoutSlice, TakesI32IndicesAndEveryDtype) {
  expect_every_dtype(Op::kSlice, iota_f32({3, 4}),
                     {i32({2}, {1, -1}), i32({2}, {3, 0}), i32({2}, {0, -1}), i32({2}, {1, -2})},
                     {}, {2, 2}, {7, 5, 11, 9});
}

TEST(LayoutSlice, EmptyInputsAndEmptyRanges) {
  EXPECT_EQ(
      run_op1(Op::kSlice, {f32({0, 3}, {}), i64({1}, {1}), i64({1}, {3}), i64({1}, {1})}).dims(),
      (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(run_op1(Op::kSlice, {f32({0, 3}, {}), i64({1}, {0}), i64({1}, {kI64Min}), i64({1}, {0}),
                                 i64({1}, {-1})})
                .dims(),
            (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(run_op1(Op::kSlice, {iota_f32({4}), i64({1}, {3}), i64({1}, {1})}).dims(),
            (std::vector<int64_t>{0}));
}

TEST(LayoutSlice, RejectsBadOperands) {
  const Tensor x = iota_f32({2, 3});
  expect_op_error(Op::kSlice, {x, i64({1}, {0}), i64({1}, {1}), i64({1}, {0}), i64({1}, {0})}, {},
                  ErrorCode::kShapeMismatch,
                  {"Slice_under_test", "f32[2,3]", "steps [0] contain 0"});
  expect_op_error(Op::kSlice, {x, i64({2}, {0, 0}), i64({2}, {1, 1}), i64({2}, {1, -1})}, {},
                  ErrorCode::kInvalidGraph, {"repeat axis 1"});
  expect_op_error(Op::kSlice, {x, i64({2}, {0, 0}), i64({1}, {1})}, {}, ErrorCode::kShapeMismatch,
                  {"ends has 1 entries, starts has 2"});
  expect_op_error(Op::kSlice, {x, i64({1}, {0}), i32({1}, {1})}, {}, ErrorCode::kShapeMismatch,
                  {"same dtype", "i64", "i32"});
  expect_op_error(Op::kSlice, {x, i64({3}, {0, 0, 0}), i64({3}, {1, 1, 1})}, {},
                  ErrorCode::kShapeMismatch, {"3 entries for rank 2"});
  expect_op_error(Op::kSlice, {x, i64({1}, {0}), i64({1}, {1}), i64({1}, {2})}, {},
                  ErrorCode::kInvalidGraph, {"axes 2 is out of range"});
}

// --- Gather ---

TEST(LayoutGather, PicksRowsOnEveryDtype) {
  expect_every_dtype(Op::kGather, iota_f32({3, 2}), {i64({3}, {2, 0, -1})}, {}, {3, 2},
                     {4, 5, 0, 1, 4, 5});
}

TEST(LayoutGather, InsertsTheIndexShapeAtTheAxis) {
  // numpy: take(arange(12).reshape(3,4), [[3,-1],[0,1]], axis=1)
  const Tensor y =
      run_op1(Op::kGather, {iota_f32({3, 4}), i32({2, 2}, {3, -1, 0, 1})}, {{"axis", int64_t{-1}}});
  expect_values(y, {3, 2, 2}, {3, 3, 0, 1, 7, 7, 4, 5, 11, 11, 8, 9});
  // A scalar index drops the axis; an empty index list empties it.
  expect_values(run_op1(Op::kGather, {iota_f32({3, 4}), i64({}, {1})}, {{"axis", int64_t{1}}}), {3},
                {1, 5, 9});
  EXPECT_EQ(run_op1(Op::kGather, {iota_f32({3, 4}), i64({0}, {})}).dims(),
            (std::vector<int64_t>{0, 4}));
}

TEST(LayoutGather, OutOfRangeIndexFailsNamingIt) {
  expect_op_error(Op::kGather, {iota_f32({3, 2}), i64({2, 2}, {0, 1, 2, 3})}, {},
                  ErrorCode::kInvalidArgument,
                  {"Gather_under_test", "(Gather)", "f32[3,2]", "i64[2,2]", "index 3",
                   "indices[1,1]", "[-3, 3)", "axis 0"});
  expect_op_error(Op::kGather, {iota_f32({3}), i32({1}, {-4})}, {}, ErrorCode::kInvalidArgument,
                  {"index -4"});
  expect_op_error(Op::kGather, {f32({0, 2}, {}), i64({1}, {0})}, {}, ErrorCode::kInvalidArgument,
                  {"index 0", "of size 0"});
}

TEST(LayoutGather, RejectsBadIndexDtypeAndAxis) {
  expect_op_error(Op::kGather, {iota_f32({3}), f32({1}, {0})}, {}, ErrorCode::kShapeMismatch,
                  {"Gather_under_test", "f32", "i32, i64"});
  expect_op_error(Op::kGather, {iota_f32({3}), i64({1}, {0})}, {{"axis", int64_t{1}}},
                  ErrorCode::kInvalidGraph, {"axis 1 is out of range for rank 1"});
  expect_op_error(Op::kGather, {f32({}, {1}), i64({1}, {0})}, {}, ErrorCode::kShapeMismatch,
                  {"scalar"});
}

// --- GatherElements ---

TEST(LayoutGatherElements, SpecExamples) {
  expect_values(run_op1(Op::kGatherElements, {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})},
                        {{"axis", int64_t{1}}}),
                {2, 2}, {1, 1, 4, 3});
  expect_values(run_op1(Op::kGatherElements, {f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                                              i32({2, 3}, {1, 2, 0, 2, 0, 0})}),
                {2, 3}, {4, 8, 3, 7, 2, 3});
}

TEST(LayoutGatherElements, NegativeIndicesWrapOnEveryDtype) {
  expect_every_dtype(Op::kGatherElements, iota_f32({2, 3}), {i64({2, 2}, {-1, 0, 1, -3})},
                     {{"axis", int64_t{-1}}}, {2, 2}, {2, 0, 4, 3});
}

TEST(LayoutGatherElements, RejectsBadIndices) {
  expect_op_error(Op::kGatherElements, {iota_f32({2, 2}), i64({1, 2}, {0, 2})}, {},
                  ErrorCode::kInvalidArgument,
                  {"GatherElements_under_test", "index 2", "indices[0,1]"});
  expect_op_error(Op::kGatherElements, {iota_f32({2, 2}), i64({2}, {0, 1})}, {},
                  ErrorCode::kShapeMismatch, {"rank of data"});
  expect_op_error(Op::kGatherElements, {iota_f32({2, 2}), i64({1, 3}, {0, 1, 0})}, {},
                  ErrorCode::kShapeMismatch, {"indices dim 1 (3) exceeds the data dim (2)"});
}

// --- Expand ---

TEST(LayoutExpand, BroadcastsBothWaysOnEveryDtype) {
  // Input [3,1] with shape [2,1,4]: the 1 in the shape keeps the input's 3.
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want.push_back(i);
  expect_every_dtype(Op::kExpand, iota_f32({3, 1}), {i64({3}, {2, 1, 4})}, {}, {2, 3, 4}, want);
  // A shorter shape: [3,1] with [4] gives [3,4].
  EXPECT_EQ(run_op1(Op::kExpand, {iota_f32({3, 1}), i64({1}, {4})}).dims(),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(run_op1(Op::kExpand, {iota_f32({1}), i64({2}, {2, 0})}).dims(),
            (std::vector<int64_t>{2, 0}));
}

TEST(LayoutExpand, RejectsIncompatibleNegativeAndAbsurdShapes) {
  expect_op_error(Op::kExpand, {iota_f32({3}), i64({1}, {2})}, {}, ErrorCode::kShapeMismatch,
                  {"Expand_under_test", "f32[3]", "cannot broadcast"});
  expect_op_error(Op::kExpand, {iota_f32({1}), i64({1}, {-2})}, {}, ErrorCode::kShapeMismatch,
                  {"negative entry"});
  expect_op_error(Op::kExpand, {iota_f32({1}), i64({2}, {int64_t{1} << 21, int64_t{1} << 20})}, {},
                  ErrorCode::kInvalidArgument, {"Expand_under_test", "more than 2^40"});
}

// --- Tile ---

TEST(LayoutTile, RepeatsEachAxisOnEveryDtype) {
  // numpy: tile([[1,2],[3,4]], (2,3)) with values 0..3.
  expect_every_dtype(Op::kTile, iota_f32({2, 2}), {i64({2}, {2, 3})}, {}, {4, 6},
                     {0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3});
  EXPECT_EQ(run_op1(Op::kTile, {iota_f32({2, 2}), i64({2}, {0, 3})}).dims(),
            (std::vector<int64_t>{0, 6}));
}

TEST(LayoutTile, RejectsBadRepeats) {
  const Tensor x = iota_f32({2, 2});
  expect_op_error(Op::kTile, {x, i64({1}, {2})}, {}, ErrorCode::kShapeMismatch,
                  {"Tile_under_test", "f32[2,2]", "1 entries for rank 2"});
  expect_op_error(Op::kTile, {x, i64({2}, {1, -1})}, {}, ErrorCode::kShapeMismatch,
                  {"negative entry"});
  expect_op_error(Op::kTile, {x, i64({2}, {int64_t{1} << 30, int64_t{1} << 30})}, {},
                  ErrorCode::kInvalidArgument, {"more than 2^40"});
}

// --- Pad ---

const Tensor kPadData = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});

TEST(LayoutPad, SpecExamplesForEveryMode) {
  const Tensor pads = i64({4}, {0, 2, 0, 0});
  expect_values(run_op1(Op::kPad, {kPadData, pads, f32({}, {0})}), {3, 4},
                {0, 0, 1.0, 1.2, 0, 0, 2.3, 3.4, 0, 0, 4.5, 5.7});
  expect_values(run_op1(Op::kPad, {kPadData, pads}, {{"mode", std::string("reflect")}}), {3, 4},
                {1.0, 1.2, 1.0, 1.2, 2.3, 3.4, 2.3, 3.4, 4.5, 5.7, 4.5, 5.7});
  expect_values(run_op1(Op::kPad, {kPadData, pads}, {{"mode", std::string("edge")}}), {3, 4},
                {1.0, 1.0, 1.0, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7});
  expect_values(
      run_op1(Op::kPad, {kPadData, i64({4}, {2, 1, 1, 1})}, {{"mode", std::string("wrap")}}),
      {6, 4}, {3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0,
               3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5, 1.2, 1.0, 1.2, 1.0});
}

TEST(LayoutPad, PadsWiderThanTheAxisFollowNumpy) {
  const Tensor x = f32({3}, {1, 2, 3});
  // numpy.pad([1,2,3], (5,4), 'reflect') and (4,5) 'wrap'.
  expect_values(run_op1(Op::kPad, {x, i64({2}, {5, 4})}, {{"mode", std::string("reflect")}}), {12},
                {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3});
  expect_values(run_op1(Op::kPad, {x, i64({2}, {4, 5})}, {{"mode", std::string("wrap")}}), {12},
                {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2});
  expect_values(
      run_op1(Op::kPad, {f32({1}, {7}), i64({2}, {2, 1})}, {{"mode", std::string("reflect")}}), {4},
      {7, 7, 7, 7});
}

TEST(LayoutPad, NegativePadsCropBeforePadding) {
  const Tensor x = f32({5}, {1, 2, 3, 4, 5});
  expect_values(run_op1(Op::kPad, {x, i64({2}, {-1, -2})}), {2}, {2, 3});
  expect_values(run_op1(Op::kPad, {x, i64({2}, {-2, 2}), f32({}, {9})}), {5}, {3, 4, 5, 9, 9});
  // Edge after cropping [1] on the left repeats the new first element.
  expect_values(run_op1(Op::kPad, {x, i64({2}, {-1, 0})}, {{"mode", std::string("edge")}}), {4},
                {2, 3, 4, 5});
  // Crop first, then wrap the rest (onnxruntime gives the same).
  expect_values(run_op1(Op::kPad, {x, i64({2}, {-1, 3})}, {{"mode", std::string("wrap")}}), {7},
                {2, 3, 4, 5, 2, 3, 4});
  // Reflect reads the cropped [1,2], not the original.
  expect_values(run_op1(Op::kPad, {x, i64({2}, {2, -3})}, {{"mode", std::string("reflect")}}), {4},
                {1, 2, 1, 2});
}

TEST(LayoutPad, AxesInputSelectsTheAxesPadded) {
  const Tensor y =
      run_op1(Op::kPad, {iota_f32({2, 2}), i64({2}, {1, 0}), f32({}, {-1}), i32({1}, {-1})});
  expect_values(y, {2, 3}, {-1, 0, 1, -1, 2, 3});
}

TEST(LayoutPad, ConstantValueKeepsItsDtype) {
  const Tensor pads = i64({2}, {1, 1});
  const Tensor h = run_op1(Op::kPad, {testing::to_dtype(f32({1}, {2}), DType::kF16), pads,
                                      testing::to_dtype(f32({}, {0.5}), DType::kF16)});
  expect_values(h, {3}, {0.5, 2, 0.5});
  const Tensor b = run_op1(Op::kPad, {testing::to_dtype(f32({1}, {0}), DType::kBool), pads,
                                      testing::to_dtype(f32({}, {1}), DType::kBool)});
  expect_values(b, {3}, {1, 0, 1});
  expect_every_dtype(Op::kPad, iota_f32({2}), {pads}, {{"mode", std::string("edge")}}, {4},
                     {0, 0, 1, 1});
}

TEST(LayoutPad, RejectsBadPadsModesAndValues) {
  const Tensor x = iota_f32({2, 2});
  expect_op_error(Op::kPad, {x, i64({2}, {1, 1})}, {}, ErrorCode::kShapeMismatch,
                  {"Pad_under_test", "f32[2,2]", "pads has 2 entries; expected 4"});
  expect_op_error(Op::kPad, {x, i64({4}, {-3, 0, 0, 0})}, {}, ErrorCode::kShapeMismatch,
                  {"crop more than dim 0 of size 2"});
  expect_op_error(Op::kPad, {x, i64({4}, {0, 0, 0, 0})}, {{"mode", std::string("mirror")}},
                  ErrorCode::kInvalidGraph, {"unknown mode 'mirror'"});
  expect_op_error(Op::kPad, {f32({0}, {}), i64({2}, {1, 0})}, {{"mode", std::string("edge")}},
                  ErrorCode::kShapeMismatch, {"mode 'edge' cannot pad axis 0"});
  expect_op_error(Op::kPad, {x, i64({4}, {0, 0, 0, 0}), i64({}, {1})}, {},
                  ErrorCode::kShapeMismatch, {"same dtype"});
  expect_op_error(Op::kPad, {x, i64({4}, {0, 0, 0, 0}), f32({2}, {1, 2})}, {},
                  ErrorCode::kShapeMismatch, {"constant_value (input 2) must be a scalar"});
  expect_op_error(Op::kPad, {x, i64({4}, {int64_t{1} << 40, 0, 0, 0})}, {},
                  ErrorCode::kInvalidArgument, {"more than 2^40"});
  expect_op_error(Op::kPad, {x, i64({4}, {kI64Max, 0, 0, 0})}, {}, ErrorCode::kInvalidArgument,
                  {"overflow"});
}

// --- Trilu ---

TEST(LayoutTrilu, KeepsTheUpperOrLowerPart) {
  // numpy: triu(m, 1) and tril(m, -1) for m = arange(1, 13).reshape(3, 4).
  const Tensor m = f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expect_values(run_op1(Op::kTrilu, {m, i64({}, {1})}), {3, 4},
                {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  expect_values(run_op1(Op::kTrilu, {m, i64({}, {-1})}, {{"upper", int64_t{0}}}), {3, 4},
                {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  expect_values(run_op1(Op::kTrilu, {m, i64({}, {kI64Max})}), {3, 4}, std::vector<double>(12, 0.0));
}

TEST(LayoutTrilu, AppliesToEveryMatrixOfABatch) {
  expect_every_dtype(Op::kTrilu, iota_f32({2, 2, 2}), {}, {}, {2, 2, 2}, {0, 1, 0, 3, 4, 5, 0, 7});
  expect_every_dtype(Op::kTrilu, iota_f32({2, 2, 2}), {}, {{"upper", int64_t{0}}}, {2, 2, 2},
                     {0, 0, 2, 3, 4, 0, 6, 7});
  EXPECT_EQ(run_op1(Op::kTrilu, {f32({0, 3}, {})}).dims(), (std::vector<int64_t>{0, 3}));
}

TEST(LayoutTrilu, RejectsVectorsAndBadK) {
  expect_op_error(Op::kTrilu, {iota_f32({3})}, {}, ErrorCode::kShapeMismatch,
                  {"Trilu_under_test", "f32[3]", "rank >= 2"});
  expect_op_error(Op::kTrilu, {iota_f32({2, 2}), i32({}, {1})}, {}, ErrorCode::kShapeMismatch,
                  {"i32"});
  expect_op_error(Op::kTrilu, {iota_f32({2, 2}), i64({2}, {1, 2})}, {}, ErrorCode::kShapeMismatch,
                  {"k (input 1) must be a scalar"});
}

}  // namespace
}  // namespace gf
