// Attention without copies around it. The Q, K and V an Attention node reads are often views of
// one product's output: GPT-2's QKV product split along its last axis, each part reshaped to
// [B, S, H, D] and transposed to [B, H, S, D]; BERT's three products each reshaped and
// transposed. Its output is transposed back and reshaped to [B, S, H*D] for the next product.
// The attention kernels address their operands by strides and an offset (HeadStrides), so they
// can read those buffers and write that one in place, and the kernels that would copy the views
// before and after the attention are not needed (cuda_program_builder.cpp plans this ahead of
// the groups, as it does the skinny GEMMs).
#pragma once

#include <optional>
#include <vector>

#include "codegen/cuda/anchor_attention.h"
#include "graphfuse/graph.h"
#include "passes/rewrite_util.h"

namespace gf::cuda {

// An attention operand as a view of a buffer: the value that holds it, and where in it.
struct HeadView {
  ValueId buffer = kNoValue;
  codegen::HeadStrides strides;
  std::vector<NodeId> through;  // the view nodes between the operand and the buffer
};

// `v` [B, H, S, D] made by Transpose(perm [0, 2, 1, 3]) of a Reshape to [B, S, H, D] of either a
// value with H*D elements per row, or one part of a Split or Slice (constant bounds, step 1)
// along the last axis of a value: that value, with the part's offset and the value's rows as
// the position stride. nullopt for anything else (static shapes only).
std::optional<HeadView> input_head_view(const Graph& g, ValueId v);

// `y` [B, H, S, Dv] (the Attention's output) written through a Transpose(perm [0, 2, 1, 3]) and
// then only Reshapes, each intermediate read by the next node alone: the last value, which holds
// [B, S, H, Dv] in order. `epilogue` must be exactly those nodes; nullopt otherwise. `uses`: g's.
std::optional<HeadView> output_head_view(const Graph& g, const ValueUses& uses, ValueId y,
                                         const std::vector<NodeId>& epilogue);

}  // namespace gf::cuda
