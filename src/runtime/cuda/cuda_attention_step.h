// Which attention runs an Attention node: our generated kernel, or cuDNN's fused attention
// (cudnn_sdpa.h) on the same operands, read and written in place through the same strides.
// SessionOptions::attention decides; under kAuto both are timed once per call shape on scratch
// buffers when the program is compiled, and the faster is kept: remembered for the process (a
// model's repeated layers are timed once) and beside the kernel cache on disk (a later process
// times nothing).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/anchor_attention.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

// `generated` is the kernel step for node `id` as `a` describes it, with `buffers` its table
// (Q, K, V, then Y, with no mask). Returns a kAttention step when `path` (and under kAuto the
// timing) picks cuDNN, nullopt to keep `generated`. Creates lib.cudnn on first use; a build or
// device without cuDNN marks lib.cudnn_refused and keeps ours. Throws only what is not a refusal.
std::optional<CudaStep> cudnn_attention_step(const Graph& g, NodeId id,
                                             const codegen::AttentionNode& a,
                                             const CudaStep& generated, AttentionPath path,
                                             CudaLibraries& lib);

}  // namespace gf::cuda
