// Reference kernels and run-time inference of the shape producers: Shape, Size,
// ConstantOfShape, Range.
#include "test_layout_util.h"

namespace gf {
namespace {

using testing::expect_op_error;
using testing::expect_values;
using testing::f32;
using testing::i32;
using testing::i64;
using testing::kI64Max;
using testing::kI64Min;
using testing::run_op1;
using testing::to_dtype;

// --- Shape / Size ---

TEST(LayoutShape, ReturnsTheDimsInTheStartEndRange) {
  const Tensor x(DType::kF16, {2, 3, 4});
  const auto shape_of = [&](Attributes attrs) {
    return run_op1(Op::kShape, {x}, std::move(attrs));
  };
  const Tensor all = shape_of({});
  EXPECT_EQ(all.dtype(), DType::kI64);
  expect_values(all, {3}, {2, 3, 4});
  expect_values(shape_of({{"start", int64_t{-1}}}), {1}, {4});
  expect_values(shape_of({{"end", int64_t{-1}}}), {2}, {2, 3});
  expect_values(shape_of({{"start", int64_t{1}}, {"end", int64_t{2}}}), {1}, {3});
  // Out-of-range attributes clamp; start past end gives an empty shape.
  expect_values(shape_of({{"start", int64_t{-10}}, {"end", int64_t{10}}}), {3}, {2, 3, 4});
  expect_values(shape_of({{"start", int64_t{2}}, {"end", int64_t{1}}}), {0}, {});
  expect_values(run_op1(Op::kShape, {f32({}, {1})}), {0}, {});
  expect_values(run_op1(Op::kShape, {Tensor(DType::kBool, {0, 5})}), {2}, {0, 5});
}

TEST(LayoutSize, CountsElementsAsAnI64Scalar) {
  const Tensor n = run_op1(Op::kSize, {Tensor(DType::kU8, {2, 3})});
  EXPECT_EQ(n.dtype(), DType::kI64);
  expect_values(n, {}, {6});
  expect_values(run_op1(Op::kSize, {f32({3, 0}, {})}), {}, {0});
  expect_values(run_op1(Op::kSize, {f32({}, {1})}), {}, {1});
}

// --- ConstantOfShape ---

TEST(LayoutConstantOfShape, DefaultsToF32Zeros) {
  const Tensor y = run_op1(Op::kConstantOfShape, {i64({2}, {2, 3})});
  EXPECT_EQ(y.dtype(), DType::kF32);
  expect_values(y, {2, 3}, std::vector<double>(6, 0.0));
}

TEST(LayoutConstantOfShape, TakesDtypeAndValueFromTheAttribute) {
  for (DType t : testing::kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor value = to_dtype(f32({1}, {5}), t);
    const Tensor y = run_op1(Op::kConstantOfShape, {i64({2}, {3, 1})}, {{"value", value}});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {3, 1}, std::vector<double>(3, t == DType::kBool ? 1.0 : 5.0));
  }
  const Tensor nan = f32({1}, {std::nanf("")});
  expect_values(run_op1(Op::kConstantOfShape, {i64({1}, {2})}, {{"value", nan}}), {2},
                {std::nan(""), std::nan("")});
}

TEST(LayoutConstantOfShape, EmptyShapesGiveScalarsAndEmptyTensors) {
  expect_values(run_op1(Op::kConstantOfShape, {i64({0}, {})}, {{"value", i64({1}, {4})}}), {}, {4});
  expect_values(run_op1(Op::kConstantOfShape, {i64({2}, {0, 3})}), {0, 3}, {});
}

TEST(LayoutConstantOfShape, RejectsBadShapesAndValues) {
  expect_op_error(Op::kConstantOfShape, {i64({2}, {2, -1})}, {}, ErrorCode::kShapeMismatch,
                  {"ConstantOfShape_under_test", "i64[2]", "[2,-1] has a negative entry"});
  expect_op_error(Op::kConstantOfShape, {i32({1}, {2})}, {}, ErrorCode::kShapeMismatch, {"i32"});
  expect_op_error(Op::kConstantOfShape, {i64({1}, {2})}, {{"value", f32({2}, {1, 2})}},
                  ErrorCode::kInvalidGraph, {"'value' must hold one element", "f32[2]"});
  expect_op_error(Op::kConstantOfShape, {i64({3}, {1 << 20, 1 << 20, 2})}, {},
                  ErrorCode::kInvalidArgument, {"[1048576,1048576,2]", "more than 2^40"});
  expect_op_error(Op::kConstantOfShape, {i64({2}, {kI64Max, kI64Max})}, {},
                  ErrorCode::kInvalidArgument, {"more than 2^40"});
}

// --- Range ---

TEST(LayoutRange, SpecExamples) {
  expect_values(run_op1(Op::kRange, {i64({}, {3}), i64({}, {9}), i64({}, {3})}), {2}, {3, 6});
  expect_values(run_op1(Op::kRange, {i32({}, {10}), i32({}, {4}), i32({}, {-2})}), {3}, {10, 8, 6});
}

TEST(LayoutRange, FloatsMatchTheOnnxReference) {
  // onnx.reference and onnxruntime agree: 0.1f + 2 * 0.3f rounds up to 0.70000005f.
  const Tensor y = run_op1(Op::kRange, {f32({}, {0.1f}), f32({}, {1.0f}), f32({}, {0.3f})});
  EXPECT_EQ(y.dtype(), DType::kF32);
  expect_values(y, {3}, {0.10000000149011612, 0.4000000059604645, 0.7000000476837158}, 0, 0);
  const Tensor d =
      run_op1(Op::kRange, {to_dtype(f32({}, {1}), DType::kF64), to_dtype(f32({}, {2}), DType::kF64),
                           to_dtype(f32({}, {0.25}), DType::kF64)});
  expect_values(d, {4}, {1.0, 1.25, 1.5, 1.75}, 0, 0);
}

TEST(LayoutRange, SixteenBitFloatsAndEmptyRanges) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor y = run_op1(Op::kRange, {to_dtype(f32({}, {-1}), t), to_dtype(f32({}, {1}), t),
                                          to_dtype(f32({}, {0.5}), t)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {4}, {-1, -0.5, 0, 0.5});
    const Tensor d = run_op1(
        Op::kRange,
        {to_dtype(f32({}, {2}), t), to_dtype(f32({}, {-1}), t), to_dtype(f32({}, {-1.5}), t)},
        {{"stash_type", int64_t{11}}});
    expect_values(d, {2}, {2, 0.5});
  }
  expect_values(run_op1(Op::kRange, {i64({}, {5}), i64({}, {1}), i64({}, {1})}), {0}, {});
  expect_values(run_op1(Op::kRange, {f32({}, {1}), f32({}, {1}), f32({}, {-1})}), {0}, {});
}

TEST(LayoutRange, IsExactAtTheEndsOfInt64) {
  expect_values(
      run_op1(Op::kRange, {i64({}, {kI64Min}), i64({}, {kI64Max}), i64({}, {int64_t{1} << 62})}),
      {4}, {-9223372036854775808.0, -4611686018427387904.0, 0, 4611686018427387904.0});
  const Tensor y =
      run_op1(Op::kRange, {i64({}, {kI64Max}), i64({}, {kI64Min}), i64({}, {kI64Min})});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(y.data<int64_t>()[0], kI64Max);
  EXPECT_EQ(y.data<int64_t>()[1], -1);
}

TEST(LayoutRange, RejectsZeroDeltaNonFiniteAndAbsurdRanges) {
  expect_op_error(Op::kRange, {i64({}, {0}), i64({}, {5}), i64({}, {0})}, {},
                  ErrorCode::kInvalidArgument,
                  {"Range_under_test", "i64[]", "delta must not be 0"});
  expect_op_error(Op::kRange, {f32({}, {0}), f32({}, {5}), f32({}, {0})}, {},
                  ErrorCode::kInvalidArgument, {"delta must not be 0"});
  expect_op_error(Op::kRange,
                  {f32({}, {0}), f32({}, {std::numeric_limits<float>::infinity()}), f32({}, {1})},
                  {}, ErrorCode::kInvalidArgument, {"must be finite"});
  expect_op_error(Op::kRange, {f32({}, {std::nanf("")}), f32({}, {1}), f32({}, {1})}, {},
                  ErrorCode::kInvalidArgument, {"must be finite"});
  expect_op_error(Op::kRange, {i64({}, {0}), i64({}, {int64_t{1} << 50}), i64({}, {1})}, {},
                  ErrorCode::kInvalidArgument, {"more than 2^40"});
  expect_op_error(Op::kRange, {f32({}, {0}), f32({}, {1e30f}), f32({}, {1e-30f})}, {},
                  ErrorCode::kInvalidArgument, {"more than 2^40"});
}

TEST(LayoutRange, RejectsMixedDtypesAndNonScalars) {
  expect_op_error(Op::kRange, {i64({}, {0}), i32({}, {5}), i64({}, {1})}, {},
                  ErrorCode::kShapeMismatch, {"Range_under_test", "same dtype", "i64", "i32"});
  expect_op_error(Op::kRange, {i64({2}, {0, 1}), i64({}, {5}), i64({}, {1})}, {},
                  ErrorCode::kShapeMismatch, {"start (input 0) must be a scalar", "i64[2]"});
  expect_op_error(Op::kRange,
                  {Tensor(DType::kU8, {}), Tensor(DType::kU8, {}), Tensor(DType::kU8, {})}, {},
                  ErrorCode::kShapeMismatch, {"u8"});
  expect_op_error(Op::kRange,
                  {to_dtype(f32({}, {0}), DType::kF16), to_dtype(f32({}, {1}), DType::kF16),
                   to_dtype(f32({}, {1}), DType::kF16)},
                  {{"stash_type", int64_t{0}}}, ErrorCode::kUnsupported,
                  {"Range_under_test", "stash_type 0"});
}

}  // namespace
}  // namespace gf
