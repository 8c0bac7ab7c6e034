// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool: shape inference, attribute
// validation and the reference kernels. Unless a comment says otherwise, larger expected values
// come from onnx.reference (opset 22) on testing::pattern data, and ONNX Runtime 1.23 agrees.
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Attributes kernel(std::vector<int64_t> k) {
  return Attributes{{"kernel_shape", std::move(k)}};
}

// MaxPool

TEST(PoolMax, PaddingNeverWins) {
  // All inputs negative: a zero from the padding must not appear.
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2}}, {"pads", std::vector<int64_t>{1, 1}}};
  Tensor y = run_op1(Op::kMaxPool, {f32({1, 1, 3}, {-1, -2, -3})}, attrs);
  expect_values(y, {1, 1, 4}, {-1, -1, -2, -3});
}

TEST(PoolMax, TwoDimensionalByHand) {
  // 2x2 windows, stride 2, over 1..16 as 4x4.
  Tensor x = f32({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                   {"strides", std::vector<int64_t>{2, 2}}};
  expect_values(run_op1(Op::kMaxPool, {x}, attrs), {1, 1, 2, 2}, {6, 8, 14, 16});
}

TEST(PoolMax, PadsAndStrides) {
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{3, 2}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 0}},
                   {"strides", std::vector<int64_t>{2, 2}}};
  expect_values(
      run_op1(Op::kMaxPool, {pattern({1, 2, 5, 5}, 1)}, attrs), {1, 2, 3, 3},
      {1.5, 1, 1.25, 1.5, 1.25, 1.5, -0.5, 1.25, 1.5, 0.75, 1.5, 1.25, 1, 1.5, 1.5, 1, 1.25, 1.5});
}

TEST(PoolMax, CeilModeWithDilation) {
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"dilations", std::vector<int64_t>{1, 2}},
                   {"ceil_mode", int64_t{1}}};
  expect_values(run_op1(Op::kMaxPool, {pattern({1, 2, 5, 5}, 1)}, attrs), {1, 2, 3, 2},
                {1.5, -0.25, 0.75, 1, -1.25, -1, 1, 1.25, 1.25, 1.5, 0.25, 0.5});
}

TEST(PoolMax, CeilModeDropsAWindowStartingInTheEndPadding) {
  // in 4, kernel 2, stride 2, pads [0,1]: ceil((4 + 1 - 2) / 2) + 1 = 3, but window 2 would
  // start at 4, inside the end padding, so there are 2 outputs.
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2}},
                   {"strides", std::vector<int64_t>{2}},
                   {"pads", std::vector<int64_t>{0, 1}},
                   {"ceil_mode", int64_t{1}}};
  expect_values(run_op1(Op::kMaxPool, {f32({1, 1, 4}, {1, 5, 2, 3})}, attrs), {1, 1, 2}, {5, 3});
  // Without the end pad the ceil keeps a partial last window: in 5 -> 3 outputs.
  attrs.set("pads", std::vector<int64_t>{0, 0});
  expect_values(run_op1(Op::kMaxPool, {f32({1, 1, 5}, {1, 5, 2, 3, 4})}, attrs), {1, 1, 3},
                {5, 3, 4});
}

TEST(PoolMax, SameUpperAndSameLower) {
  Tensor x = pattern({1, 2, 5, 5}, 1);
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 3}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"auto_pad", std::string("SAME_UPPER")}};
  expect_values(run_op1(Op::kMaxPool, {x}, attrs), {1, 2, 3, 3},
                {1.5, 1.25, 1.25, 1.25, 1.5, 1.5, 0.25, 0.5, 0.5, 1.5, 1.5, 1.25, 1, 1.25, 1.5, 0,
                 0.25, 0.5});
  // SAME_LOWER: ceil(5 / 2) = 3 outputs per the spec. onnx.reference 1.23 gives 2 here (it uses
  // floor for SAME_LOWER), so these values are ONNX Runtime's, which follows the spec.
  attrs.set("auto_pad", std::string("SAME_LOWER"));
  expect_values(
      run_op1(Op::kMaxPool, {x}, attrs), {1, 2, 3, 3},
      {1, 1.25, 1.25, 1.5, 0.75, 1, 1.25, 1.5, 1.5, 0.75, 1, 1.25, 1.5, 1.5, 0.75, 1, 1.25, 1.5});
}

TEST(PoolMax, OneAndThreeDimensional) {
  Attributes one{{"kernel_shape", std::vector<int64_t>{3}},
                 {"strides", std::vector<int64_t>{2}},
                 {"pads", std::vector<int64_t>{1, 1}}};
  expect_values(run_op1(Op::kMaxPool, {pattern({2, 1, 6}, 3)}, one), {2, 1, 3},
                {0.75, 1, 1.25, 1.5, 0.25, 0.5});
  Attributes three{{"kernel_shape", std::vector<int64_t>{2, 2, 2}},
                   {"strides", std::vector<int64_t>{1, 2, 1}},
                   {"pads", std::vector<int64_t>{0, 1, 0, 1, 0, 1}}};
  expect_values(
      run_op1(Op::kMaxPool, {pattern({1, 1, 3, 4, 3}, 2)}, three), {1, 1, 3, 2, 3},
      {1.5, 0.25, 0.25, 0.75, 1, 1, 1.5, 1.5, 0, 0.75, 0.75, 0.75, 1.5, 1.5, 0, 0.5, 0.75, 0.75});
}

TEST(PoolMax, EveryDtype) {
  // 1-D, kernel 2, stride 1, over [3, -1, 4, 1, -5, 9] (by hand).
  const Tensor x = f32({1, 1, 6}, {3, -1, 4, 1, -5, 9});
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64, DType::kI8}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(Op::kMaxPool, {to_dtype(x, t)}, kernel({2}));
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {1, 1, 5}, {3, 4, 4, 1, 9});
  }
  Tensor u = Tensor::from_vector<uint8_t>({1, 1, 4}, {200, 7, 255, 0});
  expect_values(run_op1(Op::kMaxPool, {u}, kernel({2})), {1, 1, 3}, {200, 255, 255});
}

TEST(PoolMax, NanPropagatesAndStorageOrderIsAccepted) {
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2}}, {"storage_order", int64_t{1}}};
  Tensor y = run_op1(Op::kMaxPool, {f32({1, 1, 4}, {1, std::nanf(""), 2, -INFINITY})}, attrs);
  expect_values(y, {1, 1, 3}, {kNaN, kNaN, 2});
}

TEST(PoolMax, EmptyBatch) {
  expect_values(run_op1(Op::kMaxPool, {Tensor(DType::kF32, {0, 3, 4})}, kernel({2})), {0, 3, 3},
                {});
}

TEST(PoolMax, Errors) {
  const Tensor x = pattern({1, 1, 4, 4}, 0);
  expect_error([&] { run_op1(Op::kMaxPool, {x}); }, ErrorCode::kInvalidGraph,
               {"MaxPool_under_test", "MaxPool", "f32[1,1,4,4]", "kernel_shape"});
  expect_error([&] { run_op1(Op::kMaxPool, {x}, kernel({2})); }, ErrorCode::kInvalidGraph,
               {"MaxPool", "kernel_shape", "[2]", "2 entries"});
  expect_error(
      [&] {
        run_op1(Op::kMaxPool, {x}, kernel({2, 0}));
      },
      ErrorCode::kInvalidGraph, {"MaxPool", "kernel_shape"});
  expect_error(
      [&] {
        Attributes a = kernel({2, 2});
        a.set("ceil_mode", int64_t{2});
        run_op1(Op::kMaxPool, {x}, a);
      },
      ErrorCode::kInvalidGraph, {"MaxPool", "ceil_mode"});
  expect_error(
      [&] {
        Attributes a = kernel({2, 2});
        a.set("storage_order", int64_t{3});
        run_op1(Op::kMaxPool, {x}, a);
      },
      ErrorCode::kInvalidGraph, {"MaxPool", "storage_order"});
  expect_error(
      [&] {
        run_op1(Op::kMaxPool, {x}, kernel({5, 2}));
      },
      ErrorCode::kShapeMismatch, {"MaxPool", "f32[1,1,4,4]", "padded input size 4", "extent 5"});
  // A window over padding alone has no max.
  expect_error(
      [&] {
        Attributes a = kernel({1, 1});
        a.set("pads", std::vector<int64_t>{1, 0, 0, 0});
        run_op1(Op::kMaxPool, {x}, a);
      },
      ErrorCode::kUnsupported, {"MaxPool", "window 0 covers only padding"});
  expect_error(
      [&] {
        run_op1(Op::kMaxPool, {pattern({4, 4}, 0)}, kernel({2}));
      },
      ErrorCode::kShapeMismatch, {"MaxPool", "rank >= 3"});
  expect_error(
      [&] {
        run_op1(Op::kMaxPool, {to_dtype(x, DType::kI32)}, kernel({2, 2}));
      },
      ErrorCode::kShapeMismatch, {"MaxPool", "i32[1,1,4,4]", "expected one of"});
}

// AveragePool

TEST(PoolAverage, CountIncludePad) {
  const Tensor x = pattern({1, 2, 5, 5}, 1);
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                   {"strides", std::vector<int64_t>{2, 2}}};
  expect_values(
      run_op1(Op::kAveragePool, {x}, attrs), {1, 2, 3, 3},
      {0.4375, 0.0833333358, 0, 0.291666657, 0.027777778, 0.125, -0.125, 0.333333343, 0.25, 0.3125,
       -0.0416666679, -0.125, 0.166666672, 0.0833333358, 0, -0.25, -0.333333343, 0.125});
  attrs.set("count_include_pad", int64_t{1});
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 2, 3, 3},
                {0.194444448, 0.055555556, 0, 0.194444448, 0.027777778, 0.0833333358, -0.055555556,
                 0.222222224, 0.111111112, 0.138888896, -0.027777778, -0.055555556, 0.111111112,
                 0.0833333358, 0, -0.111111112, -0.222222224, 0.055555556});
}

TEST(PoolAverage, CeilMode) {
  const Tensor x = pattern({1, 2, 5, 5}, 1);
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                   {"pads", std::vector<int64_t>{1, 0, 0, 0}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"ceil_mode", int64_t{1}}};
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 2, 3, 3},
                {0.125, 0.375, -0.25, 0.25, -0.3125, -0.125, -0.125, 0.125, -0.5, 0, 0.25, 1.25,
                 0.125, -0.4375, -0.25, -0.25, 0, 1});
  attrs.set("count_include_pad", int64_t{1});
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 2, 3, 3},
                {0.0625, 0.1875, -0.125, 0.25, -0.3125, -0.125, -0.125, 0.125, -0.5, 0, 0.125,
                 0.625, 0.125, -0.4375, -0.25, -0.25, 0, 1});
}

TEST(PoolAverage, CeilModeOverhangIsNeverCounted) {
  // By hand, as ONNX Runtime and PyTorch compute it: in [1..6], kernel 3, stride 5, ceil_mode:
  // windows [0,3) -> 2 and [5,8) -> only 6 is inside -> 6, with or without count_include_pad
  // (the overhang past the end is not padding). onnx.reference 1.23 shifts the windows here and
  // gives [1.5, 5].
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{3}},
                   {"strides", std::vector<int64_t>{5}},
                   {"ceil_mode", int64_t{1}}};
  const Tensor x = f32({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 1, 2}, {2, 6});
  attrs.set("count_include_pad", int64_t{1});
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 1, 2}, {2, 6});
  // With pads [1,1] the end pad counts but the overhang does not: (5 + 6 + 0) / 3.
  attrs.set("pads", std::vector<int64_t>{1, 1});
  expect_values(run_op1(Op::kAveragePool, {x}, attrs), {1, 1, 2}, {1, 11.0 / 3.0});
}

TEST(PoolAverage, SameUpperUsesTheDilatedExtent) {
  // By hand per the spec: in 6, kernel 2, dilation 2 (extent 3), stride 1 -> 6 outputs with
  // pad (6 - 1) + 3 - 6 = 2 split 1/1; window o averages x[o-1] and x[o+1] where inside.
  // (onnx.reference 1.23 pads without the dilation; ONNX Runtime returns 5 outputs.)
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2}},
                   {"dilations", std::vector<int64_t>{2}},
                   {"auto_pad", std::string("SAME_UPPER")}};
  // pattern([2,1,6], 3) = [0.75, -0.75, 1, -0.5, 1.25, -0.25], [1.5, 0, -1.5, 0.25, -1.25, 0.5].
  expect_values(run_op1(Op::kAveragePool, {pattern({2, 1, 6}, 3)}, attrs), {2, 1, 6},
                {-0.75, 0.875, -0.625, 1.125, -0.375, 1.25, 0, 0, 0.125, -1.375, 0.375, -1.25});
}

TEST(PoolAverage, ThreeDimensionalAndEveryDtype) {
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 3, 2}},
                   {"pads", std::vector<int64_t>{1, 1, 0, 0, 1, 1}},
                   {"count_include_pad", int64_t{1}}};
  const std::vector<double> expected = {-0.1875,
                                        -0.145833328,
                                        -0.0625,
                                        -0.1875,
                                        -0.125,
                                        0.020833334,
                                        0,
                                        0.0625,
                                        -0.020833334,
                                        0.0625,
                                        0.104166664,
                                        0.0625,
                                        -0.145833328,
                                        -0.333333343,
                                        -0.145833328,
                                        -0.166666672,
                                        -0.3125,
                                        -0.125,
                                        -0.0625,
                                        0.0625,
                                        0.0625,
                                        0.0833333358,
                                        0.166666672,
                                        0.104166664,
                                        0.0416666679,
                                        -0.145833328,
                                        -0.1875,
                                        -0.020833334,
                                        -0.166666672,
                                        -0.1875,
                                        -0.1875,
                                        -0.0625,
                                        0,
                                        0,
                                        0.0833333358,
                                        0.0625};
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(Op::kAveragePool, {pattern({1, 1, 3, 4, 3}, 2, t)}, attrs);
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {1, 1, 3, 4, 3}, expected, testing::tolerance(t), 1e-3);
  }
}

TEST(PoolAverage, NanAndInfPropagate) {
  Tensor y =
      run_op1(Op::kAveragePool, {f32({1, 1, 4}, {1, std::nanf(""), 2, INFINITY})}, kernel({2}));
  expect_values(y, {1, 1, 3}, {kNaN, kNaN, INFINITY});
}

TEST(PoolAverage, Errors) {
  const Tensor x = pattern({1, 1, 4}, 0);
  expect_error([&] { run_op1(Op::kAveragePool, {to_dtype(x, DType::kI8)}, kernel({2})); },
               ErrorCode::kShapeMismatch, {"AveragePool_under_test", "AveragePool", "i8[1,1,4]"});
  expect_error(
      [&] {
        Attributes a = kernel({2});
        a.set("count_include_pad", int64_t{5});
        run_op1(Op::kAveragePool, {x}, a);
      },
      ErrorCode::kInvalidGraph, {"AveragePool", "count_include_pad"});
  // Padding-only windows: undefined without count_include_pad, zero with it.
  Attributes a = kernel({1});
  a.set("pads", std::vector<int64_t>{0, 1});
  expect_error([&] { run_op1(Op::kAveragePool, {x}, a); }, ErrorCode::kUnsupported,
               {"AveragePool", "window 4 covers only padding"});
  a.set("count_include_pad", int64_t{1});
  expect_values(run_op1(Op::kAveragePool, {f32({1, 1, 2}, {3, 4})}, a), {1, 1, 3}, {3, 4, 0});
}

TEST(PoolWindow, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  const Dim batch(std::string("batch"));
  ValueId x = b.input("x", DType::kF32, Shape{batch, 64, 56, Dim(std::string("w"))});
  Attributes attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                   {"strides", std::vector<int64_t>{2, 2}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  EXPECT_EQ(b.type(b.op1(Op::kMaxPool, {x}, attrs)).to_string(), "f32[batch,64,28,?]");
  attrs.set("ceil_mode", int64_t{1});
  attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  EXPECT_EQ(b.type(b.op1(Op::kAveragePool, {x}, attrs)).to_string(), "f32[batch,64,28,?]");
  EXPECT_EQ(b.type(b.op1(Op::kGlobalAveragePool, {x})).to_string(), "f32[batch,64,1,1]");
  expect_error([&] { b.op1(Op::kMaxPool, {x}, kernel({3}), "pool1"); }, ErrorCode::kInvalidGraph,
               {"pool1", "MaxPool", "f32[batch,64,56,w]", "kernel_shape"});
}

// Global pools

TEST(PoolGlobal, AverageAndMax) {
  const Tensor x = pattern({1, 2, 5, 5}, 1);
  expect_values(run_op1(Op::kGlobalAveragePool, {x}), {1, 2, 1, 1}, {-0.03, 0.04});
  expect_values(run_op1(Op::kGlobalMaxPool, {x}), {1, 2, 1, 1}, {1.5, 1.5});
  // 1-D and 3-D by hand, every float dtype.
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor v = to_dtype(f32({2, 1, 3}, {1, 2, 6, -1, -2, -6}), t);
    expect_values(run_op1(Op::kGlobalAveragePool, {v}), {2, 1, 1}, {3, -3});
    expect_values(run_op1(Op::kGlobalMaxPool, {v}), {2, 1, 1}, {6, -1});
    Tensor cube = to_dtype(f32({1, 1, 2, 1, 2}, {1, 2, 3, -4}), t);
    expect_values(run_op1(Op::kGlobalMaxPool, {cube}), {1, 1, 1, 1, 1}, {3});
  }
}

TEST(PoolGlobal, EdgeCases) {
  // NaN propagates through both; an empty plane averages to NaN (0/0, like numpy's mean).
  Tensor x = f32({1, 2, 2}, {1, std::nanf(""), INFINITY, 2});
  expect_values(run_op1(Op::kGlobalAveragePool, {x}), {1, 2, 1}, {kNaN, INFINITY});
  expect_values(run_op1(Op::kGlobalMaxPool, {x}), {1, 2, 1}, {kNaN, INFINITY});
  expect_values(run_op1(Op::kGlobalAveragePool, {Tensor(DType::kF32, {1, 2, 0})}), {1, 2, 1},
                {kNaN, kNaN});
  expect_values(run_op1(Op::kGlobalAveragePool, {Tensor(DType::kF32, {0, 2, 3})}), {0, 2, 1}, {});
  expect_error(
      [] {
        run_op1(Op::kGlobalMaxPool, {Tensor(DType::kF32, {1, 2, 0})});
      },
      ErrorCode::kShapeMismatch,
      {"GlobalMaxPool_under_test", "GlobalMaxPool", "f32[1,2,0]", "empty"});
  expect_error(
      [] {
        run_op1(Op::kGlobalAveragePool, {pattern({2, 3}, 0)});
      },
      ErrorCode::kShapeMismatch, {"GlobalAveragePool", "f32[2,3]", "rank >= 3"});
  expect_error(
      [] {
        run_op1(Op::kGlobalAveragePool, {Tensor(DType::kI64, {1, 1, 2})});
      },
      ErrorCode::kShapeMismatch, {"GlobalAveragePool", "i64[1,1,2]", "float"});
}

}  // namespace
}  // namespace gf
