// The tensor-core Attention kernel: the node's constants ahead of kernels/attention_mma.cuh
// (flash attention with mma.sync; see there).
#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
#include "codegen/cuda/kernels/attention_mma_cuh.h"

namespace gf::codegen {

namespace {

// 4 warps of 16 query rows: 64 rows against 64-key tiles; for head size 128 the Q, K and V tiles
// take the 48 KiB of static shared memory.
constexpr int64_t kMmaWarps = 4;
constexpr int64_t kMmaBlockRows = 16 * kMmaWarps;

bool mma_head_size(int64_t d) { return d == 16 || d == 32 || d == 64 || d == 128; }

}  // namespace

bool mma_attention_fits(const AttentionNode& a, const CudaEmitOptions& options) {
  return options.tensor_core_attention && options.compute_capability >= 80 &&
         (a.dtype == DType::kF16 || a.dtype == DType::kBF16) && a.head_dim == a.v_dim &&
         mma_head_size(a.head_dim) && a.q_len >= kMmaAttentionMinQueries;
}

CudaKernelSource emit_mma_attention_kernel(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name) {
  const int64_t q_tiles = (a.q_len + kMmaBlockRows - 1) / kMmaBlockRows;
  const int64_t blocks = a.batch * a.q_heads * q_tiles;
  if (blocks > int64_t{0x7fffffff}) {
    anchor::unsupported(node, g, "too many query tiles (" + a.shapes + ")");
  }
  anchor::AnchorWriter w(node, g, name, "attention (flash, tensor cores, 16 query rows per warp)");
  write_attention_constants(w, a);
  w.constant("kWarps", kMmaWarps);
  w.flag("kBf16", a.dtype == DType::kBF16);
  w.constant_f32("kScale", static_cast<float>(a.scale));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * kMmaWarps);
  launch.grid = a.batch * a.q_heads * a.q_len == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body =
      std::string(embedded::attention_common_cuh) + "\n" + embedded::attention_mma_cuh;
  return w.finish(body, "gf_attention_mma", launch);
}

}  // namespace gf::codegen
