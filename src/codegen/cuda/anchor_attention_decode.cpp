// The split-KV decode Attention kernels: the node's constants ahead of
// kernels/attention_decode_common.cuh and either kernels/attention_decode_mma.cuh (tensor cores,
// f16/bf16) or kernels/attention_decode.cuh (CUDA cores); clusters of blocks over slices of
// the keys, see there.
#include <algorithm>

#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
#include "codegen/cuda/kernels/attention_decode_common_cuh.h"
#include "codegen/cuda/kernels/attention_decode_cuh.h"
#include "codegen/cuda/kernels/attention_decode_mma_cuh.h"
#include "codegen/cuda/kernels/cluster_cuh.h"
#include "codegen/cuda/kernels/mma_fragments_cuh.h"

namespace gf::codegen {

namespace {

// Up to 8 blocks (the portable cluster size) per (batch, key/value head). The CUDA-core kernel
// always takes 8. The tensor-core kernel takes the largest power of two whose grid still leaves
// each block an SM pair's worth of room (2 x cluster x pairs <= SMs), else 1: on an H200 (132
// SMs, 8 key/value heads, 4k / 32k keys, % of copy) batch 1 is best at 8 (35 / 83), batch 4 at 2
// (70 / 102, against 49 / 90 at 8), batch 16 at 1 (98 / 110, against 77 / 106 at 8). Plain
// blocks merging through a workspace, which could take more than a cluster, did no better at
// any of these (bench/README.md).
constexpr int64_t kDecodeClusterBlocks = 8;
// Tensor cores: 4 warps with rings of about 24 KiB of 16-key stages each (3 stages at head size
// 128), so a block keeps 96 KiB of K and V in flight and two blocks fit an SM; where the grid
// has no more blocks than SMs, 8 warps with rings of 16 KiB (128 KiB per block, one per SM, so
// a larger grid would take two waves). On an H200 at batch 1 x 8 key/value heads x 32k keys: 77% of
// the copy bandwidth with 8 warps, 62% with 4; at batch 16 (1024 blocks) 4 warps are faster: 102%
// against 100%.
constexpr int64_t kDecodeMmaWarps = 4;
constexpr int64_t kDecodeMmaRingBytes = 24 * 1024;
constexpr int64_t kDecodeMmaWideWarps = 8;
constexpr int64_t kDecodeMmaWideRingBytes = 16 * 1024;
constexpr int64_t kDecodeMmaMaxRows = 16;
// CUDA cores: 8 warps, stages of 2 x 1024 elements (4 KiB for 16-bit K/V, 8 KiB for f32), 4 or 2
// deep: 128 KiB per block (kernels/attention_decode.cuh).
constexpr int64_t kDecodeWarps = 8;
constexpr int64_t kDecodeStageElements = 2 * 1024;
constexpr int64_t kDecodeStages16 = 4;
constexpr int64_t kDecodeStages32 = 2;
// The largest rows x head size whose per-warp partial sums fit the CUDA-core kernel's registers.
constexpr int64_t kDecodeMaxRowElements = 1024;
constexpr int64_t kDecodeMaxRows = 8;

bool decode_head_size(int64_t d) {
  return d >= 8 && d <= 256 && d % 8 == 0 && ((d / 8) & (d / 8 - 1)) == 0;
}

int64_t decode_rows(const AttentionNode& a) {
  return (a.kv_heads > 0 ? a.q_heads / a.kv_heads : 0) * a.q_len;
}

bool decode_on_tensor_cores(const AttentionNode& a) {
  const int64_t d = a.head_dim;
  return (a.dtype == DType::kF16 || a.dtype == DType::kBF16) &&
         (d == 16 || d == 32 || d == 64 || d == 128) && decode_rows(a) <= kDecodeMmaMaxRows;
}

// Thread-block clusters need sm_90; the rings' up to 128 KiB of shared memory per block fit the
// data-center parts (sm_90, sm_100: 227 KiB), not those from sm_110 on (sm_120: 99 KiB).
bool decode_device(const CudaEmitOptions& options) {
  return options.compute_capability >= 90 && options.compute_capability < 110;
}

int64_t decode_cluster_blocks(const AttentionNode& a, const CudaEmitOptions& options) {
  if (options.decode_cluster_blocks > 0) return options.decode_cluster_blocks;
  if (!decode_on_tensor_cores(a)) return kDecodeClusterBlocks;
  const int64_t pairs = a.batch * a.kv_heads;
  int64_t cluster = kDecodeClusterBlocks;
  while (cluster > 1 && 2 * cluster * pairs > options.sm_count) cluster /= 2;
  return cluster;
}

}  // namespace

bool decode_attention_fits(const AttentionNode& a, const CudaEmitOptions& options) {
  const int64_t rows = decode_rows(a);
  return options.split_kv_attention && decode_device(options) && !a.causal && a.q_len >= 1 &&
         a.q_len <= kDecodeAttentionMaxQueries && a.kv_len >= kDecodeAttentionMinKeys &&
         a.head_dim == a.v_dim && decode_head_size(a.head_dim) && rows >= 1 &&
         (decode_on_tensor_cores(a) ||
          (rows <= kDecodeMaxRows && rows * a.head_dim <= kDecodeMaxRowElements));
}

CudaKernelSource emit_decode_attention_kernel(const Node& node, const Graph& g,
                                              const AttentionNode& a, const std::string& name,
                                              const CudaEmitOptions& options) {
  const int64_t cluster = decode_cluster_blocks(a, options);
  const int64_t blocks = a.batch * a.kv_heads * cluster;
  if (blocks > int64_t{0x7fffffff}) {
    anchor::unsupported(node, g, "too many key/value heads (" + a.shapes + ")");
  }
  const bool mma = decode_on_tensor_cores(a);
  anchor::AnchorWriter w(node, g, name,
                         mma ? "attention (decode, split across the keys in clusters, tensor cores)"
                             : "attention (decode, split across the keys in clusters)");
  write_attention_constants(w, a);
  const int64_t element_bytes = a.dtype == DType::kF32 ? 4 : 2;
  // Wide blocks take an SM each; a cluster above the portable 8 of them rarely finds that many
  // free SMs in one GPC (an H100 at batch 1 over 4k keys: 42% of the read-only floor in
  // clusters of 16 wide blocks, 65% in 8), so such clusters take the narrow blocks, two per SM
  // (57% there: better, though never chosen over 8).
  const bool wide = blocks <= std::max(options.sm_count, 1) && cluster <= kDecodeClusterBlocks;
  const int64_t warps = !mma ? kDecodeWarps : wide ? kDecodeMmaWideWarps : kDecodeMmaWarps;
  // Bytes of one stage of K and V per warp (kernels: kStageElems).
  const int64_t stage_bytes =
      mma ? 2 * 16 * a.head_dim * element_bytes : kDecodeStageElements * element_bytes;
  const int64_t ring_bytes = wide ? kDecodeMmaWideRingBytes : kDecodeMmaRingBytes;
  const int64_t stages = mma                  ? std::clamp<int64_t>(ring_bytes / stage_bytes, 2, 8)
                         : element_bytes == 4 ? kDecodeStages32
                                              : kDecodeStages16;
  w.constant("kWarps", warps);
  w.constant("kClusterBlocks", cluster);
  w.constant("kStages", stages);
  w.constant("kRows", decode_rows(a));
  w.constant_f32("kScale", static_cast<float>(a.scale));
  if (mma) w.flag("kBf16", a.dtype == DType::kBF16);
  w.cluster_blocks(static_cast<int>(cluster));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * warps);
  launch.dynamic_shared_bytes = static_cast<uint32_t>(warps * stages * stage_bytes);
  launch.grid = a.batch * a.q_heads * a.q_len == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body =
      std::string(embedded::attention_common_cuh) + "\n" +
      (mma ? embedded::mma_fragments_cuh : "") + "\n" + embedded::cluster_cuh + "\n" +
      embedded::attention_decode_common_cuh + "\n" +
      (mma ? embedded::attention_decode_mma_cuh : embedded::attention_decode_cuh);
  return w.finish(body, mma ? "gf_attention_decode_mma" : "gf_attention_decode", launch);
}

}  // namespace gf::codegen
