// The tensor-core Attention kernel: the node's constants ahead of kernels/attention_mma.cuh
// (flash attention with mma.sync; see there).
#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
#include "codegen/cuda/kernels/attention_flash_common_cuh.h"
#include "codegen/cuda/kernels/attention_mma_cuh.h"
#include "codegen/cuda/kernels/mma_fragments_cuh.h"

namespace gf::codegen {

namespace {

// 4 warps of 2 x 16 query rows: 128 rows against 64-key tiles (each K/V fragment read from
// shared memory serves two MMAs); 1 x 16 rows where that leaves fewer blocks than SMs.
constexpr int64_t kMmaWarps = 4;
constexpr int64_t kMmaBlockKeys = 64;

bool mma_head_size(int64_t d) { return d == 16 || d == 32 || d == 64 || d == 128; }

}  // namespace

bool mma_attention_fits(const AttentionNode& a, const CudaEmitOptions& options) {
  return options.tensor_core_attention && options.compute_capability >= 80 &&
         (a.dtype == DType::kF16 || a.dtype == DType::kBF16) && a.head_dim == a.v_dim &&
         mma_head_size(a.head_dim) && a.q_len >= kMmaAttentionMinQueries;
}

CudaKernelSource emit_mma_attention_kernel(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name, const CudaEmitOptions& options) {
  const auto blocks_of = [&](int64_t m_tiles) {
    const int64_t rows = 16 * m_tiles * kMmaWarps;
    return a.batch * a.q_heads * ((a.q_len + rows - 1) / rows);
  };
  // attention_row_groups is 0, 1 or 2 here (check_attention_options).
  const int64_t m_tiles = options.attention_row_groups != 0  ? options.attention_row_groups
                          : blocks_of(2) >= options.sm_count ? 2
                                                             : 1;
  const int64_t blocks = blocks_of(m_tiles);
  if (blocks > int64_t{0x7fffffff}) {
    anchor::unsupported(node, g, "too many query tiles (" + a.shapes + ")");
  }
  anchor::AnchorWriter w(node, g, name, "attention (flash, tensor cores, 16 query rows per warp)");
  write_attention_constants(w, a);
  w.constant("kWarps", kMmaWarps);
  w.constant("kMTiles", m_tiles);
  w.flag("kBf16", a.dtype == DType::kBF16);
  w.constant_f32("kScale", static_cast<float>(a.scale));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * kMmaWarps);
  // The Q tile and one K and one V tile (kernels/attention_mma.cuh: kMmaSharedBytes).
  launch.dynamic_shared_bytes =
      static_cast<uint32_t>(2 * a.head_dim * (16 * m_tiles * kMmaWarps + 2 * kMmaBlockKeys));
  launch.grid = a.batch * a.q_heads * a.q_len == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body =
      std::string(embedded::attention_common_cuh) + "\n" + embedded::mma_fragments_cuh + "\n" +
      embedded::attention_flash_common_cuh + "\n" + embedded::attention_mma_cuh;
  return w.finish(body, "gf_attention_mma", launch);
}

}  // namespace gf::codegen
