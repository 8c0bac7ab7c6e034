// Types, literals, casts and the storage <-> compute conversions of the scalar emitter.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

#include "codegen/common/scalar_emitter.h"
#include "graphfuse/error.h"

namespace gf::codegen {

Target cpu_target() {
  Target t;
  t.name = "cpu";
  t.inline_kw = "static inline";
  t.math_prefix = "std::";
  return t;
}

std::string compute_c_type(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return "float";
    case DType::kF64:
      return "double";
    case DType::kI64:
      return "int64_t";
    case DType::kI32:
      return "int32_t";
    case DType::kI8:
      return "int8_t";
    case DType::kU8:
      return "uint8_t";
    case DType::kBool:
      return "bool";
  }
  GF_ASSERT(false, "bad dtype");
  return "";
}

std::string storage_c_type(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16:
      return "uint16_t";
    case DType::kBool:
      return "uint8_t";  // gf::Tensor stores bool as one byte, 0 or 1
    default:
      return compute_c_type(t);
  }
}

std::string math_fn(const Target& target, const std::string& name, DType t) {
  const bool f64 = t == DType::kF64;
  const auto& overrides = f64 ? target.f64_math_overrides : target.f32_math_overrides;
  if (auto it = overrides.find(name); it != overrides.end()) return it->second;
  return target.math_prefix + name + (f64 ? target.f64_suffix : target.f32_suffix);
}

namespace {

// Exact: small whole numbers in decimal for the reader, everything else as a hex float.
std::string exact_float(double v) {
  char buf[64];
  if (v == std::trunc(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%a", v);
  }
  return buf;
}

std::string float_literal(const Target& target, DType t, double v) {
  const bool f64 = t == DType::kF64;
  if (std::isnan(v)) return f64 ? target.f64_nan : target.f32_nan;
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f64 ? target.f64_inf : target.f32_inf);
  if (f64) return exact_float(v);
  float f = static_cast<float>(v);
  if (t == DType::kF16) f = half_bits_to_float(float_to_half_bits(f));
  if (t == DType::kBF16) f = bf16_bits_to_float(float_to_bf16_bits(f));
  return exact_float(static_cast<double>(f)) + "f";
}

int64_t saturate(double v, double lo, double hi) {
  if (std::isnan(v)) return 0;
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return static_cast<int64_t>(hi);
  return static_cast<int64_t>(v);
}

}  // namespace

std::string emit_literal(const Target& target, DType t, double v) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kF64:
      return float_literal(target, t, v);
    case DType::kBool:
      return v != 0.0 ? "true" : "false";
    case DType::kI64: {
      if (std::isnan(v)) return "(int64_t)0";
      if (v >= 9223372036854775807.0) return "INT64_MAX";
      if (v <= -9223372036854775808.0) return "INT64_MIN";
      return "(int64_t)" + std::to_string(static_cast<int64_t>(v)) + "LL";
    }
    case DType::kI32:
      return "(int32_t)" + std::to_string(saturate(v, -2147483648.0, 2147483647.0));
    case DType::kI8:
      return "(int8_t)" + std::to_string(saturate(v, -128, 127));
    case DType::kU8:
      return "(uint8_t)" + std::to_string(saturate(v, 0, 255));
  }
  GF_ASSERT(false, "bad dtype");
  return "";
}

std::string emit_round_to(const Target& target, DType t, const std::string& expr) {
  if (t == DType::kF16) return target.f16_to_float + "(" + target.float_to_f16 + "(" + expr + "))";
  if (t == DType::kBF16) {
    if (!target.round_to_bf16.empty()) return target.round_to_bf16 + "(" + expr + ")";
    return target.bf16_to_float + "(" + target.float_to_bf16 + "(" + expr + "))";
  }
  return expr;
}

std::string emit_load_convert(const Target& target, DType t, const std::string& stored) {
  switch (t) {
    case DType::kF16:
      return target.f16_to_float + "(" + stored + ")";
    case DType::kBF16:
      return target.bf16_to_float + "(" + stored + ")";
    case DType::kBool:
      return "(" + stored + " != 0)";
    default:
      return stored;
  }
}

std::string emit_store_convert(const Target& target, DType t, const std::string& value) {
  switch (t) {
    case DType::kF16:
      return target.float_to_f16 + "(" + value + ")";
    case DType::kBF16:
      return target.float_to_bf16 + "(" + value + ")";
    case DType::kBool:
      return "(uint8_t)(" + value + " ? 1 : 0)";
    default:
      return value;
  }
}

std::string emit_cast(const Target& target, DType from, DType to, const std::string& expr) {
  if (from == to) return expr;
  const std::string to_c = compute_c_type(to);
  if (to == DType::kBool) return "(" + expr + " != 0)";  // NaN is true
  if (from == DType::kBool) return "(" + to_c + ")(" + expr + " ? 1 : 0)";
  const bool from_float = is_floating(from);
  if (to == DType::kF16 || to == DType::kBF16) {
    // Round once into the 16-bit format: float sources directly, wider sources via round-to-odd.
    std::string f = expr;
    if (from == DType::kF64) f = "gf_f64_to_f32_odd(" + expr + ")";
    if (is_integer(from)) f = "gf_i64_to_f32_odd((int64_t)" + expr + ")";
    return emit_round_to(target, to, f);
  }
  if (is_floating(to)) return "(" + to_c + ")(" + expr + ")";
  if (from_float) {
    return "gf_f2i_" + std::string(dtype_name(to)) + "((double)(" + expr + "))";
  }
  return "(" + to_c + ")(" + expr + ")";  // integer to integer: modular
}

}  // namespace gf::codegen
