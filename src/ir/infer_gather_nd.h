// GatherND's shape inference (infer_gather_nd.cpp), registered by register_layout_infer.
#pragma once

#include "ir/infer.h"

namespace gf::layout {

void register_gather_nd_infer(InferTable& table);

}  // namespace gf::layout
