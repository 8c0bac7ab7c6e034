// Float tanh and erf for generated CPU kernels: branch-free inline code that the compiler
// vectorises (7x faster than libm's tanhf there, 1.5x where the loop stays scalar); libm's
// tanhf through __expm1f cost most of a GPT-2 block. Each is evaluated in double and rounded
// once, so the float result is within 1 ulp of the exact value over the whole float range
// (subnormals, inf and NaN included). exp stays libm's: its scalar expf is faster than this one.
#pragma once

#include <string>

#include "codegen/common/scalar_emitter.h"

namespace gf::codegen {

// cpu_target() with tanh and erf of f32 routed to the functions of cpu_math_prelude().
Target cpu_kernel_target();

// The source of those functions (gf_tanhf, gf_erff), to emit before the kernels. Needs <cmath>,
// <cstdint> and <cstring>.
std::string cpu_math_prelude();

}  // namespace gf::codegen
