// Variadic broadcast ops Min, Max, Sum and Mean: any number of inputs broadcast together, NaN
// propagation, dtypes and errors.
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ElementwiseVariadic, ThreeInputsBroadcastTogether) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor a = to_dtype(f32({2, 1}, {1, 5}), t);
    const Tensor b = to_dtype(f32({3}, {0, 3, 6}), t);
    const Tensor c = to_dtype(f32({}, {2}), t);
    const Tensor mx = run_op1(Op::kMax, {a, b, c});
    EXPECT_EQ(mx.dtype(), t);
    expect_values(mx, {2, 3}, {2, 3, 6, 5, 5, 6});
    expect_values(run_op1(Op::kMin, {a, b, c}), {2, 3}, {0, 1, 1, 0, 2, 2});
    expect_values(run_op1(Op::kSum, {a, b, c}), {2, 3}, {3, 6, 9, 7, 10, 13});
    const double tol = t == DType::kBF16 ? 1e-2 : t == DType::kF16 ? 1e-3 : 1e-6;
    expect_values(run_op1(Op::kMean, {a, b, c}), {2, 3}, {1, 2, 3, 7.0 / 3, 10.0 / 3, 13.0 / 3},
                  tol);
  }
}

TEST(ElementwiseVariadic, MinAndMaxOnIntegers) {
  for (DType t : {DType::kI64, DType::kI32, DType::kI8, DType::kU8}) {
    const Tensor a = to_dtype(f32({3}, {1, 9, 4}), t);
    const Tensor b = to_dtype(f32({3}, {3, 2, 4}), t);
    expect_values(run_op1(Op::kMax, {a, b}), {3}, {3, 9, 4});
    expect_values(run_op1(Op::kMin, {a, b}), {3}, {1, 2, 4});
  }
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const Tensor m = run_op1(Op::kMin, {i64({2}, {lo, 0}), i64({1}, {-1})});
  EXPECT_EQ(m.data<int64_t>()[0], lo);
  EXPECT_EQ(m.data<int64_t>()[1], -1);
}

TEST(ElementwiseVariadic, MinAndMaxPropagateNaNFromAnyInput) {
  const Tensor a = f32({3}, {NAN, 1, 2});
  const Tensor b = f32({3}, {0, NAN, 1});
  const Tensor c = f32({3}, {5, 5, 5});
  expect_values(run_op1(Op::kMax, {a, b, c}), {3}, {kNaN, kNaN, 5});
  expect_values(run_op1(Op::kMin, {a, b, c}), {3}, {kNaN, kNaN, 1});
  expect_values(run_op1(Op::kMax, {c, a}), {3}, {kNaN, 5, 5});
  expect_values(run_op1(Op::kSum, {a, c}), {3}, {kNaN, 6, 7});
}

TEST(ElementwiseVariadic, OneInputIsACopy) {
  const Tensor a = f32({2}, {-1, 4});
  for (Op op : {Op::kMin, Op::kMax, Op::kSum, Op::kMean}) {
    expect_values(run_op1(op, {a}), {2}, {-1, 4});
  }
}

TEST(ElementwiseVariadic, Float16SumRoundsOnceAtTheEnd) {
  // 2048 + 1 + 1 in f16: summed in float it is 2050 (exact in f16); rounding after each step
  // would give 2048 (2049 ties to even).
  const Tensor a = to_dtype(f32({1}, {2048}), DType::kF16);
  const Tensor one = to_dtype(f32({1}, {1}), DType::kF16);
  expect_values(run_op1(Op::kSum, {a, one, one}), {1}, {2050});
}

TEST(ElementwiseVariadic, EmptyInputsGiveEmptyOutputs) {
  const Tensor y =
      run_op1(Op::kSum, {Tensor(DType::kF32, {0, 2}), f32({2}, {1, 2}), f32({1, 1}, {1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{0, 2}));
}

TEST(ElementwiseVariadicErrors, DtypesAndShapesMustAgree) {
  expect_error(
      [] {
        run_op1(Op::kMax, {f32({1}, {1}), f32({1}, {2}), i64({1}, {3})});
      },
      ErrorCode::kShapeMismatch, {"Max_under_test", "Max", "i64[1]", "inputs 0 and 2"});
  expect_error(
      [] {
        run_op1(Op::kSum, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
      },
      ErrorCode::kShapeMismatch, {"Sum_under_test", "f32[2]", "f32[3]", "broadcast"});
  // ONNX defines Sum and Mean on float types only.
  expect_error(
      [] {
        run_op1(Op::kSum, {i64({1}, {1}), i64({1}, {2})});
      },
      ErrorCode::kShapeMismatch, {"Sum", "i64[1]", "f32, f16, bf16, f64"});
  expect_error([] { run_op1(Op::kMean, {i64({1}, {1})}); }, ErrorCode::kShapeMismatch,
               {"Mean", "i64[1]"});
  expect_error([] { run_op1(Op::kMin, {Tensor::from_vector<bool>({1}, {true})}); },
               ErrorCode::kShapeMismatch, {"Min", "bool[1]"});
}

}  // namespace
}  // namespace gf
