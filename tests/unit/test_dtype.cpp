#include <cmath>
#include <limits>

#include "test_util.h"

namespace gf {
namespace {

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  }
  EXPECT_FALSE(parse_dtype("f128").has_value());
}

TEST(DType, HalfConvertsExactValuesExactly) {
  // Hand-checked bit patterns of IEEE binary16.
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);            // max half
  EXPECT_EQ(float_to_half_bits(6.103515625e-05f), 0x0400);    // min normal
  EXPECT_EQ(float_to_half_bits(5.9604644775390625e-08f), 0x0001);  // min subnormal
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(half_bits_to_float(0x0001), 5.9604644775390625e-08f);
  EXPECT_EQ(half_bits_to_float(0x03ff), 6.097555160522461e-05f);
}

TEST(DType, HalfRoundsToNearestEvenAndSaturatesToInf) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to even (1.0).
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even).
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7c00);  // rounds past max: inf
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
  // Subnormal tie: 1.5 * 2^-24 lies between units 1 and 2; ties to even gives 2.
  EXPECT_EQ(float_to_half_bits(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(float_to_half_bits(0.5f * std::ldexp(1.0f, -24)), 0x0000);  // tie to even 0
}

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<uint16_t>(b);
    if ((bits & 0x7c00) == 0x7c00) continue;  // inf/nan
    EXPECT_EQ(float_to_half_bits(half_bits_to_float(bits)), bits) << std::hex << b;
  }
}

TEST(DType, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16_bits_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is the tie between 1 and 1 + 2^-7: goes to even (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
}

TEST(Tensor, WrapSharesBytesWithoutCopy) {
  auto storage = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor t = Tensor::wrap(DType::kF32, {2, 3}, storage, storage->data());
  EXPECT_EQ(t.raw(), storage->data());
  (*storage)[4] = 50;
  EXPECT_EQ(t.data<float>()[4], 50);
  Tensor r = t.reshaped({3, 2});
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_THROW(t.reshaped({4}), Error);
}

TEST(Tensor, RejectsNegativeAndOverflowingDims) {
  testing::expect_error([] { Tensor(DType::kF32, {2, -1}); }, ErrorCode::kInvalidArgument,
                        {"negative dimension"});
  testing::expect_error([] { Tensor(DType::kF32, {1LL << 40, 1LL << 40}); },
                        ErrorCode::kInvalidArgument, {"overflows"});
}

TEST(Tensor, UnfilledHasTheShapeAlignmentAndChecksOfAZeroFilledOne) {
  Tensor t = Tensor::unfilled(DType::kF16, {3, 5});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t.nbytes(), 30u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<Half>()[i] = Half(static_cast<float>(i));
  EXPECT_EQ(static_cast<float>(t.data<Half>()[14]), 14.0f);
  testing::expect_error([] { Tensor::unfilled(DType::kF32, {2, -1}); }, ErrorCode::kInvalidArgument,
                        {"negative dimension"});
  testing::expect_error([] { Tensor::unfilled(DType::kF32, {1LL << 40, 1LL << 40}); },
                        ErrorCode::kInvalidArgument, {"overflows"});
  testing::expect_error([] { Tensor::unfilled(DType::kF64, {int64_t{1} << 61}); }, ErrorCode::kOutOfMemory,
                        {"too large"});
}

TEST(Tensor, WrongTypedAccessIsAnError) {
  Tensor t(DType::kF32, {2});
  EXPECT_THROW(t.data<int64_t>(), Error);
}

}  // namespace
}  // namespace gf
