// The CUDA target of the scalar emitter, and the source text every generated CUDA file starts
// with. NVRTC compiles it with no include path, so the prelude defines the fixed-width integer
// types and limits itself; the 16-bit conversions are the scalar emitter's bit manipulation (not
// cuda_fp16.h), so f16/bf16 results match the CPU and the reference bit for bit.
#pragma once

#include <string>

#include "codegen/common/scalar_emitter.h"

namespace gf::codegen {

// C math names (expf, exp), __device__ __forceinline__ helpers, bit casts through
// __float_as_uint / __uint_as_float, Inf and NaN spelled by their bits.
Target cuda_target();

// Integer typedefs and limits, the scalar helpers, and the warp-level helpers the kernels use.
std::string cuda_prelude();
// Just the prelude's gf_grid_dependency_sync() and gf_prefetch_l2(), for sources that take
// nothing else of it (the binding kernels).
std::string cuda_grid_dependency_helpers();

}  // namespace gf::codegen
