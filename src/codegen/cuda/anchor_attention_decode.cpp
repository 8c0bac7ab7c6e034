// The split-KV decode Attention kernel: the node's constants ahead of
// kernels/attention_decode.cuh (clusters of blocks over slices of the keys; see there).
#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
#include "codegen/cuda/kernels/attention_decode_cuh.h"

namespace gf::codegen {

namespace {

// 8 blocks (the portable cluster size) of 8 warps per (batch, key/value head): a decode step of
// one sequence with 8 key/value heads fills 64 SMs, and 16 of them more than an H200.
constexpr int64_t kDecodeClusterBlocks = 8;
constexpr int64_t kDecodeWarps = 8;
// The largest rows x head size whose per-warp partial sums fit the static shared memory.
constexpr int64_t kDecodeMaxRowElements = 1024;
constexpr int64_t kDecodeMaxRows = 8;

bool decode_head_size(int64_t d) {
  return d >= 8 && d <= 256 && d % 8 == 0 && ((d / 8) & (d / 8 - 1)) == 0;
}

}  // namespace

bool decode_attention_fits(const AttentionNode& a, const CudaEmitOptions& options) {
  const int64_t group = a.kv_heads > 0 ? a.q_heads / a.kv_heads : 0;
  const int64_t rows = group * a.q_len;
  return options.split_kv_attention && options.compute_capability >= 90 && !a.causal &&
         a.q_len >= 1 && a.q_len <= kDecodeAttentionMaxQueries &&
         a.kv_len >= kDecodeAttentionMinKeys && a.head_dim == a.v_dim && decode_head_size(a.head_dim) &&
         rows >= 1 && rows <= kDecodeMaxRows && rows * a.head_dim <= kDecodeMaxRowElements;
}

CudaKernelSource emit_decode_attention_kernel(const Node& node, const Graph& g, const AttentionNode& a,
                                              const std::string& name) {
  const int64_t blocks = a.batch * a.kv_heads * kDecodeClusterBlocks;
  if (blocks > int64_t{0x7fffffff}) {
    anchor::unsupported(node, g, "too many key/value heads (" + a.shapes + ")");
  }
  anchor::AnchorWriter w(node, g, name, "attention (decode, split across the keys in clusters)");
  write_attention_constants(w, a);
  w.constant("kWarps", kDecodeWarps);
  w.constant("kClusterBlocks", kDecodeClusterBlocks);
  w.constant("kRows", (a.q_heads / a.kv_heads) * a.q_len);
  w.constant_f32("kScale", static_cast<float>(a.scale));
  w.cluster_blocks(static_cast<int>(kDecodeClusterBlocks));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(32 * kDecodeWarps);
  launch.grid = a.batch * a.q_heads * a.q_len == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body =
      std::string(embedded::attention_common_cuh) + "\n" + embedded::attention_decode_cuh;
  return w.finish(body, "gf_attention_decode", launch);
}

}  // namespace gf::codegen
