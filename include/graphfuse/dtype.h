// Element types and the 16-bit float storage types.
//
// Thread safety: plain values and pure functions; safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gf {

enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool };
inline constexpr int kNumDTypes = 9;

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "bf16", ...
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType t);
bool is_integer(DType t);  // excludes bool

// IEEE binary16, stored as bits; arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f);
  operator float() const;
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

// bfloat16 (the top half of a float32), stored as bits; arithmetic goes through float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

float half_bits_to_float(uint16_t bits);
uint16_t float_to_half_bits(float f);  // round to nearest even
float bf16_bits_to_float(uint16_t bits);
uint16_t float_to_bf16_bits(float f);  // round to nearest even; NaN stays NaN

inline Half::Half(float f) : bits(float_to_half_bits(f)) {}
inline Half::operator float() const { return half_bits_to_float(bits); }
inline BFloat16::BFloat16(float f) : bits(float_to_bf16_bits(f)) {}
inline BFloat16::operator float() const { return bf16_bits_to_float(bits); }

// Maps a C++ storage type to its DType.
template <class T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

}  // namespace gf
