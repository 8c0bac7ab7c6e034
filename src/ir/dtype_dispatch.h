// Dispatch from a run-time DType to code templated on the storage type.
#pragma once

#include <type_traits>

#include "graphfuse/dtype.h"
#include "graphfuse/error.h"

namespace gf {

template <class T>
struct TypeTag {
  using type = T;
};

// The type arithmetic is done in: float for the 16-bit floats, the type itself otherwise.
template <class T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                                 std::is_same_v<T, BFloat16>;

// Calls f(TypeTag<T>{}) for the storage type T of `t`.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kF32: return f(TypeTag<float>{});
    case DType::kF16: return f(TypeTag<Half>{});
    case DType::kBF16: return f(TypeTag<BFloat16>{});
    case DType::kF64: return f(TypeTag<double>{});
    case DType::kI64: return f(TypeTag<int64_t>{});
    case DType::kI32: return f(TypeTag<int32_t>{});
    case DType::kI8: return f(TypeTag<int8_t>{});
    case DType::kU8: return f(TypeTag<uint8_t>{});
    case DType::kBool: return f(TypeTag<bool>{});
  }
  GF_ASSERT(false, "bad dtype");
  return f(TypeTag<float>{});
}

// Same, restricted to the floating types; others throw kUnsupported with `what` in the message.
template <class F>
decltype(auto) visit_float_dtype(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::kF32: return f(TypeTag<float>{});
    case DType::kF16: return f(TypeTag<Half>{});
    case DType::kBF16: return f(TypeTag<BFloat16>{});
    case DType::kF64: return f(TypeTag<double>{});
    default:
      throw Error(ErrorCode::kUnsupported,
                  std::string(what) + ": dtype " + std::string(dtype_name(t)) + " is not a float");
  }
}

}  // namespace gf
