// Reduce* ops: shape inference and reference kernels. Expected values from numpy.
#include <cstdint>
#include <limits>
#include <optional>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::i64;
using testing::run_op1;
using testing::to_dtype;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs a Reduce* op; `axes` nullopt omits the axes input.
Tensor reduce(Op op, const Tensor& x, std::optional<std::vector<int64_t>> axes,
              Attributes attrs = {}) {
  std::vector<Tensor> inputs{x};
  if (axes) inputs.push_back(i64({static_cast<int64_t>(axes->size())}, *axes));
  return run_op1(op, inputs, std::move(attrs));
}

Tensor sample() {
  return f32({2, 3}, {1.5f, -2, 3, 0.5f, 4, -1});
}

struct ReduceCase {
  Op op;
  std::vector<double> along_1;    // axes [1]
  std::vector<double> along_0;    // axes [0]
  std::vector<double> along_all;  // no axes
};

TEST(ReduceOps, EveryOpAlongEachAxisAndAll) {
  const std::vector<ReduceCase> cases = {
      {Op::kReduceSum, {2.5, 3.5}, {2, 2, 2}, {6}},
      {Op::kReduceMean, {0.8333333333333334, 1.1666666666666667}, {1, 1, 1}, {1}},
      {Op::kReduceMax, {3, 4}, {1.5, 4, 3}, {4}},
      {Op::kReduceMin, {-2, -1}, {0.5, -2, -1}, {-2}},
      {Op::kReduceProd, {-9, -2}, {0.75, -8, -3}, {18}},
      {Op::kReduceL1, {6.5, 5.5}, {2, 6, 4}, {12}},
      {Op::kReduceL2,
       {3.905124837953327, 4.153311931459037},
       {1.5811388300841898, 4.47213595499958, 3.1622776601683795},
       {5.70087712549569}},
      {Op::kReduceSumSquare, {15.25, 17.25}, {2.5, 20, 10}, {32.5}},
      {Op::kReduceLogSumExp,
       {3.2069069336734133, 4.036269565124779},
       {1.8132616875182228, 4.00247568513773, 3.01814992791781},
       {4.398358933882533}},
  };
  for (const ReduceCase& c : cases) {
    SCOPED_TRACE(std::string(op_name(c.op)));
    expect_values(reduce(c.op, sample(), std::vector<int64_t>{1}), {2, 1}, c.along_1);
    expect_values(reduce(c.op, sample(), std::vector<int64_t>{-1}, {{"keepdims", int64_t{0}}}), {2},
                  c.along_1);
    expect_values(reduce(c.op, sample(), std::vector<int64_t>{-2}), {1, 3}, c.along_0);
    expect_values(reduce(c.op, sample(), std::nullopt), {1, 1}, c.along_all);
    expect_values(reduce(c.op, sample(), std::vector<int64_t>{}, {{"keepdims", int64_t{0}}}), {},
                  c.along_all);
    expect_values(reduce(c.op, sample(), std::vector<int64_t>{0, 1}), {1, 1}, c.along_all);
  }
  // Log of a sum needs positive sums.
  const Tensor pos = f32({2, 3}, {1.5f, 2, 3, 0.5f, 4, 1});
  expect_values(reduce(Op::kReduceLogSum, pos, std::vector<int64_t>{1}), {2, 1},
                {1.8718021769015913, 1.7047480922384253});
  expect_values(reduce(Op::kReduceLogSum, pos, std::nullopt), {1, 1}, {2.4849066497880004});
}

TEST(ReduceOps, MiddleAxisOfRank3) {
  // x[i][j][k] = i*100 + j*10 + k over [2,3,2]; sum over j.
  std::vector<float> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) v.push_back(static_cast<float>(i * 100 + j * 10 + k));
  const Tensor x = f32({2, 3, 2}, v);
  expect_values(reduce(Op::kReduceSum, x, std::vector<int64_t>{1}), {2, 1, 2}, {30, 33, 330, 333});
  expect_values(reduce(Op::kReduceMax, x, std::vector<int64_t>{0, 2}, {{"keepdims", int64_t{0}}}),
                {3}, {101, 111, 121});
}

TEST(ReduceOps, NoopWithEmptyAxesKeepsTheElementwiseSteps) {
  const Attributes noop{{"noop_with_empty_axes", int64_t{1}}};
  const Tensor x = f32({2, 2}, {1, -2, 4, 0.5f});
  expect_values(reduce(Op::kReduceSum, x, std::vector<int64_t>{}, noop), {2, 2}, {1, -2, 4, 0.5});
  expect_values(reduce(Op::kReduceMax, x, std::nullopt, noop), {2, 2}, {1, -2, 4, 0.5});
  // The composite ops still square, take the root, the absolute value or the log (ONNX spec).
  expect_values(reduce(Op::kReduceSumSquare, x, std::nullopt, noop), {2, 2}, {1, 4, 16, 0.25});
  expect_values(reduce(Op::kReduceL2, x, std::nullopt, noop), {2, 2}, {1, 2, 4, 0.5});
  expect_values(reduce(Op::kReduceL1, x, std::nullopt, noop), {2, 2}, {1, 2, 4, 0.5});
  expect_values(reduce(Op::kReduceLogSum, x, std::nullopt, noop), {2, 2},
                {0, kNaN, 1.3862943611198906, -0.6931471805599453});
  expect_values(reduce(Op::kReduceLogSumExp, x, std::nullopt, noop), {2, 2}, {1, -2, 4, 0.5});
  // Non-empty axes ignore the flag.
  expect_values(reduce(Op::kReduceSum, x, std::vector<int64_t>{0}, noop), {1, 2}, {5, -1.5});
}

TEST(ReduceOps, EmptyReductionGivesTheIdentity) {
  const Tensor x(DType::kF32, {2, 0});
  const std::vector<std::pair<Op, double>> cases = {
      {Op::kReduceSum, 0},          {Op::kReduceProd, 1},      {Op::kReduceMax, -kInf},
      {Op::kReduceMin, kInf},       {Op::kReduceMean, kNaN},   {Op::kReduceL1, 0},
      {Op::kReduceL2, 0},           {Op::kReduceSumSquare, 0}, {Op::kReduceLogSum, -kInf},
      {Op::kReduceLogSumExp, -kInf}};
  for (const auto& [op, identity] : cases) {
    SCOPED_TRACE(std::string(op_name(op)));
    expect_values(reduce(op, x, std::vector<int64_t>{1}), {2, 1}, {identity, identity});
    // Reducing the non-empty dim of an empty tensor gives an empty tensor.
    expect_values(reduce(op, x, std::vector<int64_t>{0}, {{"keepdims", int64_t{0}}}), {0}, {});
  }
  const Tensor xi(DType::kI32, {0, 3});
  expect_values(reduce(Op::kReduceMax, xi, std::vector<int64_t>{0}), {1, 3},
                {-2147483648.0, -2147483648.0, -2147483648.0});
  expect_values(reduce(Op::kReduceMin, xi, std::nullopt), {1, 1}, {2147483647.0});
  expect_values(reduce(Op::kReduceProd, xi, std::nullopt), {1, 1}, {1});
  const Tensor xu(DType::kU8, {0});
  expect_values(reduce(Op::kReduceMax, xu, std::nullopt), {1}, {0});
  expect_values(reduce(Op::kReduceMin, xu, std::nullopt), {1}, {255});
}

TEST(ReduceOps, RankZeroInputReducesToItself) {
  const Tensor x = Tensor::scalar<float>(-3);
  expect_values(reduce(Op::kReduceSum, x, std::nullopt), {}, {-3});
  expect_values(reduce(Op::kReduceL2, x, std::vector<int64_t>{}), {}, {3});
  expect_values(reduce(Op::kReduceSumSquare, x, std::nullopt, {{"keepdims", int64_t{0}}}), {}, {9});
}

TEST(ReduceOps, NanAndInfPropagate) {
  const Tensor x = f32({2, 3}, {1, NAN, 3, -INFINITY, 2, INFINITY});
  expect_values(reduce(Op::kReduceMax, x, std::vector<int64_t>{1}), {2, 1}, {kNaN, kInf});
  expect_values(reduce(Op::kReduceMin, x, std::vector<int64_t>{1}), {2, 1}, {kNaN, -kInf});
  expect_values(reduce(Op::kReduceSum, x, std::vector<int64_t>{1}), {2, 1}, {kNaN, kNaN});
  expect_values(reduce(Op::kReduceSum, x, std::vector<int64_t>{0}), {1, 3}, {-kInf, kNaN, kInf});
  // NaN after the max is still seen.
  expect_values(reduce(Op::kReduceMax, f32({3}, {5, 1, NAN}), std::nullopt), {1}, {kNaN});
}

TEST(ReduceOps, LogSumExpIsStableAndHandlesInfinities) {
  expect_values(reduce(Op::kReduceLogSumExp, f32({2}, {1000, 1000}), std::nullopt), {1},
                {1000.6931471805599});
  expect_values(reduce(Op::kReduceLogSumExp, f32({2}, {-1000, -1000}), std::nullopt), {1},
                {-999.3068528194401});
  const Tensor x = f32({3, 2}, {-INFINITY, -INFINITY, INFINITY, 1, -INFINITY, 2});
  expect_values(reduce(Op::kReduceLogSumExp, x, std::vector<int64_t>{1}), {3, 1}, {-kInf, kInf, 2});
  expect_values(reduce(Op::kReduceLogSumExp, f32({2}, {NAN, INFINITY}), std::nullopt), {1}, {kNaN});
}

TEST(ReduceOps, FloatSumsAccumulateInDouble) {
  // In float, 1e8 + 1 rounds back to 1e8; the double accumulator keeps the 1.
  const Tensor x = f32({3}, {1e8f, 1, -1e8f});
  expect_values(reduce(Op::kReduceSum, x, std::nullopt), {1}, {1}, 0, 0);
  expect_values(reduce(Op::kReduceMean, x, std::nullopt), {1}, {1.0 / 3}, 1e-7, 0);
}

TEST(ReduceOps, FloatDtypeSweep) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 2}, {0.5f, 1.5f, -2, 4}), t);
    const double tol = t == DType::kBF16 ? 1e-2 : t == DType::kF16 ? 1e-3 : 1e-6;
    Tensor y = reduce(Op::kReduceSum, x, std::vector<int64_t>{1});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 1}, {2, 2}, tol);
    expect_values(reduce(Op::kReduceMean, x, std::vector<int64_t>{0}), {1, 2}, {-0.75, 2.75}, tol);
    expect_values(reduce(Op::kReduceMax, x, std::nullopt), {1, 1}, {4}, tol);
    expect_values(reduce(Op::kReduceL2, x, std::vector<int64_t>{1}), {2, 1},
                  {1.5811388300841898, 4.47213595499958}, tol);
    expect_values(reduce(Op::kReduceLogSumExp, x, std::vector<int64_t>{1}), {2, 1},
                  {1.8132616875182228, 4.00247568513773}, tol);
  }
}

TEST(ReduceOps, IntegerDtypes) {
  for (DType t : {DType::kI64, DType::kI32}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 3}, {-7, 0, 0, 1, 2, 2}), t);
    const auto along_1 = std::vector<int64_t>{1};
    Tensor y = reduce(Op::kReduceSum, x, along_1);
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 1}, {-7, 5});
    // numpy's integer mean truncates toward zero: -7/3 -> -2, 5/3 -> 1.
    expect_values(reduce(Op::kReduceMean, x, along_1), {2, 1}, {-2, 1});
    expect_values(reduce(Op::kReduceProd, x, std::vector<int64_t>{0}), {1, 3}, {-7, 0, 0});
    expect_values(reduce(Op::kReduceMax, x, along_1), {2, 1}, {0, 2});
    expect_values(reduce(Op::kReduceMin, x, along_1), {2, 1}, {-7, 1});
    expect_values(reduce(Op::kReduceL1, x, along_1), {2, 1}, {7, 5});
    expect_values(reduce(Op::kReduceSumSquare, x, along_1), {2, 1}, {49, 9});
    // sqrt(49) = 7, sqrt(9) = 3; sqrt(1 + 4 + 4 + 49) = 7.6 truncates to 7.
    expect_values(reduce(Op::kReduceL2, x, along_1), {2, 1}, {7, 3});
    expect_values(reduce(Op::kReduceL2, x, std::nullopt), {1, 1}, {7});
  }
  // Narrow integer and bool inputs are ReduceMax/ReduceMin only.
  const Tensor x8 = to_dtype(f32({2, 2}, {-100, 5, 7, 3}), DType::kI8);
  expect_values(reduce(Op::kReduceMax, x8, std::vector<int64_t>{1}), {2, 1}, {5, 7});
  expect_values(reduce(Op::kReduceMin, x8, std::vector<int64_t>{0}), {1, 2}, {-100, 3});
  const Tensor xu = to_dtype(f32({3}, {200, 7, 255}), DType::kU8);
  expect_values(reduce(Op::kReduceMax, xu, std::nullopt), {1}, {255});
  expect_values(reduce(Op::kReduceMin, xu, std::nullopt), {1}, {7});
  const Tensor xb = to_dtype(f32({2, 2}, {0, 1, 0, 0}), DType::kBool);
  Tensor any = reduce(Op::kReduceMax, xb, std::vector<int64_t>{1});
  EXPECT_EQ(any.dtype(), DType::kBool);
  expect_values(any, {2, 1}, {1, 0});
  expect_values(reduce(Op::kReduceMin, xb, std::vector<int64_t>{0}), {1, 2}, {0, 0});
}

TEST(ReduceOps, IntegerSumsWrapAroundLikeNumpy) {
  const Tensor x = Tensor::from_vector<int32_t>({2}, {2147483647, 1});
  expect_values(reduce(Op::kReduceSum, x, std::nullopt), {1}, {-2147483648.0});
  const Tensor big = i64({2}, {std::numeric_limits<int64_t>::max(), 2});
  const Tensor y = reduce(Op::kReduceSum, big, std::nullopt);
  EXPECT_EQ(y.data<int64_t>()[0], std::numeric_limits<int64_t>::min() + 1);
}

TEST(ReduceErrors, IntegerMeanOfNothingIsAnError) {
  expect_error(
      [] {
        reduce(Op::kReduceMean, Tensor(DType::kI64, {2, 0}), std::vector<int64_t>{1});
      },
      ErrorCode::kInvalidArgument, {"ReduceMean_under_test", "ReduceMean", "i64[2,0]"});
}

TEST(ReduceErrors, BadAxes) {
  const Tensor x = sample();
  expect_error([&] { reduce(Op::kReduceSum, x, std::vector<int64_t>{2}); },
               ErrorCode::kInvalidGraph,
               {"ReduceSum_under_test", "(ReduceSum)", "f32[2,3]", "axis 2", "rank 2"});
  expect_error([&] { reduce(Op::kReduceMax, x, std::vector<int64_t>{-3}); },
               ErrorCode::kInvalidGraph, {"ReduceMax", "f32[2,3]", "-3"});
  expect_error(
      [&] {
        reduce(Op::kReduceMean, x, std::vector<int64_t>{1, -1});
      },
      ErrorCode::kInvalidGraph, {"ReduceMean", "f32[2,3]", "[1,-1]", "twice"});
  expect_error([&] { reduce(Op::kReduceSum, Tensor::scalar<float>(1), std::vector<int64_t>{0}); },
               ErrorCode::kInvalidGraph, {"ReduceSum", "f32[]", "rank 0"});
  // axes must be a 1-D i64 tensor.
  expect_error(
      [&] {
        run_op1(Op::kReduceSum, {x, Tensor::from_vector<int32_t>({1}, {1})});
      },
      ErrorCode::kShapeMismatch, {"ReduceSum", "f32[2,3]", "i32[1]", "i64"});
  expect_error(
      [&] {
        run_op1(Op::kReduceSum, {x, i64({}, {1})});
      },
      ErrorCode::kShapeMismatch, {"ReduceSum", "i64[]", "rank 1"});
  // Older opsets' attribute form is not silently ignored.
  expect_error(
      [&] {
        reduce(Op::kReduceSum, x, std::nullopt, {{"axes", std::vector<int64_t>{1}}});
      },
      ErrorCode::kInvalidGraph, {"ReduceSum", "'axes'", "input"});
}

TEST(ReduceErrors, BadAttributesAndDtypes) {
  const Tensor x = sample();
  expect_error(
      [&] {
        reduce(Op::kReduceSum, x, std::nullopt, {{"keepdims", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"ReduceSum", "f32[2,3]", "keepdims", "0 or 1"});
  expect_error(
      [&] {
        reduce(Op::kReduceSum, x, std::nullopt, {{"noop_with_empty_axes", std::string("yes")}});
      },
      ErrorCode::kInvalidGraph, {"ReduceSum_under_test", "noop_with_empty_axes"});
  expect_error(
      [] {
        reduce(Op::kReduceLogSum, i64({2}, {1, 2}), std::nullopt);
      },
      ErrorCode::kShapeMismatch, {"ReduceLogSum", "i64[2]", "f32"});
  expect_error(
      [] {
        reduce(Op::kReduceLogSumExp, i64({2}, {1, 2}), std::nullopt);
      },
      ErrorCode::kShapeMismatch, {"ReduceLogSumExp", "i64[2]"});
  expect_error([] { reduce(Op::kReduceSum, Tensor(DType::kBool, {2}), std::nullopt); },
               ErrorCode::kShapeMismatch, {"ReduceSum", "bool[2]"});
  expect_error([] { reduce(Op::kReduceProd, Tensor(DType::kU8, {2}), std::nullopt); },
               ErrorCode::kShapeMismatch, {"ReduceProd", "u8[2]"});
}

TEST(ReduceShapes, SymbolicDimsWithConstantAxes) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 4, 8});
  EXPECT_EQ(b.type(b.reduce(Op::kReduceMean, x, {-1})).to_string(), "f32[batch,4,1]");
  EXPECT_EQ(b.type(b.reduce(Op::kReduceSum, x, {0, 2}, false)).to_string(), "f32[4]");
  EXPECT_EQ(b.type(b.reduce(Op::kReduceMax, x, {1}, false)).to_string(), "f32[batch,8]");
  EXPECT_EQ(b.type(b.reduce(Op::kReduceL2, x, {})).to_string(), "f32[1,1,1]");
  EXPECT_EQ(b.type(b.op1(Op::kReduceSum, {x}, {{"keepdims", int64_t{0}}})).to_string(), "f32[]");
  EXPECT_EQ(b.type(b.op1(Op::kReduceSum, {x, b.constant_ints({})},
                         {{"noop_with_empty_axes", int64_t{1}}}))
                .to_string(),
            "f32[batch,4,8]");
  expect_error([&] { b.reduce(Op::kReduceSum, x, {3}); }, ErrorCode::kInvalidGraph,
               {"ReduceSum", "f32[batch,4,8]", "axis 3"});
}

TEST(ReduceShapes, AxesKnownOnlyAtRunTime) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 1, 8});
  const ValueId axes = b.input("axes", DType::kI64, Shape{2});
  // keepdims: the rank is kept; a dim of 1 stays 1, the others may become 1.
  EXPECT_EQ(b.type(b.op1(Op::kReduceSum, {x, axes})).to_string(), "f32[?,1,?]");
  // keepdims=0 with a static axes length: the rank is known.
  EXPECT_EQ(b.type(b.op1(Op::kReduceSum, {x, axes}, {{"keepdims", int64_t{0}}})).to_string(),
            "f32[?]");
  const ValueId any_axes = b.input("any_axes", DType::kI64, Shape{Dim(std::string("n"))});
  expect_error(
      [&] {
        b.op1(Op::kReduceSum, {x, any_axes}, {{"keepdims", int64_t{0}}}, "rank_unknown");
      },
      ErrorCode::kUnsupported, {"rank_unknown", "ReduceSum", "f32[batch,1,8]", "i64[n]"});
  const ValueId too_many = b.input("too_many", DType::kI64, Shape{4});
  expect_error(
      [&] {
        b.op1(Op::kReduceSum, {x, too_many}, {{"keepdims", int64_t{0}}});
      },
      ErrorCode::kInvalidGraph, {"ReduceSum", "i64[4]", "rank 3"});

  // The graph runs once the axes arrive.
  GraphBuilder g;
  const ValueId gx = g.input("x", DType::kF32, Shape{Dim(std::string("batch")), 3});
  const ValueId ga = g.input("axes", DType::kI64, Shape{1});
  g.output(g.op1(Op::kReduceSum, {gx, ga}, {{"keepdims", int64_t{0}}}), "out");
  Session s(g.build());
  auto out = s.run({sample(), i64({1}, {0})});
  expect_values(out[0], {3}, {2, 2, 2});
}

}  // namespace
}  // namespace gf
