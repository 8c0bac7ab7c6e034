// The CPU code generator: one fused kernel as a self-contained C++ source file, compiled by
// the JIT (jit_compiler.h). The file includes only <cmath>, <cstdint> and <cstring> and defines
//   extern "C" void <kernel.name>(void* const* buffers);   // buffers in kernel.buffers order
// with the loop nest that kernel_ir.h describes.
#pragma once

#include <cstdint>
#include <string>

#include "fusion/kernel_ir.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

// Below this many scalar evaluations per call a kernel runs on one thread: waking an OpenMP
// team whose threads sleep when idle (the CLI's OMP_WAIT_POLICY=passive) costs tens of
// microseconds, what ~256K simple elementwise evaluations take. ResNet-50's epilogues up to
// 14x14x1024 threaded gained nothing over one thread and lost the wake-ups (bench on 2 cores:
// 5-30% per run).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Fewest rows (outer points but the last dim's) that threads share before the emitter folds the
// last dim into the threaded loops too: fewer would leave cores idle on a many-core machine.
inline constexpr int64_t kMinParallelRows = 64;

struct CpuEmitOptions {
  // Round each f16/bf16 op result to its 16-bit format, as the unfused reference kernels do
  // when they store it; off, intermediates stay in float (faster, not bit-exact).
  bool round_16bit_intermediates = true;
};

// `graph` supplies the attributes and names of the nodes that the kernel's kOp exprs came from
// (an expr with node == kNoNode uses the op's default attributes). Throws kUnsupported naming
// the node and op when an op or dtype has no CPU form, kInvalidGraph for a malformed kernel.
std::string emit_cpu_kernel(const fusion::FusedKernel& kernel, const Graph& graph,
                            const CpuEmitOptions& options = {});

}  // namespace gf::codegen
