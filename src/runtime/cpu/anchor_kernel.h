// Anchor kernels of the fused CPU backend: Conv, MatMul, Gemm and Attention (and MaxPool, an
// opaque op that ResNets spend time in) compiled for their static shapes and run straight on
// the program's buffers (no conversion copies, no per-run shape work), where the reference
// kernels pay for their generality. Only f32 is taken; every other
// case stays on the reference kernel (make_anchor_kernel returns nullptr), so behaviour never
// depends on this layer, only speed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "graphfuse/graph.h"

namespace gf::cpu {

class AnchorKernel {
 public:
  virtual ~AnchorKernel() = default;
  // Scratch bytes that run() needs; the caller places them in the run's arena.
  virtual uint64_t workspace_bytes() const { return 0; }
  // `inputs` and `outputs` follow the node's order (nullptr for an omitted optional input);
  // outputs need not be zeroed.
  virtual void run(std::span<const void* const> inputs, std::span<void* const> outputs,
                   void* workspace) const = 0;
};

// The anchor kernel for node `id` of `g` (static shapes, inferred), or nullptr where the
// reference kernel must run it (another dtype, an unusual layout, sizes beyond BLAS's int).
std::unique_ptr<AnchorKernel> make_anchor_kernel(const Graph& g, NodeId id);

// Per op family, called by make_anchor_kernel with the node's static input dims.
std::unique_ptr<AnchorKernel> make_conv_kernel(const Graph& g, const Node& n);
std::unique_ptr<AnchorKernel> make_matmul_kernel(const Graph& g, const Node& n);
std::unique_ptr<AnchorKernel> make_gemm_kernel(const Graph& g, const Node& n);
std::unique_ptr<AnchorKernel> make_attention_kernel(const Graph& g, const Node& n);
std::unique_ptr<AnchorKernel> make_max_pool_kernel(const Graph& g, const Node& n);

// Conv `n` with its epilogue in the GEMM's last store: + a residual of the conv output's shape
// (run()'s inputs[3]; inputs[2] is the bias or null), then Relu. nullptr unless the conv runs on
// the packed GEMM (conv_kernel.cpp); the caller then runs the epilogue as a kernel of its own.
std::unique_ptr<AnchorKernel> make_conv_epilogue_kernel(const Graph& g, const Node& n,
                                                        bool residual, bool relu);

}  // namespace gf::cpu
