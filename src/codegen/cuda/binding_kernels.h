// Source of the binding kernels (kernels/bindings.cuh): gf_bind_in and gf_bind_out, sized for
// a number of caller addresses. The source depends only on that capacity, so one compile serves
// every program with as many inputs and outputs (the NVRTC cache keeps it across processes).
#pragma once

#include <cstddef>
#include <string>

namespace gf::codegen {

// The kernel parameter of gf_bind_in holds this many addresses at most (8 KiB; the driver takes
// up to 32 KiB of parameters on Volta and later).
inline constexpr size_t kMaxBindings = 1024;

// The capacity compiled for `count` addresses: a power of two, at least 8, so programs of
// similar arity share a compile. Throws kUnsupported above kMaxBindings.
size_t binding_capacity(size_t count);

std::string binding_kernels_source(size_t capacity);

}  // namespace gf::codegen
