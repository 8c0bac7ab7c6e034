// The scalar part of code generation, shared by the CPU (C++) and CUDA (NVRTC) emitters: one
// elementwise op, cast, literal or 16-bit rounding as a C expression string. The semantics are
// those of the reference kernels (src/runtime/cpu/reference/elementwise*.cpp, cast.cpp).
//
// Values live in their compute type (see compute_c_type): f16/bf16 as float, bool as bool.
// Argument expressions must be free of side effects: an emitted expression may repeat them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graphfuse/attribute.h"
#include "graphfuse/dtype.h"
#include "graphfuse/op.h"

namespace gf::codegen {

// What differs between the targets that share this emitter. Helpers named here are defined by
// scalar_prelude() unless the target supplies its own.
struct Target {
  std::string name;         // "cpu", "cuda": for messages
  std::string inline_kw;    // how helper functions are declared
  std::string math_prefix;  // "std::" (overloads) or "" (C names)
  std::string f32_suffix;   // "" for std:: overloads, "f" for expf and friends
  std::string f64_suffix;   // usually ""
  std::map<std::string, std::string> f32_math_overrides;  // "exp" -> "__expf"
  std::map<std::string, std::string> f64_math_overrides;
  std::string float_as_bits = "gf_float_as_bits";  // uint32_t(float), bit copy
  std::string bits_as_float = "gf_bits_as_float";
  std::string f16_to_float = "gf_f16_to_f32";  // uint16_t bits -> float
  std::string float_to_f16 = "gf_f32_to_f16";  // float -> uint16_t bits, to nearest even
  std::string bf16_to_float = "gf_bf16_to_f32";
  std::string float_to_bf16 = "gf_f32_to_bf16";
  // float -> float rounded to bf16 in one step; empty: float_to_bf16 then bf16_to_float.
  std::string round_to_bf16;
  std::string f32_inf = "HUGE_VALF", f64_inf = "HUGE_VAL";
  std::string f32_nan = "NAN", f64_nan = "(double)NAN";
  bool define_bit_casts = true;      // false: the target defines float_as_bits/bits_as_float
  bool define_16bit_helpers = true;  // false: the target defines the four conversions
  // Faster f32 forms (hardware approximations within a few ulps) for f16/bf16 ops computed in
  // f32 without per-op rounding, where such an error is far below the final 16-bit rounding:
  // a function of (a, b) for a / b, and of x for Sigmoid. Empty: the target has none.
  std::string approx_divide, approx_sigmoid;
  // Sigmoid for a 16-bit result that is rounded right after (round_16bit_intermediates): the
  // precise exponential and a quotient within one f32 ulp, where the IEEE division's slow-path
  // branch costs more than the rest of the op; empty: gf_sigmoid.
  std::string rounded_16bit_sigmoid;
  // Gelu (erf and tanh forms) for f16/bf16 results, which are rounded to 16 bits after it
  // (per op or at the store): functions of x within far less than that rounding's error.
  // Empty: the float forms through erf and tanh.
  std::string gelu_erf_16bit, gelu_tanh_16bit;
  // Gelu's erf argument x / sqrt(2) as x * (1 / sqrt(2)): one multiply where an IEEE division
  // is about ten instructions, at most an ulp apart, below the error of the target's own erf.
  bool gelu_erf_by_reciprocal = false;
  // Functions of (acc, v) combining f32 Max and Min reductions: NaN when either is, as gf_max and
  // gf_min are, in fewer instructions. Empty: gf_max / gf_min.
  std::string f32_reduce_max, f32_reduce_min;
};

// The C++ compiler on the host, through <cmath>.
Target cpu_target();

// One elementwise op of the op table, as it appears in a fused kernel.
struct ScalarOp {
  Op op = Op::kIdentity;
  const Attributes* attrs = nullptr;  // the node's attributes; nullptr = none
  std::string node_name;              // for error messages
  std::vector<std::string> args;      // C expressions, each in its own compute type
  std::vector<DType> arg_types;
  DType result = DType::kF32;
};

// The C type a value of `t` is computed in: float for f32/f16/bf16, double, the integer types,
// bool. storage_c_type is how it sits in memory (f16/bf16: uint16_t bits, bool: uint8_t).
std::string compute_c_type(DType t);
std::string storage_c_type(DType t);

// The op as an expression in compute_c_type(op.result), not rounded to a 16-bit result type
// (emit_round_to does that where the caller wants the reference's per-op rounding). Throws
// kUnsupported naming the op and node for ops (or dtypes) that have no scalar form.
std::string emit_op(const Target& target, const ScalarOp& op);

// `expr` (in compute_c_type(from)) converted to `to`, with the reference Cast's rounding:
// to-nearest-even into floats (16-bit results round-trip through their format), truncation
// with saturation (NaN -> 0) into integers, modular between integers, x != 0 into bool.
std::string emit_cast(const Target& target, DType from, DType to, const std::string& expr);

// A float value rounded to the 16-bit format `t` and back (identity for other dtypes): what a
// reference kernel does when it stores an intermediate of that type.
std::string emit_round_to(const Target& target, DType t, const std::string& expr);

// Conversions between storage and compute type at loads and stores.
std::string emit_load_convert(const Target& target, DType t, const std::string& stored);
std::string emit_store_convert(const Target& target, DType t, const std::string& value);

// A literal of compute_c_type(t) holding `value` exactly (after rounding to t): hex floats,
// INFINITY/NAN spelled through the target, integers saturated into t's range.
std::string emit_literal(const Target& target, DType t, double value);

// The math function `name` ("exp", "log1p", ...) for the compute type of `t` (f32 or f64).
std::string math_fn(const Target& target, const std::string& name, DType t);

// Helper functions the emitted expressions call (wrapping integer arithmetic, NaN-propagating
// min/max, Python-style modulo, 16-bit conversions ...). Emit once per source file, before any
// kernel. Besides the target's math functions it needs only <cstdint> (and memcpy from
// <cstring> for the default bit casts).
std::string scalar_prelude(const Target& target);

}  // namespace gf::codegen
