// Reference kernels and run-time inference of the data-movement ops: Reshape, Transpose,
// Squeeze, Unsqueeze, Flatten, Concat, Split.
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
using testing::run_op;
using testing::run_op1;

// --- Reshape ---

TEST(LayoutReshape, KeepsRowMajorOrderOnEveryDtype) {
  expect_every_dtype(Op::kReshape, iota_f32({2, 3}), {i64({2}, {3, 2})}, {}, {3, 2},
                     {0, 1, 2, 3, 4, 5});
}

TEST(LayoutReshape, ZeroCopiesTheInputDimAndMinusOneIsInferred) {
  Tensor y = run_op1(Op::kReshape, {iota_f32({2, 3, 4}), i64({2}, {0, -1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(y.element_as_double(23), 23.0);
  y = run_op1(Op::kReshape, {iota_f32({2, 3, 4}), i64({3}, {-1, 0, 2})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{4, 3, 2}));
}

TEST(LayoutReshape, AllowZeroMakesZeroALiteralDim) {
  Tensor y =
      run_op1(Op::kReshape, {f32({0, 3}, {}), i64({2}, {3, 0})}, {{"allowzero", int64_t{1}}});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{3, 0}));
  // Without allowzero the same shape copies dim 1 (3) and fails the element count.
  expect_op_error(Op::kReshape, {iota_f32({2, 3}), i64({2}, {3, 0})}, {}, ErrorCode::kShapeMismatch,
                  {"Reshape_under_test", "f32[2,3]", "element counts"});
}

TEST(LayoutReshape, EmptyShapeMakesAScalarAndEmptyTensorsReshape) {
  expect_values(run_op1(Op::kReshape, {f32({1, 1}, {7}), i64({0}, {})}), {}, {7});
  EXPECT_EQ(run_op1(Op::kReshape, {f32({0, 4}, {}), i64({2}, {-1, 2})}).dims(),
            (std::vector<int64_t>{0, 2}));
}

TEST(LayoutReshape, RejectsBadShapes) {
  const Tensor x = iota_f32({2, 3});
  expect_op_error(Op::kReshape, {x, i64({2}, {-1, -1})}, {}, ErrorCode::kShapeMismatch,
                  {"Reshape_under_test", "(Reshape)", "f32[2,3]", "more than one -1"});
  expect_op_error(Op::kReshape, {x, i64({1}, {4})}, {}, ErrorCode::kShapeMismatch,
                  {"f32[2,3]", "[4]"});
  expect_op_error(Op::kReshape, {x, i64({2}, {-1, 4})}, {}, ErrorCode::kShapeMismatch,
                  {"cannot reshape", "[-1,4]"});
  expect_op_error(Op::kReshape, {x, i64({2}, {-2, 3})}, {}, ErrorCode::kShapeMismatch,
                  {"invalid entry -2"});
  expect_op_error(Op::kReshape, {f32({6}, {1, 2, 3, 4, 5, 6}), i64({2}, {6, 0})}, {},
                  ErrorCode::kShapeMismatch, {"copies input dim 1", "rank 1"});
  expect_op_error(Op::kReshape, {f32({0, 3}, {}), i64({2}, {0, -1})}, {{"allowzero", int64_t{1}}},
                  ErrorCode::kInvalidGraph, {"both 0 and -1"});
  expect_op_error(Op::kReshape, {f32({0, 3}, {}), i64({2}, {0, -1})}, {}, ErrorCode::kShapeMismatch,
                  {"cannot infer the -1"});
  expect_op_error(Op::kReshape, {x, i32({2}, {3, 2})}, {}, ErrorCode::kShapeMismatch,
                  {"i32", "i64"});
  expect_op_error(Op::kReshape, {x, i64({1, 2}, {3, 2})}, {}, ErrorCode::kShapeMismatch,
                  {"shape (input 1) must be 1-D", "i64[1,2]"});
}

// --- Transpose ---

TEST(LayoutTranspose, DefaultReversesTheAxes) {
  expect_every_dtype(Op::kTranspose, iota_f32({2, 3}), {}, {}, {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(LayoutTranspose, PermutesRank3) {
  // out[k][i][j] = x[i][j][k] = 12i + 4j + k.
  const Tensor y =
      run_op1(Op::kTranspose, {iota_f32({2, 3, 4})}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(12 * i + 4 * j + k);
  expect_values(y, {4, 2, 3}, want);
}

TEST(LayoutTranspose, HandlesEmptyAndScalarInputs) {
  EXPECT_EQ(run_op1(Op::kTranspose, {f32({0, 3}, {})}).dims(), (std::vector<int64_t>{3, 0}));
  expect_values(run_op1(Op::kTranspose, {f32({}, {5})}), {}, {5});
}

TEST(LayoutTranspose, RejectsPermsThatAreNotPermutations) {
  const Tensor x = iota_f32({2, 3});
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0}, std::vector<int64_t>{0, 0}, std::vector<int64_t>{0, 2},
        std::vector<int64_t>{-1, 0}}) {
    expect_op_error(Op::kTranspose, {x}, {{"perm", perm}}, ErrorCode::kInvalidGraph,
                    {"Transpose_under_test", "f32[2,3]", "is not a permutation"});
  }
}

TEST(LayoutTranspose, WronglyTypedAttributeNamesTheNode) {
  expect_op_error(Op::kTranspose, {iota_f32({2, 3})}, {{"perm", std::string("1,0")}},
                  ErrorCode::kInvalidGraph, {"Transpose_under_test", "f32[2,3]", "perm"});
}

// --- Squeeze / Unsqueeze / Flatten ---

TEST(LayoutSqueeze, RemovesTheGivenAxesIncludingNegativeOnes) {
  expect_every_dtype(Op::kSqueeze, iota_f32({1, 3, 1}), {i64({2}, {0, -1})}, {}, {3}, {0, 1, 2});
}

TEST(LayoutSqueeze, WithoutAxesRemovesEverySizeOneDim) {
  EXPECT_EQ(run_op1(Op::kSqueeze, {iota_f32({1, 3, 1, 2})}).dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(run_op1(Op::kSqueeze, {f32({1, 0}, {})}).dims(), (std::vector<int64_t>{0}));
  EXPECT_EQ(run_op1(Op::kSqueeze, {f32({}, {4})}).dims(), (std::vector<int64_t>{}));
}

TEST(LayoutSqueeze, RejectsNonUnitRepeatedAndOutOfRangeAxes) {
  const Tensor x = iota_f32({1, 3});
  expect_op_error(Op::kSqueeze, {x, i64({1}, {1})}, {}, ErrorCode::kShapeMismatch,
                  {"Squeeze_under_test", "f32[1,3]", "cannot squeeze axis 1 of size 3"});
  expect_op_error(Op::kSqueeze, {x, i64({2}, {0, -2})}, {}, ErrorCode::kInvalidGraph,
                  {"repeat axis 0"});
  expect_op_error(Op::kSqueeze, {x, i64({1}, {2})}, {}, ErrorCode::kInvalidGraph,
                  {"axes 2 is out of range for rank 2"});
}

TEST(LayoutUnsqueeze, AxesCountInTheOutputRank) {
  expect_every_dtype(Op::kUnsqueeze, iota_f32({3}), {i64({2}, {0, -1})}, {}, {1, 3, 1}, {0, 1, 2});
  EXPECT_EQ(run_op1(Op::kUnsqueeze, {iota_f32({2, 3}), i64({1}, {1})}).dims(),
            (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(run_op1(Op::kUnsqueeze, {iota_f32({2, 3}), i64({2}, {-1, 0})}).dims(),
            (std::vector<int64_t>{1, 2, 3, 1}));
  EXPECT_EQ(run_op1(Op::kUnsqueeze, {f32({}, {1}), i64({1}, {0})}).dims(),
            (std::vector<int64_t>{1}));
}

TEST(LayoutUnsqueeze, RejectsRepeatedAndOutOfRangeAxes) {
  const Tensor x = iota_f32({2, 3});
  expect_op_error(Op::kUnsqueeze, {x, i64({2}, {0, 0})}, {}, ErrorCode::kInvalidGraph,
                  {"Unsqueeze_under_test", "f32[2,3]", "repeat axis 0"});
  expect_op_error(Op::kUnsqueeze, {x, i64({2}, {1, -3})}, {}, ErrorCode::kInvalidGraph,
                  {"repeat axis 1"});
  expect_op_error(Op::kUnsqueeze, {x, i64({1}, {3})}, {}, ErrorCode::kInvalidGraph,
                  {"axes 3 is out of range for rank 3"});
}

TEST(LayoutFlatten, SplitsTheDimsAtTheAxis) {
  const Tensor x = iota_f32({2, 3, 4});
  using Dims = std::vector<int64_t>;
  EXPECT_EQ(run_op1(Op::kFlatten, {x}).dims(), (Dims{2, 12}));
  EXPECT_EQ(run_op1(Op::kFlatten, {x}, {{"axis", int64_t{0}}}).dims(), (Dims{1, 24}));
  EXPECT_EQ(run_op1(Op::kFlatten, {x}, {{"axis", int64_t{3}}}).dims(), (Dims{24, 1}));
  EXPECT_EQ(run_op1(Op::kFlatten, {x}, {{"axis", int64_t{-1}}}).dims(), (Dims{6, 4}));
  EXPECT_EQ(run_op1(Op::kFlatten, {f32({2, 0, 3}, {})}).dims(), (Dims{2, 0}));
  expect_every_dtype(Op::kFlatten, iota_f32({2, 1, 2}), {}, {{"axis", int64_t{2}}}, {2, 2},
                     {0, 1, 2, 3});
}

TEST(LayoutFlatten, RejectsAxesOutsideMinusRankToRank) {
  for (int64_t axis : {int64_t{4}, int64_t{-4}}) {
    expect_op_error(Op::kFlatten, {iota_f32({2, 3, 4})}, {{"axis", axis}}, ErrorCode::kInvalidGraph,
                    {"Flatten_under_test", "f32[2,3,4]", "out of range [-3, 3]"});
  }
}

// --- Concat ---

TEST(LayoutConcat, JoinsAlongTheAxisOnEveryDtype) {
  // [[0],[1]] ++ [[2,3],[4,5]] along axis 1 (given as -1).
  for (DType t : testing::kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor y = run_op1(Op::kConcat,
                             {testing::to_dtype(f32({2, 1}, {0, 1}), t),
                              testing::to_dtype(f32({2, 2}, {2, 3, 4, 5}), t)},
                             {{"axis", int64_t{-1}}});
    std::vector<double> want{0, 2, 3, 1, 4, 5};
    if (t == DType::kBool) want = {0, 1, 1, 1, 1, 1};
    expect_values(y, {2, 3}, want);
  }
}

TEST(LayoutConcat, AcceptsEmptyInputsAndManyParts) {
  const Tensor y =
      run_op1(Op::kConcat,
              {f32({0, 2}, {}), f32({1, 2}, {1, 2}), f32({0, 2}, {}), f32({2, 2}, {3, 4, 5, 6})},
              {{"axis", int64_t{0}}});
  expect_values(y, {3, 2}, {1, 2, 3, 4, 5, 6});
  // Empty along another axis: the result is empty too.
  EXPECT_EQ(run_op1(Op::kConcat, {f32({0, 1}, {}), f32({0, 2}, {})}, {{"axis", int64_t{1}}}).dims(),
            (std::vector<int64_t>{0, 3}));
}

TEST(LayoutConcat, RejectsMismatchedInputsAndMissingAxis) {
  const Tensor a = iota_f32({2, 3});
  expect_op_error(Op::kConcat, {a, iota_f32({3, 3})}, {{"axis", int64_t{1}}},
                  ErrorCode::kShapeMismatch,
                  {"Concat_under_test", "f32[2,3]", "f32[3,3]", "differs", "dim 0"});
  expect_op_error(Op::kConcat, {a, iota_f32({6})}, {{"axis", int64_t{0}}},
                  ErrorCode::kShapeMismatch, {"rank 1"});
  expect_op_error(Op::kConcat, {a, i64({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"axis", int64_t{0}}},
                  ErrorCode::kShapeMismatch, {"same dtype", "f32", "i64"});
  expect_op_error(Op::kConcat, {a, a}, {}, ErrorCode::kInvalidGraph, {"'axis' is required"});
  expect_op_error(Op::kConcat, {a, a}, {{"axis", int64_t{2}}}, ErrorCode::kInvalidGraph,
                  {"axis 2 is out of range"});
  expect_op_error(Op::kConcat, {f32({}, {1}), f32({}, {2})}, {{"axis", int64_t{0}}},
                  ErrorCode::kShapeMismatch, {"scalars"});
}

// --- Split ---

TEST(LayoutSplit, SplitInputGivesTheSizes) {
  const auto out =
      run_op(Op::kSplit, {iota_f32({2, 5}), i64({3}, {1, 0, 4})}, {{"axis", int64_t{-1}}}, 3);
  expect_values(out[0], {2, 1}, {0, 5});
  expect_values(out[1], {2, 0}, {});
  expect_values(out[2], {2, 4}, {1, 2, 3, 4, 6, 7, 8, 9});
}

TEST(LayoutSplit, NumOutputsAllowsASmallerLastChunk) {
  const auto out = run_op(Op::kSplit, {iota_f32({7})}, {{"num_outputs", int64_t{3}}}, 3);
  expect_values(out[0], {3}, {0, 1, 2});
  expect_values(out[1], {3}, {3, 4, 5});
  expect_values(out[2], {1}, {6});
}

TEST(LayoutSplit, WithoutSplitOrNumOutputsSplitsEvenlyOverTheOutputs) {
  for (DType t : testing::kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const auto out = run_op(Op::kSplit, {testing::to_dtype(iota_f32({4, 2}), t)}, {}, 2);
    const bool b = t == DType::kBool;
    expect_values(out[0], {2, 2}, {0, 1, b ? 1.0 : 2, b ? 1.0 : 3});
    expect_values(out[1], {2, 2}, {b ? 1.0 : 4, b ? 1.0 : 5, b ? 1.0 : 6, b ? 1.0 : 7});
  }
}

TEST(LayoutSplit, RejectsInconsistentSplits) {
  const Tensor x = iota_f32({5, 2});
  expect_op_error(Op::kSplit, {x}, {}, ErrorCode::kShapeMismatch,
                  {"Split_under_test", "f32[5,2]", "cannot split size 5 evenly into 2"}, 2);
  expect_op_error(Op::kSplit, {x, i64({2}, {2, 2})}, {}, ErrorCode::kShapeMismatch,
                  {"sums to 4", "size 5"}, 2);
  expect_op_error(Op::kSplit, {x, i64({3}, {2, 2, 1})}, {}, ErrorCode::kShapeMismatch,
                  {"3 entries for 2 outputs"}, 2);
  expect_op_error(Op::kSplit, {x, i64({2}, {6, -1})}, {}, ErrorCode::kShapeMismatch,
                  {"negative entry"}, 2);
  expect_op_error(Op::kSplit, {x, i64({2}, {2, 3})}, {{"num_outputs", int64_t{2}}},
                  ErrorCode::kInvalidGraph, {"not both"}, 2);
  expect_op_error(Op::kSplit, {x}, {{"num_outputs", int64_t{3}}}, ErrorCode::kInvalidGraph,
                  {"num_outputs is 3", "2 outputs"}, 2);
  // ceil(5 / 4) = 2 leaves -1 for the last of 4 chunks.
  expect_op_error(Op::kSplit, {x}, {{"num_outputs", int64_t{4}}}, ErrorCode::kShapeMismatch,
                  {"into 4 chunks of 2"}, 4);
  expect_op_error(Op::kSplit, {x}, {{"axis", int64_t{2}}}, ErrorCode::kInvalidGraph,
                  {"axis 2 is out of range"}, 1);
}

}  // namespace
}  // namespace gf
