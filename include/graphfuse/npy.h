// NumPy's .npy format: one array per file (format versions 1.0, 2.0, 3.0; little-endian,
// C order).
//
// dtypes: f4 f2 f8 i8 i4 i1 u1 b1 map to f32 f16 f64 i64 i32 i8 u8 bool. bf16 has no NumPy type:
// write_npy stores a bf16 tensor as f4 (exact, bf16 is the top half of f32), so a bf16 tensor
// reads back as f32. Fortran order, big-endian data and other dtypes are refused with a clear
// error; a malformed header is kParseError, never a crash.
//
// Thread safety: read_npy and write_npy keep no shared state; calls on different files may run
// on several threads at once.
#pragma once

#include <string>
#include <string_view>

#include "graphfuse/tensor.h"

namespace gf {

Tensor read_npy(const std::string& path);
// Parses .npy bytes; `what` names the source in error messages.
Tensor parse_npy(std::string_view bytes, const std::string& what = "npy data");

void write_npy(const std::string& path, const Tensor& t);
std::string to_npy_bytes(const Tensor& t);

}  // namespace gf
