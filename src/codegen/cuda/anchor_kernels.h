// CUDA kernels for the anchor ops that the fused-kernel IR does not express: attention, pooling,
// and convolution where cuDNN is absent. Hand-written device code (kept as .cuh files that CMake
// embeds as strings), specialised to one node's static shapes and attributes by constants
// written ahead of it, and compiled by NVRTC like the generated kernels.
//
// ABI: the one of generated kernels (cuda_emitter.h):
//   extern "C" __global__ void <name>(void* const* buffers)
// with `buffers` the values of anchor_kernel_buffers(node), in that order.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

// The node's inputs that are present (optional inputs left out), in input order, then its
// outputs.
std::vector<ValueId> anchor_kernel_buffers(const Node& node);

// Whether emit_anchor_kernel has a kernel for this op at all (its shapes may still be refused).
bool has_cuda_anchor_kernel(Op op);

// Throws kUnsupported naming the node, op and shapes when the op, a dtype or an attribute has
// no kernel here (the executor then runs the node on the host).
CudaKernelSource emit_anchor_kernel(const Node& node, const Graph& g, const std::string& name,
                                    const CudaEmitOptions& options = {});

}  // namespace gf::codegen
