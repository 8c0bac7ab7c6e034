// BatchNormalization (inference form): shape inference, validation and the reference kernel.
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

TEST(LinearBatchNorm, ByHandWithZeroEpsilon) {
  // Channel 0: (x - 1) / 2 * 1 + 0; channel 1: (x - 3) / 0.5 * 2 + 1.
  Tensor y = run_op1(Op::kBatchNormalization,
                     {f32({1, 2, 2}, {1, 2, 3, 4}), f32({2}, {1, 2}), f32({2}, {0, 1}),
                      f32({2}, {1, 3}), f32({2}, {4, 0.25f})},
                     Attributes{{"epsilon", 0.0f}});
  expect_values(y, {1, 2, 2}, {0, 0.5, 1, 5});
}

// onnx.reference (BatchNormalization, opset 15, default epsilon) on X = pattern([2,3,2,2], 1),
// scale = pattern([3], 2), B = pattern([3], 3), mean = pattern([3], 4), var = [1.5, 1.25, 1.25].
const std::vector<double> kBatchNorm4d = {
    0.75,        0.75,       0.75,       0.75,       -0.414591134, -2.76245332,
    -0.75,       1.26245332, 1.39131033, 1.05590153, 1.44721186,   1.11180294,
    0.75,        0.75,       0.75,       0.75,       -2.42704439,  -0.414591134,
    -2.76245332, -0.75,      1,          1.39131033, 1.05590153,   1.44721186};

TEST(LinearBatchNorm, FourDimensionalEveryDtype) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(Op::kBatchNormalization,
                       {pattern({2, 3, 2, 2}, 1, t), pattern({3}, 2, t), pattern({3}, 3, t),
                        pattern({3}, 4, t), to_dtype(f32({3}, {1.5f, 1.25f, 1.25f}), t)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 3, 2, 2}, kBatchNorm4d, testing::tolerance(t), 1e-2);
  }
}

TEST(LinearBatchNorm, ParametersMayHaveTheirOwnFloatDtype) {
  // f16 activations with f32 scale/bias and f64 statistics (ONNX's T, T1, T2).
  Tensor y =
      run_op1(Op::kBatchNormalization, {pattern({2, 3, 2, 2}, 1, DType::kF16), pattern({3}, 2),
                                        pattern({3}, 3), pattern({3}, 4, DType::kF64),
                                        to_dtype(f32({3}, {1.5f, 1.25f, 1.25f}), DType::kF64)});
  EXPECT_EQ(y.dtype(), DType::kF16);
  expect_values(y, {2, 3, 2, 2}, kBatchNorm4d, 2e-3, 1e-3);
}

TEST(LinearBatchNorm, RankTwoEmptyAndNan) {
  // [N, C] input: one value per channel.
  Tensor y = run_op1(Op::kBatchNormalization,
                     {f32({2, 2}, {1, std::nanf(""), 3, INFINITY}), f32({2}, {1, 1}),
                      f32({2}, {0, 0}), f32({2}, {1, 0}), f32({2}, {1, 1})},
                     Attributes{{"epsilon", 0.0f}});
  expect_values(y, {2, 2}, {0, std::numeric_limits<double>::quiet_NaN(), 2, INFINITY});
  Tensor c = f32({3}, {1, 1, 1});
  expect_values(run_op1(Op::kBatchNormalization, {Tensor(DType::kF32, {0, 3, 4}), c, c, c, c}),
                {0, 3, 4}, {});
}

TEST(LinearBatchNorm, Errors) {
  const Tensor x = pattern({2, 3, 4}, 0);
  const Tensor c = f32({3}, {1, 1, 1});
  expect_error(
      [&] {
        run_op1(Op::kBatchNormalization, {x, c, c, c, c}, {{"training_mode", int64_t{1}}});
      },
      ErrorCode::kUnsupported,
      {"BatchNormalization_under_test", "BatchNormalization", "f32[2,3,4]", "training_mode"});
  expect_error(
      [&] {
        run_op1(Op::kBatchNormalization, {x, c, c, f32({2}, {0, 0}), c});
      },
      ErrorCode::kShapeMismatch,
      {"BatchNormalization", "f32[2]", "input_mean has 2 entries for 3 channels"});
  expect_error(
      [&] {
        run_op1(Op::kBatchNormalization, {x, c, to_dtype(c, DType::kF64), c, c});
      },
      ErrorCode::kShapeMismatch, {"BatchNormalization", "f32", "f64"});
  expect_error(
      [&] {
        run_op1(Op::kBatchNormalization, {f32({3}, {1, 2, 3}), c, c, c, c});
      },
      ErrorCode::kShapeMismatch, {"BatchNormalization", "rank >= 2"});
  expect_error(
      [&] {
        run_op1(Op::kBatchNormalization, {to_dtype(x, DType::kI32), c, c, c, c});
      },
      ErrorCode::kShapeMismatch, {"BatchNormalization", "i32[2,3,4]", "float"});
}

TEST(LinearBatchNorm, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  ValueId x =
      b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 3, Dim(std::string("h")), 8});
  ValueId c = b.constant("c", f32({3}, {1, 1, 1}));
  EXPECT_EQ(b.type(b.op1(Op::kBatchNormalization, {x, c, c, c, c})).to_string(),
            "f32[batch,3,h,8]");
  ValueId bad = b.constant("bad", f32({4}, {1, 1, 1, 1}));
  expect_error(
      [&] {
        b.op1(Op::kBatchNormalization, {x, bad, c, c, c}, {}, "bn1");
      },
      ErrorCode::kShapeMismatch, {"bn1", "scale has 4 entries for 3 channels"});
}

}  // namespace
}  // namespace gf
