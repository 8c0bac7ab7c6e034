// Convolutions on channels-last data, for executors whose convolution library runs its 16-bit
// tensor-core kernels on NHWC only: cuDNN on sm_80 and later transposes NCHW operands (filter
// included) into NHWC around every such call, which cost a ResNet-50 at batch 32 more than a
// quarter of its time on an H200.
//
// Each 2-D Conv of f16/bf16 with static shapes and symmetric padding becomes an NhwcConv of the
// transposed X and W (a constant W is transposed here, once), its bias added by an Add over the
// last axis, which the fusion planner folds into the epilogue kernel with the Relu or residual
// Add after it. An elementwise or broadcast node whose 4-D inputs all have a channels-last twin
// of its own shape (the rest being one-element values) runs on the twins too. So a chain
// Conv -> Relu -> Conv -> Add -> Relu stays channels-last from end to end: one Transpose where
// it starts, and one for each reader that needs channels-first data (a pool, a reshape).
// Not part of run_passes: the CPU backend runs Conv channels-first.
#pragma once

#include "graphfuse/graph.h"

namespace gf {

// Returns the number of Conv nodes rewritten. Every value of the graph keeps its id, name and
// type (channels-first values are now Transposes of their twins, or dead).
int channels_last_convs(Graph& g);

}  // namespace gf
