// One node run by its reference kernel inside a compiled program (the CPU backend's reference
// steps, the CUDA backend's host fallback): outputs zeroed as fresh tensors are, data-dependent
// checks re-run by shape inference (an axis given as an input, say), and a kernel's error
// prefixed with the node, op and input types.
#pragma once

#include <span>

#include "graphfuse/graph.h"

namespace gf::cpu {

// `inputs` in node.inputs order (undefined for an omitted input); `outputs` allocated with the
// planned types of `g`, in node.outputs order. Throws gf::Error naming the node on failure;
// an internal assertion when the run-time types differ from the plan.
void run_reference_step(const Graph& g, const Node& node, std::span<const Tensor> inputs,
                        std::span<Tensor> outputs);

}  // namespace gf::cpu
