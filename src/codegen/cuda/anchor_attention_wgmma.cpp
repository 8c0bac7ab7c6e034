// The wgmma Attention kernel: the node's constants and the two wgmma calls ahead of
// kernels/attention_wgmma.cuh (flash attention on sm_90a warpgroup MMAs; see there).
#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/kernels/attention_common_cuh.h"
#include "codegen/cuda/kernels/attention_flash_common_cuh.h"
#include "codegen/cuda/kernels/attention_wgmma_cuh.h"
#include "codegen/cuda/kernels/mma_fragments_cuh.h"
#include "codegen/cuda/kernels/wgmma_common_cuh.h"
#include "codegen/cuda/wgmma_call.h"

namespace gf::codegen {

namespace {

constexpr int64_t kWgmmaBlockRows = 128;  // two warpgroups of 64 query rows
constexpr int64_t kWgmmaThreads = 256;
// Shared memory an sm_90 SM gives its blocks (228 KiB, less 1 KiB per block for the system).
constexpr int64_t kWgmmaSharedPerSm = 233472 - 2 * 1024;

// Keys per K/V tile: the options' 64 or 128 (check_attention_options rejects other
// nonzero values), else 128 for head size 64 and 64 for 128. Head
// size 128 with 128-key tiles holds one block per SM (160 KiB of tiles) and runs 20-25% slower on
// an H100 than two blocks of 64-key tiles; head size 64 runs ~10% faster on 128-key tiles, two
// blocks per SM either way (bench_attention --key-tiles 64,128).
int64_t key_tile(const CudaEmitOptions& options, int64_t head_dim) {
  if (options.attention_key_tile != 0) return options.attention_key_tile;
  return head_dim == 64 ? 128 : 64;
}

}  // namespace

bool wgmma_attention_fits(const AttentionNode& a, const CudaEmitOptions& options) {
  return options.tensor_core_attention && options.wgmma_attention &&
         options.compute_capability == 90 && (a.dtype == DType::kF16 || a.dtype == DType::kBF16) &&
         a.head_dim == a.v_dim && (a.head_dim == 64 || a.head_dim == 128) &&
         a.q_len >= kWgmmaAttentionMinQueries;
}

CudaKernelSource emit_wgmma_attention_kernel(const Node& node, const Graph& g,
                                             const AttentionNode& a, const std::string& name,
                                             const CudaEmitOptions& options) {
  const int64_t blocks = a.batch * a.q_heads * ((a.q_len + kWgmmaBlockRows - 1) / kWgmmaBlockRows);
  if (blocks > int64_t{0x7fffffff}) {
    anchor::unsupported(node, g, "too many query tiles (" + a.shapes + ")");
  }
  const int64_t keys = key_tile(options, a.head_dim);
  anchor::AnchorWriter w(node, g, name,
                         "attention (flash, wgmma tensor cores, 64 query rows per warpgroup)");
  write_attention_constants(w, a);
  w.constant("kBlockKeys", keys);
  w.flag("kBf16", a.dtype == DType::kBF16);
  w.constant_f32("kScale", static_cast<float>(a.scale));

  LaunchConfig launch;
  launch.block = static_cast<uint32_t>(kWgmmaThreads);
  // The Q tile, two K and two V tiles, and 1024 bytes to align them (attention_wgmma.cuh:
  // kWgSharedBytes).
  const int64_t shared = 2 * a.head_dim * (kWgmmaBlockRows + 4 * keys) + 1024;
  launch.dynamic_shared_bytes = static_cast<uint32_t>(shared);
  // Two blocks per SM where their shared memory fits (head size 64, or 128 with 64-key tiles):
  // one's softmax then overlaps the other's products. It caps the registers at 128 a thread,
  // which these forms fit without spilling.
  if (2 * shared <= kWgmmaSharedPerSm) w.min_blocks_per_sm(2);
  launch.grid = a.batch * a.q_heads * a.q_len == 0 ? 0 : static_cast<uint32_t>(blocks);
  const std::string body =
      std::string(embedded::attention_common_cuh) + "\n" + embedded::mma_fragments_cuh + "\n" +
      embedded::attention_flash_common_cuh + "\n" + embedded::wgmma_common_cuh + "\n" +
      wgmma_shared_operands_function("gf_wgmma_scores", a.dtype, static_cast<int>(keys)) +
      wgmma_register_a_function("gf_wgmma_values", a.dtype, static_cast<int>(a.head_dim), true) +
      embedded::attention_wgmma_cuh;
  CudaKernelSource src = w.finish(body, "gf_attention_wgmma", launch);
  src.arch_specific = true;
  return src;
}

}  // namespace gf::codegen
