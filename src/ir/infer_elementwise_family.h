// Private to the elementwise inference files: dtype sets, attribute reads that name the node,
// and the registration of the broadcast half of the family (infer_broadcast.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "ir/infer.h"

namespace gf::elementwise_infer {

// A set of dtypes as a bit mask, so rules read as data: infer_unary<kFloatTypes>.
using DTypeMask = uint16_t;

constexpr DTypeMask dtype_bit(DType t) {
  return static_cast<DTypeMask>(1u << static_cast<unsigned>(t));
}

inline constexpr DTypeMask kFloatTypes = dtype_bit(DType::kF32) | dtype_bit(DType::kF16) |
                                         dtype_bit(DType::kBF16) | dtype_bit(DType::kF64);
inline constexpr DTypeMask kSignedNumericTypes =
    kFloatTypes | dtype_bit(DType::kI64) | dtype_bit(DType::kI32) | dtype_bit(DType::kI8);
inline constexpr DTypeMask kNumericTypes = kSignedNumericTypes | dtype_bit(DType::kU8);
inline constexpr DTypeMask kIntegerTypes =
    dtype_bit(DType::kI64) | dtype_bit(DType::kI32) | dtype_bit(DType::kI8) | dtype_bit(DType::kU8);
inline constexpr DTypeMask kBoolType = dtype_bit(DType::kBool);
inline constexpr DTypeMask kAllTypes = kNumericTypes | kBoolType;

// Fails (kShapeMismatch) unless input i's dtype is in `allowed`, listing what the op accepts.
void expect_dtype_in(const InferContext& ctx, int i, DTypeMask allowed);

// Attribute reads whose failures (wrong attribute kind) name the node, op and input types.
int64_t attr_int(const InferContext& ctx, const std::string& name, int64_t fallback);
float attr_float(const InferContext& ctx, const std::string& name, float fallback);
std::string attr_string(const InferContext& ctx, const std::string& name,
                        const std::string& fallback);

// True for rank 0 (ONNX's scalar) or a single dim that is 1 or not yet known: the form
// ONNX Runtime also accepts for Clip's bounds and Dropout's ratio.
bool may_be_scalar(const Shape& s);

void register_broadcast_infer(InferTable& table);

}  // namespace gf::elementwise_infer
