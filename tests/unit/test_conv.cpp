// Conv: shape inference (symbolic and concrete), attribute validation and the reference kernel.
// Larger expected values come from onnx.reference (Conv, opset 23) on testing::pattern data.
#include <cmath>
#include <limits>

#include "test_linear_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::pattern;
using testing::run_op1;
using testing::to_dtype;

Attributes ints(const std::string& name, std::vector<int64_t> v) {
  return Attributes{{name, std::move(v)}};
}

TEST(Conv, TwoByTwoOnesKernelByHand) {
  // X = 1..9 as 3x3; a 2x2 kernel of ones sums each 2x2 block.
  Tensor x = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_values(run_op1(Op::kConv, {x, w}), {1, 1, 2, 2}, {12, 16, 24, 28});
  // With pads 1 all round and a bias of 0.5: the corners see one input each.
  Attributes attrs = ints("pads", {1, 1, 1, 1});
  Tensor y = run_op1(Op::kConv, {x, w, f32({1}, {0.5f})}, attrs);
  expect_values(
      y, {1, 1, 4, 4},
      {1.5, 3.5, 5.5, 3.5, 5.5, 12.5, 16.5, 9.5, 11.5, 24.5, 28.5, 15.5, 7.5, 15.5, 17.5, 9.5});
}

TEST(Conv, OneDimensionalWithPadsStridesDilationAndBias) {
  // onnx.reference: X = pattern([1,2,7], 1), W = pattern([3,2,3], 2), B = pattern([3], 3),
  // pads [2,1], strides [2], dilations [2].
  Attributes attrs{{"pads", std::vector<int64_t>{2, 1}},
                   {"strides", std::vector<int64_t>{2}},
                   {"dilations", std::vector<int64_t>{2}}};
  Tensor y =
      run_op1(Op::kConv, {pattern({1, 2, 7}, 1), pattern({3, 2, 3}, 2), pattern({3}, 3)}, attrs);
  expect_values(y, {1, 3, 3}, {2.25, 3.6875, 2.9375, -2.25, -1.75, -1.375, 3, 0.9375, 0.8125});
}

// onnx.reference: X = pattern([2,4,4,5], 4), W = pattern([4,2,3,2], 5), B = pattern([4], 6),
// group 2, pads [1,0,1,1], strides [2,2].
const std::vector<double> kGrouped2d = {
    -3.6875, 2.4375,  0.25,    3.625,   -1.375,  -0.4375, 5.5,     2.4375, 3.0625,  -4.375,
    -3.25,   -2.0625, 2.0625,  2,       -0.0625, -5.5,    -3.9375, 1.9375, -0.25,   -4.625,
    -3.8125, 0.9375,  -1.9375, -1.8125, 2.4375,  2.0625,  0,       -1.375, -4.75,   -1.8125,
    2.4375,  2.625,   3.5,     -3.25,   -0.5,    3.6875,  2,       1.9375, -0.5625, -3.9375,
    4.125,   1,       -4.625,  -4.125,  -2.8125, -1.9375, -3.1875, -0.5};

TEST(Conv, TwoDimensionalGroupedWithAsymmetricPads) {
  Attributes attrs{{"group", int64_t{2}},
                   {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                   {"strides", std::vector<int64_t>{2, 2}}};
  Tensor y = run_op1(Op::kConv,
                     {pattern({2, 4, 4, 5}, 4), pattern({4, 2, 3, 2}, 5), pattern({4}, 6)}, attrs);
  expect_values(y, {2, 4, 2, 3}, kGrouped2d);
}

TEST(Conv, EveryFloatDtype) {
  Attributes attrs{{"group", int64_t{2}},
                   {"pads", std::vector<int64_t>{1, 0, 1, 1}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"kernel_shape", std::vector<int64_t>{3, 2}}};
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(
        Op::kConv, {pattern({2, 4, 4, 5}, 4, t), pattern({4, 2, 3, 2}, 5, t), pattern({4}, 6, t)},
        attrs);
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 4, 2, 3}, kGrouped2d, testing::tolerance(t), 1e-2);
  }
}

TEST(Conv, AutoPadModes) {
  // onnx.reference: X = pattern([1,1,5,4], 7), W = pattern([2,1,3,3], 8). With stride 2 the
  // width needs one pad: after the input for SAME_UPPER, before it for SAME_LOWER.
  Tensor x = pattern({1, 1, 5, 4}, 7), w = pattern({2, 1, 3, 3}, 8);
  Attributes upper{{"auto_pad", std::string("SAME_UPPER")},
                   {"strides", std::vector<int64_t>{2, 2}}};
  expect_values(run_op1(Op::kConv, {x, w}, upper), {1, 2, 3, 2},
                {-1.0625, -0.5625, 5.6875, 2.875, -4.8125, -3.3125, -2.0625, 0.5625, 1.625, 0.6875,
                 -0.5625, 0.5});
  Attributes lower{{"auto_pad", std::string("SAME_LOWER")},
                   {"strides", std::vector<int64_t>{2, 2}}};
  expect_values(
      run_op1(Op::kConv, {x, w}, lower), {1, 2, 3, 2},
      {0, 0.1875, -4.375, -0.875, 2.4375, 3.0625, 1.625, 1.25, -0.125, -3.875, 0.25, 0.4375});
  Attributes valid{{"auto_pad", std::string("VALID")}};
  expect_values(run_op1(Op::kConv, {x, w}, valid), {1, 2, 3, 2},
                {2.6875, -5.5, 5.6875, -0.875, 0.5625, -0.3125, 4.9375, -0.5625, 1.625, -3.875,
                 0.75, -0.6875});
}

TEST(Conv, ThreeDimensional) {
  // onnx.reference: X = pattern([1,2,3,4,3], 9), W = pattern([2,2,2,3,2], 10),
  // B = pattern([2], 11), pads [1,0,1,0,1,0], strides [1,2,1].
  Attributes attrs{{"pads", std::vector<int64_t>{1, 0, 1, 0, 1, 0}},
                   {"strides", std::vector<int64_t>{1, 2, 1}}};
  Tensor y =
      run_op1(Op::kConv,
              {pattern({1, 2, 3, 4, 3}, 9), pattern({2, 2, 2, 3, 2}, 10), pattern({2}, 11)}, attrs);
  expect_values(y, {1, 2, 3, 2, 3},
                {1.375,  -0.75,   4.0625,  -0.6875, -0.75,   2.0625,  0.5625,  -1.625, -2.0625,
                 0.875,  1.3125,  -3.5625, -1.75,   2.0625,  -1.625,  0.8125,  1.3125, 1.3125,
                 0.25,   -1.6875, -2.125,  -2.5,    -0.5625, -2.0625, -2.4375, 6.5,    -3.625,
                 -1.125, -4.6875, -3.5625, 0.5,     -1.25,   6.5,     -0.9375, 0.6875, -4.6875});
}

TEST(Conv, DepthwiseWithDilation) {
  // onnx.reference: X = pattern([1,3,4,4], 12), W = pattern([3,1,2,2], 13), group 3,
  // dilations [2,2].
  Attributes attrs{{"group", int64_t{3}}, {"dilations", std::vector<int64_t>{2, 2}}};
  Tensor y = run_op1(Op::kConv, {pattern({1, 3, 4, 4}, 12), pattern({3, 1, 2, 2}, 13)}, attrs);
  expect_values(y, {1, 3, 2, 2},
                {-0.125, 0.4375, -1.9375, -0.5625, 0.6875, -2.5625, 0.6875, 0.6875, -1.0625, 2.4375,
                 -0.0625, -0.625});
}

TEST(Conv, EmptyBatchAndNoInputChannels) {
  expect_values(run_op1(Op::kConv, {Tensor(DType::kF32, {0, 2, 5}), pattern({3, 2, 2}, 1)}),
                {0, 3, 4}, {});
  // No input channels: every output is the bias.
  expect_values(run_op1(Op::kConv, {Tensor(DType::kF32, {1, 0, 3}), Tensor(DType::kF32, {2, 0, 2}),
                                    f32({2}, {1, -1})}),
                {1, 2, 2}, {1, 1, -1, -1});
}

TEST(Conv, NanReachesOnlyTheWindowsThatSeeIt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = f32({1, 1, 5}, {1, 2, std::nanf(""), 4, INFINITY});
  Tensor y = run_op1(Op::kConv, {x, f32({1, 1, 2}, {1, 1})});
  expect_values(y, {1, 1, 4}, {3, nan, nan, INFINITY});
}

TEST(Conv, Errors) {
  const Tensor x = pattern({1, 4, 5, 5}, 0);
  const Tensor w = pattern({2, 2, 3, 3}, 0);
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w});
      },
      ErrorCode::kShapeMismatch,
      {"Conv_under_test", "Conv", "f32[1,4,5,5]", "f32[2,2,3,3]", "4 channels"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w},
                {{"group", int64_t{2}}, {"kernel_shape", std::vector<int64_t>{3, 2}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "kernel_shape", "[3,2]", "[2,2,3,3]"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, pattern({3, 2, 3, 3}, 0)}, {{"group", int64_t{2}}});
      },
      ErrorCode::kShapeMismatch, {"Conv", "3 output channels", "2 groups"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w}, {{"group", int64_t{0}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "group"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w, pattern({3}, 0)}, {{"group", int64_t{2}}});
      },
      ErrorCode::kShapeMismatch, {"Conv", "B has 3 entries", "2 output channels"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w}, {{"group", int64_t{2}}, {"auto_pad", std::string("SAME")}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "auto_pad", "'SAME'"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w},
                {{"group", int64_t{2}},
                 {"auto_pad", std::string("VALID")},
                 {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "pads", "auto_pad=VALID"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w}, {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{1}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "strides", "2 entries"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w},
                {{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{1, 0}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "dilations", "below 1"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {x, w},
                {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{0, 0, -1, 0}}});
      },
      ErrorCode::kInvalidGraph, {"Conv", "pads", "below 0"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {pattern({1, 1, 2, 2}, 0), pattern({1, 1, 3, 3}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Conv", "f32[1,1,2,2]", "padded input size 2", "extent 3"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {pattern({4, 5}, 0), pattern({2, 5}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Conv", "rank >= 3"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {pattern({1, 2, 5}, 0), pattern({1, 2, 2, 2}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Conv", "rank of X"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {to_dtype(pattern({1, 1, 3}, 0), DType::kI32),
                            to_dtype(pattern({1, 1, 2}, 0), DType::kI32)});
      },
      ErrorCode::kShapeMismatch, {"Conv", "i32[1,1,3]", "float"});
  expect_error(
      [&] {
        run_op1(Op::kConv, {pattern({1, 1, 3}, 0), pattern({1, 1, 2}, 0, DType::kF16)});
      },
      ErrorCode::kShapeMismatch, {"Conv", "f32", "f16"});
}

TEST(Conv, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  const Dim batch(std::string("batch"));
  ValueId x = b.input("x", DType::kF32, Shape{batch, 3, 32, 32});
  ValueId w = b.constant("w", pattern({8, 3, 3, 3}, 1));
  Attributes attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                   {"strides", std::vector<int64_t>{2, 1}}};
  EXPECT_EQ(b.type(b.op1(Op::kConv, {x, w}, attrs)).to_string(), "f32[batch,8,16,32]");
  // Unknown spatial dims stay unknown; the rank and the filter count are still known.
  ValueId img = b.input("img", DType::kF32, Shape{batch, 3, Dim(std::string("h")), 20});
  EXPECT_EQ(b.type(b.op1(Op::kConv, {img, w})).to_string(), "f32[batch,8,?,18]");
  // Weights of unknown kernel size: no spatial dim can be known.
  ValueId wd =
      b.input("wd", DType::kF32, Shape{8, 3, Dim(std::string("k")), Dim(std::string("k"))});
  EXPECT_EQ(b.type(b.op1(Op::kConv, {x, wd})).to_string(), "f32[batch,8,?,?]");
  expect_error(
      [&] {
        b.op1(Op::kConv, {x, b.constant("w2", pattern({8, 4, 3, 3}, 1))}, {}, "stem");
      },
      ErrorCode::kShapeMismatch, {"stem", "Conv", "f32[batch,3,32,32]"});
}

}  // namespace
}  // namespace gf
