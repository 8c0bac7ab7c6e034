// Cast and CastLike: all 81 dtype pairs, float-to-int truncation and saturation, modular
// integer narrowing, correct single rounding into f16/bf16, bool rules, and errors.
#include <cmath>
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

Tensor cast(const Tensor& x, DType to) {
  return run_op1(Op::kCast, {x}, {{"to", static_cast<int64_t>(to)}});
}

TEST(Cast, EveryDtypePairOnValuesAllTypesHold) {
  // 0..127 integers are exact in every dtype; bool holds their truth value.
  const std::vector<float> values = {0, 1, 2, 5, 100, 127};
  for (int f = 0; f < kNumDTypes; ++f) {
    for (int t = 0; t < kNumDTypes; ++t) {
      const auto from = static_cast<DType>(f), to = static_cast<DType>(t);
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      const Tensor x = to_dtype(f32({2, 3}, values), from);
      const Tensor y = cast(x, to);
      EXPECT_EQ(y.dtype(), to);
      std::vector<double> expected;
      for (float v : values) {
        const bool truth = v != 0;
        expected.push_back(from == DType::kBool || to == DType::kBool ? truth : v);
      }
      expect_values(y, {2, 3}, expected, 0, 0);
    }
  }
}

TEST(Cast, FloatToIntegerTruncatesTowardZero) {
  const Tensor x = f32({6}, {2.7f, -2.7f, -0.5f, 0.99f, 126.9f, -127.9f});
  for (DType to : {DType::kI64, DType::kI32, DType::kI8}) {
    for (DType from : {DType::kF32, DType::kF64}) {
      expect_values(cast(to_dtype(x, from), to), {6}, {2, -2, 0, 0, 126, -127}, 0, 0);
    }
  }
  expect_values(cast(f32({3}, {2.7f, 0.5f, 254.9f}), DType::kU8), {3}, {2, 0, 254}, 0, 0);
  expect_values(cast(to_dtype(f32({2}, {-2.5f, 3.75f}), DType::kBF16), DType::kI32), {2}, {-2, 3},
                0, 0);
}

TEST(Cast, FloatToIntegerSaturatesOutOfRangeAndMapsNaNToZero) {
  const Tensor x = f32({5}, {1e10f, -1e10f, NAN, INFINITY, -INFINITY});
  const Tensor i32 = cast(x, DType::kI32);
  const std::vector<int32_t> want32 = {
      std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 0,
      std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(i32.data<int32_t>()[i], want32[static_cast<size_t>(i)]);
  const Tensor i64v = cast(Tensor::from_vector<double>({2}, {1e19, -1e19}), DType::kI64);
  EXPECT_EQ(i64v.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_EQ(i64v.data<int64_t>()[1], std::numeric_limits<int64_t>::min());
  expect_values(cast(f32({4}, {300, -1, 255.5f, NAN}), DType::kU8), {4}, {255, 0, 255, 0}, 0, 0);
  expect_values(cast(f32({2}, {200, -200}), DType::kI8), {2}, {127, -128}, 0, 0);
}

TEST(Cast, IntegerNarrowingIsModular) {
  expect_values(cast(i64({4}, {300, -1, 256, -129}), DType::kU8), {4}, {44, 255, 0, 127}, 0, 0);
  expect_values(cast(Tensor::from_vector<int32_t>({2}, {200, -56}), DType::kI8), {2}, {-56, -56}, 0,
                0);
  expect_values(cast(Tensor::from_vector<uint8_t>({1}, {255}), DType::kI8), {1}, {-1}, 0, 0);
  expect_values(cast(Tensor::from_vector<int8_t>({1}, {-1}), DType::kI64), {1}, {-1}, 0, 0);
  expect_values(cast(Tensor::from_vector<uint8_t>({1}, {255}), DType::kI64), {1}, {255}, 0, 0);
}

TEST(Cast, ToBoolIsNonzeroAndNaNIsTrue) {
  const Tensor x = f32({5}, {0.0f, -0.0f, NAN, 0.1f, -INFINITY});
  for (DType from : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    expect_values(cast(to_dtype(x, from), DType::kBool), {5}, {0, 0, 1, 1, 1}, 0, 0);
  }
  expect_values(cast(i64({3}, {0, -5, 256}), DType::kBool), {3}, {0, 1, 1}, 0, 0);
  expect_values(cast(Tensor::from_vector<uint8_t>({2}, {0, 128}), DType::kBool), {2}, {0, 1}, 0, 0);
}

TEST(Cast, FloatNarrowingRoundsToNearestEvenAndOverflowsToInfinity) {
  // f16: max 65504; 65520 is the tie to infinity. bf16 ties: 1 + 2^-8 -> 1, 1 + 3*2^-8 -> 1 + 2^-6.
  expect_values(cast(f32({4}, {65504, 65520, -1e6f, 1e-8f}), DType::kF16), {4},
                {65504, kInf, -kInf, 0}, 0, 0);
  expect_values(cast(f32({2}, {1.00390625f, 1.01171875f}), DType::kBF16), {2}, {1.0, 1.015625}, 0,
                0);
  expect_values(cast(Tensor::from_vector<double>({2}, {1e300, 0.1}), DType::kF32), {2},
                {kInf, static_cast<double>(0.1f)}, 0, 0);
  expect_values(cast(f32({3}, {NAN, INFINITY, -INFINITY}), DType::kBF16), {3}, {kNaN, kInf, -kInf});
  expect_values(cast(to_dtype(f32({2}, {NAN, -INFINITY}), DType::kF16), DType::kF64), {2},
                {kNaN, -kInf});
}

TEST(Cast, DoubleAndInt64IntoHalfTypesRoundOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the f16 tie between 1 and 1 + 2^-10. Going through float
  // first would lose the 2^-40 and round the resulting exact tie down to 1.
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  expect_values(cast(Tensor::from_vector<double>({1}, {d}), DType::kF16), {1},
                {1.0 + std::ldexp(1.0, -10)}, 0, 0);
  // 2^24 + 2^16 + 1 lies just above the bf16 tie between 2^24 and 2^24 + 2^17.
  expect_values(cast(i64({1}, {(int64_t{1} << 24) + (1 << 16) + 1}), DType::kBF16), {1},
                {16777216.0 + 131072.0}, 0, 0);
  expect_values(cast(i64({1}, {-((int64_t{1} << 24) + (1 << 16) + 1)}), DType::kBF16), {1},
                {-(16777216.0 + 131072.0)}, 0, 0);
  expect_values(cast(i64({2}, {70000, -2049}), DType::kF16), {2}, {kInf, -2048}, 0, 0);
  // An exact tie still goes to even.
  expect_values(cast(i64({1}, {2049}), DType::kF16), {1}, {2048}, 0, 0);
}

TEST(Cast, BetweenTheSixteenBitFloats) {
  // bf16 -> f16: 3.140625 is exact in both; 1e5 overflows f16; f16 -> bf16 rounds 1 + 2^-10.
  const Tensor b = to_dtype(f32({2}, {3.140625f, 1e5f}), DType::kBF16);
  expect_values(cast(b, DType::kF16), {2}, {3.140625, kInf}, 0, 0);
  const Tensor h = to_dtype(f32({1}, {1.0009765625f}), DType::kF16);
  expect_values(cast(h, DType::kBF16), {1}, {1.0}, 0, 0);
}

TEST(Cast, BoolToNumbersIsOneOrZero) {
  const Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  for (int t = 0; t < kNumDTypes; ++t) {
    expect_values(cast(b, static_cast<DType>(t)), {2}, {1, 0}, 0, 0);
  }
}

TEST(Cast, EmptyAndScalarTensors) {
  const Tensor e = cast(Tensor(DType::kF32, {3, 0}), DType::kI8);
  EXPECT_EQ(e.dtype(), DType::kI8);
  EXPECT_EQ(e.dims(), (std::vector<int64_t>{3, 0}));
  expect_values(cast(Tensor::scalar(-3.5), DType::kI32), {}, {-3}, 0, 0);
}

TEST(CastLike, TakesTheDtypeOfTheSecondInput) {
  const Tensor x = f32({2, 2}, {1.5f, -2.5f, 300, 0});
  const Tensor like_u8(DType::kU8, {7});
  const Tensor y = run_op1(Op::kCastLike, {x, like_u8});
  EXPECT_EQ(y.dtype(), DType::kU8);
  expect_values(y, {2, 2}, {1, 0, 255, 0}, 0, 0);
  const Tensor z = run_op1(Op::kCastLike, {x, Tensor(DType::kF16, {})});
  EXPECT_EQ(z.dtype(), DType::kF16);
  expect_values(z, {2, 2}, {1.5, -2.5, 300, 0}, 0, 0);
}

TEST(CastErrors, ToAttributeIsRequiredAndMustBeADType) {
  const Tensor x = f32({2}, {1, 2});
  expect_error([&] { run_op1(Op::kCast, {x}); }, ErrorCode::kInvalidGraph,
               {"Cast_under_test", "Cast", "f32[2]", "'to' is required"});
  expect_error(
      [&] {
        run_op1(Op::kCast, {x}, {{"to", int64_t{42}}});
      },
      ErrorCode::kInvalidGraph, {"Cast_under_test", "f32[2]", "42"});
  expect_error(
      [&] {
        run_op1(Op::kCast, {x}, {{"to", int64_t{-1}}});
      },
      ErrorCode::kInvalidGraph, {"Cast", "-1"});
  expect_error(
      [&] {
        run_op1(Op::kCast, {x}, {{"to", std::string("f16")}});
      },
      ErrorCode::kInvalidGraph, {"Cast_under_test", "'to'"});
}

}  // namespace
}  // namespace gf
