// ArgMax, ArgMin and CumSum: shape inference and reference kernels. Expected values by hand and
// from numpy.
#include <cstdint>
#include <limits>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::i64;
using testing::run_op1;
using testing::to_dtype;

Tensor ties() {
  return f32({2, 3}, {3, 1, 3, 2, 5, 5});
}

TEST(ArgReduce, AlongEachAxisWithAndWithoutKeepdims) {
  Tensor y = run_op1(Op::kArgMax, {ties()}, {{"axis", int64_t{1}}});
  EXPECT_EQ(y.dtype(), DType::kI64);
  expect_values(y, {2, 1}, {0, 1});
  expect_values(run_op1(Op::kArgMax, {ties()}), {1, 3}, {0, 1, 1});  // axis 0 by default
  expect_values(run_op1(Op::kArgMin, {ties()}, {{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}}),
                {2}, {1, 0});
  expect_values(run_op1(Op::kArgMin, {ties()}, {{"axis", int64_t{-2}}, {"keepdims", int64_t{0}}}),
                {3}, {1, 0, 0});
}

TEST(ArgReduce, SelectLastIndexPicksTheLastTie) {
  const Attributes last{{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}};
  expect_values(run_op1(Op::kArgMax, {ties()}, last), {2, 1}, {2, 2});
  expect_values(run_op1(Op::kArgMin, {f32({1, 4}, {2, 0, 7, 0})}, last), {1, 1}, {3});
  expect_values(run_op1(Op::kArgMin, {f32({1, 4}, {2, 0, 7, 0})}, {{"axis", int64_t{1}}}), {1, 1},
                {1});
}

TEST(ArgReduce, MiddleAxisOfRank3) {
  // [2,3,2]: per (i, k), the j of the extreme.
  const Tensor x = f32({2, 3, 2}, {0, 9, 5, 1, 2, 3, 7, 7, 8, 6, 9, 5});
  expect_values(run_op1(Op::kArgMax, {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}), {2, 2},
                {1, 0, 2, 0});
  expect_values(run_op1(Op::kArgMin, {x}, {{"axis", int64_t{1}}}), {2, 1, 2}, {0, 1, 0, 2});
}

TEST(ArgReduce, FirstNanWinsLikeNumpy) {
  const Tensor x = f32({1, 5}, {1, NAN, 9, NAN, -4});
  const Attributes ax{{"axis", int64_t{1}}};
  expect_values(run_op1(Op::kArgMax, {x}, ax), {1, 1}, {1});
  expect_values(run_op1(Op::kArgMin, {x}, ax), {1, 1}, {1});
  // With select_last_index ONNX scans the reversed axis: the last NaN.
  const Attributes last{{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}};
  expect_values(run_op1(Op::kArgMax, {x}, last), {1, 1}, {3});
  expect_values(run_op1(Op::kArgMin, {x}, last), {1, 1}, {3});
  // Infinities are ordinary extremes.
  const Tensor inf = f32({3}, {-INFINITY, 2, INFINITY});
  expect_values(run_op1(Op::kArgMax, {inf}), {1}, {2});
  expect_values(run_op1(Op::kArgMin, {inf}), {1}, {0});
}

TEST(ArgReduce, DtypeSweep) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64, DType::kI32,
                  DType::kI8, DType::kU8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 3}, {4, 9, 1, 7, 7, 100}), t);
    expect_values(run_op1(Op::kArgMax, {x}, {{"axis", int64_t{1}}}), {2, 1}, {1, 2});
    expect_values(run_op1(Op::kArgMin, {x}, {{"axis", int64_t{1}}}), {2, 1}, {2, 0});
    expect_values(run_op1(Op::kArgMax, {x}, {{"select_last_index", int64_t{1}}}), {1, 3},
                  {1, 0, 1});
  }
  // Negative int8 values order correctly.
  const Tensor x8 = Tensor::from_vector<int8_t>({3}, {-128, 127, -1});
  expect_values(run_op1(Op::kArgMin, {x8}), {1}, {0});
}

TEST(ArgReduce, EmptyOtherDimsGiveEmptyOutput) {
  expect_values(run_op1(Op::kArgMax, {Tensor(DType::kF32, {0, 3})}, {{"axis", int64_t{1}}}), {0, 1},
                {});
}

TEST(ArgReduce, Errors) {
  expect_error(
      [] {
        run_op1(Op::kArgMax, {ties()}, {{"axis", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"ArgMax_under_test", "(ArgMax)", "f32[2,3]", "axis 2"});
  expect_error(
      [] {
        run_op1(Op::kArgMin, {Tensor(DType::kF32, {2, 0})}, {{"axis", int64_t{1}}});
      },
      ErrorCode::kShapeMismatch, {"ArgMin", "f32[2,0]", "empty"});
  expect_error([] { run_op1(Op::kArgMax, {Tensor(DType::kBool, {2})}); }, ErrorCode::kShapeMismatch,
               {"ArgMax", "bool[2]"});
  expect_error([] { run_op1(Op::kArgMax, {Tensor::scalar<float>(1)}); }, ErrorCode::kShapeMismatch,
               {"ArgMax", "f32[]", "rank >= 1"});
  expect_error(
      [] {
        run_op1(Op::kArgMax, {ties()}, {{"select_last_index", int64_t{-1}}});
      },
      ErrorCode::kInvalidGraph, {"ArgMax", "f32[2,3]", "select_last_index"});
  expect_error(
      [] {
        run_op1(Op::kArgMax, {ties()}, {{"axis", 1.5f}});
      },
      ErrorCode::kInvalidGraph, {"ArgMax_under_test", "'axis'"});
}

TEST(ArgReduce, SymbolicShapes) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF16, Shape{Dim(std::string("batch")), 10});
  EXPECT_EQ(b.type(b.op1(Op::kArgMax, {x}, {{"axis", int64_t{-1}}})).to_string(), "i64[batch,1]");
  EXPECT_EQ(
      b.type(b.op1(Op::kArgMin, {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}})).to_string(),
      "i64[batch]");
  // A symbolic axis may be empty only at run time.
  EXPECT_EQ(b.type(b.op1(Op::kArgMax, {x}, {{"keepdims", int64_t{0}}})).to_string(), "i64[10]");
}

// CumSum with the axis passed as an i64 [1] tensor.
Tensor cumsum(const Tensor& x, int64_t axis, Attributes attrs = {}) {
  return run_op1(Op::kCumSum, {x, i64({1}, {axis})}, std::move(attrs));
}

TEST(CumSum, ExclusiveAndReverseFollowTheOnnxExamples) {
  const Tensor x = f32({3}, {1, 2, 3});
  expect_values(cumsum(x, 0), {3}, {1, 3, 6});
  expect_values(cumsum(x, 0, {{"exclusive", int64_t{1}}}), {3}, {0, 1, 3});
  expect_values(cumsum(x, 0, {{"reverse", int64_t{1}}}), {3}, {6, 5, 3});
  expect_values(cumsum(x, 0, {{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}), {3}, {5, 3, 0});
}

TEST(CumSum, AlongEitherAxisOfAMatrix) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(cumsum(x, 1), {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_values(cumsum(x, -1), {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_values(cumsum(x, 0), {2, 3}, {1, 2, 3, 5, 7, 9});
  expect_values(cumsum(x, -2, {{"reverse", int64_t{1}}}), {2, 3}, {5, 7, 9, 4, 5, 6});
  // A 0-D i32 axis is accepted too.
  expect_values(run_op1(Op::kCumSum, {x, Tensor::scalar<int32_t>(1)}), {2, 3}, {1, 3, 6, 4, 9, 15});
}

TEST(CumSum, EmptyInfAndNan) {
  expect_values(cumsum(Tensor(DType::kF32, {2, 0}), 1), {2, 0}, {});
  expect_values(cumsum(Tensor(DType::kF32, {0, 4}), 1, {{"exclusive", int64_t{1}}}), {0, 4}, {});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  expect_values(cumsum(f32({4}, {1, INFINITY, -INFINITY, 2}), 0), {4}, {1, inf, nan, nan});
  expect_values(cumsum(f32({3}, {NAN, 1, 2}), 0, {{"reverse", int64_t{1}}}), {3}, {nan, 3, 2});
}

TEST(CumSum, DtypeSweepAndDoubleAccumulation) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64, DType::kI32}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 2}, {-3, 4, 10, 8}), t);
    Tensor y = cumsum(x, 1, {{"exclusive", int64_t{1}}});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 2}, {0, -3, 0, 10});
    expect_values(cumsum(x, 0), {2, 2}, {-3, 4, 7, 12});
  }
  // In float 1e8 + 1 == 1e8; the running sum is kept in double.
  expect_values(cumsum(f32({3}, {1e8f, 1, -1e8f}), 0), {3}, {1e8, 1e8, 1}, 0, 0);
  // Integers wrap around in their own width.
  const Tensor xi = Tensor::from_vector<int32_t>({2}, {2147483647, 1});
  expect_values(cumsum(xi, 0), {2}, {2147483647, -2147483648.0});
}

TEST(CumSum, Errors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error([&] { cumsum(x, 2); }, ErrorCode::kInvalidGraph,
               {"CumSum_under_test", "(CumSum)", "f32[2,3]", "axis 2"});
  expect_error(
      [&] {
        run_op1(Op::kCumSum, {x, i64({2}, {0, 1})});
      },
      ErrorCode::kShapeMismatch, {"CumSum", "f32[2,3]", "i64[2]", "one element"});
  expect_error(
      [&] {
        run_op1(Op::kCumSum, {x, f32({1}, {0})});
      },
      ErrorCode::kShapeMismatch, {"CumSum", "f32[1]", "i32"});
  expect_error([] { cumsum(Tensor(DType::kBool, {2}), 0); }, ErrorCode::kShapeMismatch,
               {"CumSum", "bool[2]"});
  expect_error([] { cumsum(Tensor(DType::kU8, {2}), 0); }, ErrorCode::kShapeMismatch,
               {"CumSum", "u8[2]"});
  expect_error(
      [] {
        run_op1(Op::kCumSum, {Tensor::scalar<float>(1), i64({}, {0})});
      },
      ErrorCode::kShapeMismatch, {"CumSum", "f32[]", "rank >= 1"});
  expect_error(
      [&] {
        cumsum(x, 0, {{"reverse", int64_t{3}}});
      },
      ErrorCode::kInvalidGraph, {"CumSum", "reverse", "0 or 1"});
}

TEST(CumSum, AxisKnownOnlyAtRunTime) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 3});
  const ValueId axis = b.input("axis", DType::kI32, Shape{});
  b.output(b.op1(Op::kCumSum, {x, axis}, {{"reverse", int64_t{1}}}), "out");
  EXPECT_EQ(b.type(b.graph().outputs()[0]).to_string(), "f32[batch,3]");
  Session s(b.build());
  auto out = s.run({f32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::scalar<int32_t>(0)});
  expect_values(out[0], {2, 3}, {5, 7, 9, 4, 5, 6});
  expect_error(
      [&] {
        s.run({f32({2, 3}, {1, 2, 3, 4, 5, 6}), Tensor::scalar<int32_t>(-3)});
      },
      ErrorCode::kInvalidGraph, {"CumSum", "axis -3"});
}

}  // namespace
}  // namespace gf
