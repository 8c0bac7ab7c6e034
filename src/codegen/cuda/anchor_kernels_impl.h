// The per-family entry points behind emit_anchor_kernel (anchor_kernels.cpp dispatches by op).
// Each has emit_anchor_kernel's contract for the ops of its family.
#pragma once

#include <string>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

CudaKernelSource emit_attention_kernel(const Node& node, const Graph& g, const std::string& name,
                                       const CudaEmitOptions& options);  // anchor_attention.cpp
// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool (anchor_window.cpp).
CudaKernelSource emit_pool_kernel(const Node& node, const Graph& g, const std::string& name,
                                  const CudaEmitOptions& options);
// Conv, directly (anchor_window.cpp).
CudaKernelSource emit_conv_kernel(const Node& node, const Graph& g, const std::string& name,
                                  const CudaEmitOptions& options);

}  // namespace gf::codegen
