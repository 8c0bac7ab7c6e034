// GatherND's reference kernel (gather_nd.cpp), registered by register_layout_kernels.
#pragma once

#include "runtime/cpu/reference/kernels.h"

namespace gf::ref::layout {

void register_gather_nd_kernel(KernelTable& table);

}  // namespace gf::ref::layout
