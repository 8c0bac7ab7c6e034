// The first contents of the tensor-core GEMM's private buffer (TensorCoreGemmBuffer::kMaps):
// its two tensor maps encoded by the driver, then zeros, which the kernel's blocks fill with
// maps of the addresses they are launched on (codegen/cuda/tensor_core_gemm.h).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/cuda/tensor_core_gemm.h"

namespace gf::cuda {

// tensor_core_gemm_maps_bytes(spec, sm_count) bytes. Throws kDeviceError where the driver
// refuses a map (it names the operand and its shape).
std::vector<uint8_t> tensor_core_gemm_maps_init(const codegen::TensorCoreGemmSpec& spec,
                                                int sm_count);

}  // namespace gf::cuda
