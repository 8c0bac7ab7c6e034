// Binary broadcast ops: arithmetic over every numeric dtype, integer division/remainder rules
// and wraparound, Pow with mixed dtypes, comparisons, logic and bitwise ops, PRelu, Where and
// Clip, plus the errors inference and kernels raise.
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

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kNumericDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64,
                                    DType::kI64, DType::kI32, DType::kI8,   DType::kU8};

Tensor bools(std::vector<int64_t> dims, std::vector<bool> v) {
  return Tensor::from_vector<bool>(std::move(dims), v);
}

TEST(ElementwiseBinary, ArithmeticBroadcastsInEveryNumericDtype) {
  for (DType t : kNumericDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 3}, {1, 2, 3, 4, 5, 6}), t);
    const Tensor y = to_dtype(f32({3}, {1, 2, 3}), t);
    const Tensor sum = run_op1(Op::kAdd, {x, y});
    EXPECT_EQ(sum.dtype(), t);
    expect_values(sum, {2, 3}, {2, 4, 6, 5, 7, 9});
    expect_values(run_op1(Op::kSub, {x, y}), {2, 3}, {0, 0, 0, 3, 3, 3});
    expect_values(run_op1(Op::kMul, {x, y}), {2, 3}, {1, 4, 9, 4, 10, 18});
    const bool is_float = is_floating(t);
    expect_values(run_op1(Op::kDiv, {x, y}), {2, 3}, {1, 1, 1, 4, is_float ? 2.5 : 2.0, 2});
    // Size-1 dims broadcast on both sides: [2,1] op [1,3] -> [2,3].
    const Tensor col = to_dtype(f32({2, 1}, {10, 20}), t);
    const Tensor row = to_dtype(f32({1, 3}, {1, 2, 3}), t);
    expect_values(run_op1(Op::kAdd, {col, row}), {2, 3}, {11, 12, 13, 21, 22, 23});
  }
}

TEST(ElementwiseBinary, FloatDivisionByZeroFollowsIeee) {
  const Tensor y = run_op1(Op::kDiv, {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})});
  expect_values(y, {3}, {kInf, -kInf, kNaN});
  expect_values(run_op1(Op::kAdd, {f32({2}, {INFINITY, NAN}), f32({1}, {-INFINITY})}), {2},
                {kNaN, kNaN});
}

TEST(ElementwiseBinary, IntegerDivisionTruncatesTowardZero) {
  for (DType t : {DType::kI64, DType::kI32, DType::kI8}) {
    const Tensor x = to_dtype(f32({4}, {-7, 7, -7, 7}), t);
    const Tensor y = to_dtype(f32({4}, {2, 2, -2, -2}), t);
    expect_values(run_op1(Op::kDiv, {x, y}), {4}, {-3, 3, 3, -3});
  }
  // The one overflowing quotient wraps, as in numpy.
  const Tensor q = run_op1(
      Op::kDiv, {Tensor::from_vector<int8_t>({1}, {-128}), Tensor::from_vector<int8_t>({1}, {-1})});
  expect_values(q, {1}, {-128});
}

TEST(ElementwiseBinary, IntegerDivisionByZeroFailsNamingTheNode) {
  expect_error(
      [] {
        run_op1(Op::kDiv, {i64({2}, {4, 5}), i64({2}, {2, 0})});
      },
      ErrorCode::kInvalidArgument, {"Div_under_test", "Div", "i64[2]", "division by zero"});
  expect_error(
      [] {
        run_op1(Op::kMod, {i64({1}, {4}), i64({1}, {0})});
      },
      ErrorCode::kInvalidArgument, {"Mod_under_test", "Mod", "modulo by zero"});
}

TEST(ElementwiseBinary, IntegerArithmeticWrapsAround) {
  const auto i8 = [](std::vector<int8_t> v) {
    return Tensor::from_vector<int8_t>({static_cast<int64_t>(v.size())}, v);
  };
  const auto u8 = [](std::vector<uint8_t> v) {
    return Tensor::from_vector<uint8_t>({static_cast<int64_t>(v.size())}, v);
  };
  expect_values(run_op1(Op::kAdd, {i8({100, -100}), i8({100, -100})}), {2}, {-56, 56});
  expect_values(run_op1(Op::kAdd, {u8({200}), u8({100})}), {1}, {44});
  expect_values(run_op1(Op::kSub, {u8({3}), u8({5})}), {1}, {254});
  const int64_t max = std::numeric_limits<int64_t>::max();
  const Tensor s = run_op1(Op::kAdd, {i64({1}, {max}), i64({1}, {1})});
  EXPECT_EQ(s.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  const Tensor p = run_op1(Op::kMul, {Tensor::from_vector<int32_t>({1}, {65536}),
                                      Tensor::from_vector<int32_t>({1}, {65537})});
  EXPECT_EQ(p.data<int32_t>()[0], 65536);  // 2^32 + 2^16 mod 2^32
}

TEST(ElementwiseBinary, ModFollowsPythonSignRuleUnlessFmod) {
  for (DType t : {DType::kI64, DType::kI32, DType::kI8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({5}, {-7, 7, -7, 7, 6}), t);
    const Tensor y = to_dtype(f32({5}, {3, 3, -3, -3, 3}), t);
    expect_values(run_op1(Op::kMod, {x, y}), {5}, {2, 1, -1, -2, 0});
    expect_values(run_op1(Op::kMod, {x, y}, {{"fmod", int64_t{1}}}), {5}, {-1, 1, -1, 1, 0});
  }
  expect_values(run_op1(Op::kMod, {Tensor::from_vector<uint8_t>({2}, {250, 7}),
                                   Tensor::from_vector<uint8_t>({1}, {7})}),
                {2}, {5, 0});
  expect_values(run_op1(Op::kMod, {Tensor::from_vector<int8_t>({1}, {-128}),
                                   Tensor::from_vector<int8_t>({1}, {-1})}),
                {1}, {0});
  for (DType t : {DType::kF32, DType::kF64, DType::kF16}) {
    const Tensor x = to_dtype(f32({4}, {-7.5f, 7.5f, 5, INFINITY}), t);
    const Tensor y = to_dtype(f32({4}, {2, -2, 0, 2}), t);
    expect_values(run_op1(Op::kMod, {x, y}, {{"fmod", int64_t{1}}}), {4}, {-1.5, 1.5, kNaN, kNaN});
  }
}

TEST(ElementwiseBinary, PowOfFloats) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    const Tensor x = to_dtype(f32({5}, {2, 4, -8, 0, -2}), t);
    const Tensor y = to_dtype(f32({5}, {3, 0.5f, 0.5f, -1, 2}), t);
    expect_values(run_op1(Op::kPow, {x, y}), {5}, {8, 2, kNaN, kInf, 4});
  }
}

TEST(ElementwiseBinary, PowAcceptsAnExponentOfAnotherDtype) {
  // Float base, integer exponent.
  expect_values(run_op1(Op::kPow, {f32({3}, {2, 1.5f, -2}), i64({3}, {3, 2, -1})}), {3},
                {8, 2.25, -0.5});
  // f16 base, f64 exponent: the result is f16.
  const Tensor h = run_op1(Op::kPow, {to_dtype(f32({2}, {2, 4}), DType::kF16),
                                      Tensor::from_vector<double>({2}, {0.5, -1})});
  EXPECT_EQ(h.dtype(), DType::kF16);
  expect_values(h, {2}, {1.4140625, 0.25});  // sqrt(2) rounded to f16
  // Integer base, float exponent: the real result truncated toward zero.
  const Tensor i = run_op1(
      Op::kPow, {Tensor::from_vector<int32_t>({3}, {2, 9, 2}), f32({1, 3}, {0.5f, 0.5f, -1})});
  EXPECT_EQ(i.dtype(), DType::kI32);
  expect_values(i, {1, 3}, {1, 3, 0});
}

TEST(ElementwiseBinary, IntegerPowIsExactAndWraps) {
  const Tensor x = i64({7}, {2, 3, -2, 1, -1, 5, 0});
  const Tensor y = i64({7}, {10, -1, 3, -5, -3, 0, 0});
  expect_values(run_op1(Op::kPow, {x, y}), {7}, {1024, 0, -8, 1, -1, 1, 1});
  const Tensor big = run_op1(Op::kPow, {i64({1}, {3}), i64({1}, {39})});
  EXPECT_EQ(big.data<int64_t>()[0], 4052555153018976267);  // 3^39, beyond double's precision
  expect_values(run_op1(Op::kPow, {Tensor::from_vector<int8_t>({1}, {2}),
                                   Tensor::from_vector<uint8_t>({1}, {7})}),
                {1}, {-128});
}

TEST(ElementwiseBinary, ComparisonsGiveBoolAndNaNComparesFalse) {
  for (DType t : kNumericDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({2, 2}, {1, 2, 3, 4}), t);
    const Tensor y = to_dtype(f32({2}, {2, 3}), t);
    const Tensor eq = run_op1(Op::kEqual, {x, y});
    EXPECT_EQ(eq.dtype(), DType::kBool);
    expect_values(eq, {2, 2}, {0, 0, 0, 0});
    expect_values(run_op1(Op::kLess, {x, y}), {2, 2}, {1, 1, 0, 0});
    expect_values(run_op1(Op::kLessOrEqual, {x, y}), {2, 2}, {1, 1, 0, 0});
    expect_values(run_op1(Op::kGreater, {x, y}), {2, 2}, {0, 0, 1, 1});
    expect_values(run_op1(Op::kGreaterOrEqual, {x, y}), {2, 2}, {0, 0, 1, 1});
    expect_values(run_op1(Op::kEqual, {x, to_dtype(f32({}, {3}), t)}), {2, 2}, {0, 0, 1, 0});
  }
  const Tensor x = f32({4}, {1, 2, NAN, 4});
  const Tensor y = f32({4}, {2, 2, 2, NAN});
  expect_values(run_op1(Op::kEqual, {x, y}), {4}, {0, 1, 0, 0});
  expect_values(run_op1(Op::kLessOrEqual, {x, y}), {4}, {1, 1, 0, 0});
  expect_values(run_op1(Op::kGreaterOrEqual, {x, y}), {4}, {0, 1, 0, 0});
  expect_values(run_op1(Op::kEqual, {bools({2}, {true, false}), bools({2}, {true, true})}), {2},
                {1, 0});
}

TEST(ElementwiseBinary, LogicOpsOnBool) {
  const Tensor x = bools({2, 2}, {true, true, false, false});
  const Tensor y = bools({2}, {true, false});
  expect_values(run_op1(Op::kAnd, {x, y}), {2, 2}, {1, 0, 0, 0});
  expect_values(run_op1(Op::kOr, {x, y}), {2, 2}, {1, 1, 1, 0});
  expect_values(run_op1(Op::kXor, {x, y}), {2, 2}, {0, 1, 1, 0});
}

TEST(ElementwiseBinary, BitwiseOpsOnIntegers) {
  const Tensor a = Tensor::from_vector<uint8_t>({2}, {12, 255});
  const Tensor b = Tensor::from_vector<uint8_t>({2}, {10, 15});
  expect_values(run_op1(Op::kBitwiseAnd, {a, b}), {2}, {8, 15});
  expect_values(run_op1(Op::kBitwiseOr, {a, b}), {2}, {14, 255});
  expect_values(run_op1(Op::kBitwiseXor, {a, b}), {2}, {6, 240});
  const Tensor c = Tensor::from_vector<int32_t>({2}, {-1, 6});
  const Tensor d = Tensor::from_vector<int32_t>({1}, {5});
  expect_values(run_op1(Op::kBitwiseAnd, {c, d}), {2}, {5, 4});
  expect_values(run_op1(Op::kBitwiseXor, {i64({1}, {-1}), i64({1}, {5})}), {1}, {-6});
  expect_values(run_op1(Op::kBitwiseOr, {Tensor::from_vector<int8_t>({1}, {-128}),
                                         Tensor::from_vector<int8_t>({1}, {1})}),
                {1}, {-127});
}

TEST(ElementwiseBinary, PReluSlopeBroadcastsToX) {
  const Tensor x = f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  expect_values(run_op1(Op::kPRelu, {x, f32({3}, {0.1f, 0.2f, 0.3f})}), {2, 3},
                {-0.1, 2, -0.9, 4, -1, 6}, 1e-6);
  expect_values(run_op1(Op::kPRelu, {x, f32({2, 1}, {0.5f, 2})}), {2, 3},
                {-0.5, 2, -1.5, 4, -10, 6});
  expect_values(run_op1(Op::kPRelu, {x, f32({1}, {0})}), {2, 3}, {0, 2, 0, 4, 0, 6});
  expect_values(run_op1(Op::kPRelu, {Tensor::from_vector<int32_t>({3}, {-4, 4, 0}),
                                     Tensor::from_vector<int32_t>({}, {3})}),
                {3}, {-12, 4, 0});
  expect_values(run_op1(Op::kPRelu, {f32({1}, {NAN}), f32({1}, {2})}), {1}, {kNaN});
}

TEST(ElementwiseBinary, WhereBroadcastsAllThreeInputs) {
  const Tensor cond = bools({2, 1}, {true, false});
  for (DType t : {DType::kF32, DType::kI64, DType::kBF16, DType::kU8}) {
    const Tensor x = to_dtype(f32({3}, {1, 2, 3}), t);
    const Tensor y = to_dtype(f32({}, {7}), t);
    const Tensor out = run_op1(Op::kWhere, {cond, x, y});
    EXPECT_EQ(out.dtype(), t);
    expect_values(out, {2, 3}, {1, 2, 3, 7, 7, 7});
  }
  expect_values(run_op1(Op::kWhere,
                        {bools({2}, {false, true}), bools({2}, {true, false}), bools({1}, {true})}),
                {2}, {1, 0});
}

TEST(ElementwiseBinary, ClipWithOptionalBounds) {
  const Tensor x = f32({6}, {-3, -1, 0, 2, 5, NAN});
  const Tensor lo = Tensor::scalar(-1.0f);
  const Tensor hi = Tensor::scalar(2.0f);
  expect_values(run_op1(Op::kClip, {x, lo, hi}), {6}, {-1, -1, 0, 2, 2, kNaN});
  expect_values(run_op1(Op::kClip, {x, lo}), {6}, {-1, -1, 0, 2, 5, kNaN});
  expect_values(run_op1(Op::kClip, {x, Tensor(), hi}), {6}, {-3, -1, 0, 2, 2, kNaN});
  expect_values(run_op1(Op::kClip, {x}), {6}, {-3, -1, 0, 2, 5, kNaN});
  // min > max: every element becomes max, as in np.clip.
  expect_values(run_op1(Op::kClip, {x, Tensor::scalar(3.0f), Tensor::scalar(1.0f)}), {6},
                {1, 1, 1, 1, 1, kNaN});
  // Bounds of shape [1] are accepted as scalars.
  expect_values(run_op1(Op::kClip, {x, f32({1}, {0}), f32({1}, {1})}), {6}, {0, 0, 0, 1, 1, kNaN});
  const Tensor u = Tensor::from_vector<uint8_t>({3}, {0, 100, 255});
  expect_values(run_op1(Op::kClip, {u, Tensor::scalar(uint8_t{10}), Tensor::scalar(uint8_t{200})}),
                {3}, {10, 100, 200});
  expect_values(run_op1(Op::kClip, {i64({3}, {-5, 0, 5}), i64({}, {-2}), i64({}, {3})}), {3},
                {-2, 0, 3});
  expect_values(run_op1(Op::kClip, {to_dtype(x, DType::kF16), to_dtype(lo, DType::kF16)}), {6},
                {-1, -1, 0, 2, 5, kNaN});
}

TEST(ElementwiseBinary, EmptyTensorsBroadcast) {
  const Tensor e = run_op1(Op::kAdd, {Tensor(DType::kF32, {0, 3}), f32({3}, {1, 2, 3})});
  EXPECT_EQ(e.dims(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(run_op1(Op::kMul, {Tensor(DType::kI32, {2, 0}), Tensor(DType::kI32, {1})}).dims(),
            (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(run_op1(Op::kLess, {Tensor(DType::kF32, {0}), f32({1}, {1})}).dims(),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(
      run_op1(Op::kWhere, {Tensor(DType::kBool, {0, 1}), f32({2}, {1, 2}), f32({}, {0})}).dims(),
      (std::vector<int64_t>{0, 2}));
  // Integer division of nothing never divides by zero.
  EXPECT_EQ(run_op1(Op::kDiv, {Tensor(DType::kI64, {0}), i64({1}, {0})}).numel(), 0);
}

TEST(ElementwiseBinaryErrors, MismatchedDtypesAndShapes) {
  expect_error(
      [] {
        run_op1(Op::kAdd, {f32({2}, {1, 2}), i64({2}, {1, 2})});
      },
      ErrorCode::kShapeMismatch, {"Add_under_test", "Add", "f32[2]", "i64[2]", "dtype"});
  expect_error(
      [] {
        run_op1(Op::kMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({4}, {1, 2, 3, 4})});
      },
      ErrorCode::kShapeMismatch, {"Mul_under_test", "Mul", "f32[2,3]", "f32[4]", "broadcast"});
  expect_error(
      [] {
        run_op1(Op::kWhere, {bools({1}, {true}), f32({1}, {1}), i64({1}, {1})});
      },
      ErrorCode::kShapeMismatch, {"Where", "f32[1]", "i64[1]"});
  expect_error(
      [] {
        run_op1(Op::kWhere, {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})});
      },
      ErrorCode::kShapeMismatch, {"Where", "input 0", "bool"});
  expect_error(
      [] {
        run_op1(Op::kPRelu, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})});
      },
      ErrorCode::kShapeMismatch, {"PRelu", "slope [2]", "X [2,3]"});
  expect_error(
      [] {
        run_op1(Op::kPRelu, {f32({3}, {1, 2, 3}), f32({1, 3}, {1, 2, 3})});
      },
      ErrorCode::kShapeMismatch, {"PRelu", "f32[1,3]"});
}

TEST(ElementwiseBinaryErrors, DtypeRulesPerOp) {
  const Tensor b = bools({1}, {true});
  const Tensor f = f32({1}, {1});
  expect_error([&] { run_op1(Op::kAdd, {b, b}); }, ErrorCode::kShapeMismatch, {"Add", "bool[1]"});
  expect_error([&] { run_op1(Op::kLess, {b, b}); }, ErrorCode::kShapeMismatch, {"Less", "bool"});
  expect_error(
      [&] {
        run_op1(Op::kAnd, {f, f});
      },
      ErrorCode::kShapeMismatch, {"And", "f32[1]", "accepts bool"});
  expect_error(
      [&] {
        run_op1(Op::kBitwiseOr, {f, f});
      },
      ErrorCode::kShapeMismatch, {"BitwiseOr", "f32"});
  expect_error(
      [&] {
        run_op1(Op::kPow, {f, b});
      },
      ErrorCode::kShapeMismatch, {"Pow", "input 1", "bool"});
  expect_error(
      [&] {
        run_op1(Op::kPRelu,
                {Tensor::from_vector<uint8_t>({1}, {1}), Tensor::from_vector<uint8_t>({1}, {1})});
      },
      ErrorCode::kShapeMismatch, {"PRelu", "u8[1]"});
}

TEST(ElementwiseBinaryErrors, ModAttributeRules) {
  const Tensor f = f32({1}, {1});
  expect_error(
      [&] {
        run_op1(Op::kMod, {f, f});
      },
      ErrorCode::kInvalidGraph, {"Mod_under_test", "Mod", "f32[1]", "fmod=1"});
  expect_error(
      [&] {
        run_op1(Op::kMod, {i64({1}, {1}), i64({1}, {1})}, {{"fmod", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"Mod", "i64[1]", "'fmod' is 2"});
}

TEST(ElementwiseBinaryErrors, ClipBoundsMustBeScalarsOfTheInputDtype) {
  const Tensor x = f32({3}, {1, 2, 3});
  expect_error(
      [&] {
        run_op1(Op::kClip, {x, f32({2}, {0, 1})});
      },
      ErrorCode::kShapeMismatch,
      {"Clip_under_test", "Clip", "f32[3]", "f32[2]", "min must be a scalar"});
  expect_error(
      [&] {
        run_op1(Op::kClip, {x, Tensor(), i64({}, {1})});
      },
      ErrorCode::kShapeMismatch, {"Clip", "i64[]", "dtype"});
  expect_error([&] { run_op1(Op::kClip, {bools({1}, {true})}); }, ErrorCode::kShapeMismatch,
               {"Clip", "bool[1]"});
}

}  // namespace
}  // namespace gf
