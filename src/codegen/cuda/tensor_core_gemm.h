// GEMMs of many rows on sm_90 tensor cores: C[m, n] = act(A[m, k] W[n, k]^T + bias[n]) with the
// bias and activation applied in registers before C is written, so a product with an exact
// (erf) GELU costs one kernel. f16/bf16 operands, f32 accumulation. The kernel
// (kernels/tensor_core_gemm.cuh) is persistent and warp-specialized: one warpgroup copies
// 64-element slices of A and W into a ring of shared-memory stages, the others multiply them
// with wgmma (splitting each tile, or taking whole tiles in turn: ping-pong) and write C through
// shared memory. The loads are TMA copies through tensor maps kept in the kernel's private
// buffer (kMaps): see tensor_core_gemm_maps.
//
// ABI as every CUDA kernel here (cuda_emitter.h): kernel(void* const* buffers), buffers in
// tensor_core_gemm_buffers() order, each 16-byte aligned. The source uses sm_90a-only
// instructions (wgmma, setmaxnreg): compile it with ArchTarget::kSpecific for compute
// capability 90 (nvrtc_compiler.h); no other GPU runs it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/dtype.h"

namespace gf::codegen {

enum class TensorCoreGemmActivation { kNone, kRelu, kGeluErf, kGeluTanh };

// Output tile: 64 x `consumers` rows, `cols` columns (64, 128, 192 or 256), `stages`
// shared-memory stages of 64 k-elements. The consumer warpgroups split each tile by rows, or,
// `ping_pong` (2 consumers, at most 128 columns), each takes whole tiles in turn so that one's
// epilogue overlaps the other's products. Zeros: chosen by shape.
struct TensorCoreGemmTile {
  int consumers = 0;
  int cols = 0;
  int stages = 0;
  bool ping_pong = false;
  bool operator==(const TensorCoreGemmTile&) const = default;
};

struct TensorCoreGemmSpec {
  DType dtype = DType::kF16;  // of A, W, bias and C: f16 or bf16
  int64_t m = 0, n = 0, k = 0;
  bool has_bias = false;
  TensorCoreGemmActivation activation = TensorCoreGemmActivation::kNone;
  TensorCoreGemmTile tile;  // zeros: choose_tensor_core_gemm_tile
  std::string to_string() const;
};

// kMaps: the kernel's private buffer (tensor_core_gemm_maps_bytes), that only it uses and that
// must outlive every launch; its first 256 bytes are the map templates, the rest zeros at first.
enum class TensorCoreGemmBuffer { kA, kW, kBias, kC, kMaps };
std::vector<TensorCoreGemmBuffer> tensor_core_gemm_buffers(const TensorCoreGemmSpec& spec);

// The two tensor maps the kernel loads through, A [m, k] then W [n, k] (row-major, 128-byte
// swizzle, zeros outside): each read in boxes of 64 k-elements by `box_rows` rows. The host
// encodes them (cuTensorMapEncodeTiled, any 16-byte aligned address: the kernel puts in the
// real one) into the first 2 x kTensorCoreGemmMapBytes of the kMaps buffer.
struct TensorCoreGemmMap {
  int64_t rows = 0, k = 0;
  int box_rows = 0;
};
inline constexpr int64_t kTensorCoreGemmMapBytes = 128;
std::array<TensorCoreGemmMap, 2> tensor_core_gemm_maps(const TensorCoreGemmSpec& spec,
                                                       int sm_count);
// The bytes of the kMaps buffer: the templates, then per block two maps and their addresses.
int64_t tensor_core_gemm_maps_bytes(const TensorCoreGemmSpec& spec, int sm_count);

// Why the kernel cannot take `spec` on a GPU of `compute_capability` ("" when it can): only sm_90
// runs it (wgmma), with f16/bf16, k a multiple of 8 and every size below 2^31.
std::string tensor_core_gemm_refusal(const TensorCoreGemmSpec& spec, int compute_capability);

// The tile with the fewest estimated tile-rounds of work over `sm_count` SMs: each candidate's
// tiles spread over the SMs, times one tile's products weighted by the candidate's measured
// efficiency (narrow tiles read more bytes per product), measured apart with a GELU epilogue,
// whose cost differs between tiles. Candidates and weights in tensor_core_gemm.cpp.
TensorCoreGemmTile choose_tensor_core_gemm_tile(const TensorCoreGemmSpec& spec, int sm_count);
// The candidates choose_tensor_core_gemm_tile weighs, every form the kernel is measured in.
std::vector<TensorCoreGemmTile> tensor_core_gemm_tiles();

// The kernel for `spec` (its tile chosen where spec.tile is zeros): grid of min(tiles,
// sm_count) blocks, (consumers + 1) x 128 threads, dynamic shared memory for the stages and the
// epilogue. Throws kUnsupported with the refusal naming the spec, kInvalidArgument for a tile
// outside the candidates' forms or too large for shared memory, or sm_count < 1.
CudaKernelSource emit_tensor_core_gemm_kernel(const TensorCoreGemmSpec& spec,
                                              const std::string& name, int sm_count,
                                              int compute_capability);

}  // namespace gf::codegen
