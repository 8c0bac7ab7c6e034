#include "runtime/cuda/tensor_core_gemm_maps.h"

#include <cuda.h>

#include <array>
#include <cstring>
#include <string>

#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

std::vector<uint8_t> tensor_core_gemm_maps_init(const codegen::TensorCoreGemmSpec& spec,
                                                int sm_count) {
  static_assert(sizeof(CUtensorMap) == codegen::kTensorCoreGemmMapBytes);
  std::vector<uint8_t> bytes(
      static_cast<size_t>(codegen::tensor_core_gemm_maps_bytes(spec, sm_count)), 0);
  const std::array<codegen::TensorCoreGemmMap, 2> maps =
      codegen::tensor_core_gemm_maps(spec, sm_count);
  // Any aligned address encodes: every block replaces it before its first load.
  void* const placeholder = reinterpret_cast<void*>(uintptr_t{1} << 20);
  const CUtensorMapDataType type = spec.dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  for (size_t i = 0; i < maps.size(); ++i) {
    const codegen::TensorCoreGemmMap& m = maps[i];
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(m.k), static_cast<cuuint64_t>(m.rows)};
    const cuuint64_t row_bytes[1] = {static_cast<cuuint64_t>(m.k) * 2};
    const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(m.box_rows)};
    const cuuint32_t element_strides[2] = {1, 1};
    alignas(64) CUtensorMap map;
    check_cu(cuda_driver().cuTensorMapEncodeTiled(
                 &map, type, 2, placeholder, dims, row_bytes, box, element_strides,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
             std::string("cuTensorMapEncodeTiled (") + (i == 0 ? "A" : "W") + " [" +
                 std::to_string(m.rows) + ", " + std::to_string(m.k) +
                 "] of the tensor-core GEMM " + spec.to_string() + ")");
    std::memcpy(bytes.data() + i * sizeof(CUtensorMap), &map, sizeof(CUtensorMap));
  }
  return bytes;
}

}  // namespace gf::cuda
