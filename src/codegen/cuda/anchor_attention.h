// The Attention node as the CUDA attention kernels read it (anchor_attention.cpp: one warp per
// query row, any head size and dtype; anchor_attention_mma.cpp: tensor cores, f16/bf16 with
// head sizes 16-128; anchor_attention_wgmma.cpp: the same on sm_90's warpgroup MMAs, head sizes
// 64 and 128; anchor_attention_decode.cpp: a few query rows against many keys, split
// across the keys): its dims, layout and attributes, and the constants they share.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "codegen/cuda/anchor_writer.h"
#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

// Element strides (batch, head, position) of a [B, H, S, D]-indexed view of a 4-D tensor or of a
// packed 3-D [B, S, H*D] one; the head_dim stride is 1. `offset`: where element [0, 0, 0, 0]
// is, in elements from the buffer's start (a view into a larger buffer: attention_views.h).
struct HeadStrides {
  int64_t batch = 0, head = 0, pos = 0;
  int64_t offset = 0;
};

struct AttentionNode {
  DType dtype = DType::kF32;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  HeadStrides q, k, v, y;
  double scale = 1.0;  // the attribute, or 1 / sqrt(head_dim)
  float softcap = 0.0f;
  bool causal = false;
  bool has_mask = false;
  DType mask_dtype = DType::kF32;
  int64_t mask_columns = 0;
  std::array<int64_t, 4> mask_strides{};  // [B, Hq, Sq, columns], 0 where broadcast
  std::string shapes;                     // "Q [..], K [..], V [..]" for messages
};

// Reads and checks the node; kUnsupported (naming node, op and shapes) for what neither kernel
// handles.
AttentionNode read_attention_node(const Node& node, const Graph& g);

// The element type and the constants both kernels read: dims, strides, scale, softcap, causal and
// the mask's (see kernels/attention_common.cuh).
void write_attention_constants(anchor::AnchorWriter& w, const AttentionNode& a);

// kInvalidArgument, naming the node, for attention options outside their ranges
// (decode_cluster_blocks, attention_key_tile, attention_row_groups); emit_anchor_kernel and
// emit_attention_kernel_for check them.
void check_attention_options(const Node& node, const CudaEmitOptions& options);

// The kernel for the node as `a` describes it (read_attention_node's result, its strides and
// offsets possibly replaced to read and write views of other buffers): the wgmma, tensor-core,
// decode or row kernel, whichever fits first.
CudaKernelSource emit_attention_kernel_for(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name, const CudaEmitOptions& options);

// Whether the tensor-core kernel takes the node: f16/bf16, one head size of 16, 32, 64 or 128,
// at least kMmaAttentionMinQueries query rows, sm_80 or later, and options.tensor_core_attention.
constexpr int64_t kMmaAttentionMinQueries = 8;
bool mma_attention_fits(const AttentionNode& a, const CudaEmitOptions& options);

// Sizes its blocks by options.sm_count; needs launch.dynamic_shared_bytes of shared memory (up to
// 64 KiB: the executor opts in above 48 KiB).
CudaKernelSource emit_mma_attention_kernel(const Node& node, const Graph& g, const AttentionNode& a,
                                           const std::string& name, const CudaEmitOptions& options);

// Whether the wgmma kernel takes the node: f16/bf16, one head size of 64 or 128, at least
// kWgmmaAttentionMinQueries query rows, sm_90 exactly (its instructions are sm_90a's), and
// options.wgmma_attention. It comes before the mma.sync kernel where both fit.
constexpr int64_t kWgmmaAttentionMinQueries = 64;
bool wgmma_attention_fits(const AttentionNode& a, const CudaEmitOptions& options);

// Blocks of 128 query rows (one per SM at head size 128, two at 64); needs
// launch.dynamic_shared_bytes of shared memory (up to 161 KiB) and an sm_90a compile
// (CudaKernelSource::arch_specific).
CudaKernelSource emit_wgmma_attention_kernel(const Node& node, const Graph& g,
                                             const AttentionNode& a, const std::string& name,
                                             const CudaEmitOptions& options);

// Whether a split-KV decode kernel takes the node: at most kDecodeAttentionMaxQueries query
// rows, at least kDecodeAttentionMinKeys keys, not is_causal, one head size of 8 times a power
// of two up to 256, sm_90 or sm_100 (thread-block clusters, and 128 KiB of shared memory per
// block), options.split_kv_attention, and
// either f16/bf16 with head size 16, 32, 64 or 128 and at most 16 query rows per key/value head
// (query heads per key/value head x query rows: the tensor-core kernel) or at most 8 such rows
// and 1024 rows x head size (the CUDA-core kernel).
constexpr int64_t kDecodeAttentionMaxQueries = 4;
constexpr int64_t kDecodeAttentionMinKeys = 256;
bool decode_attention_fits(const AttentionNode& a, const CudaEmitOptions& options);

CudaKernelSource emit_decode_attention_kernel(const Node& node, const Graph& g,
                                              const AttentionNode& a, const std::string& name,
                                              const CudaEmitOptions& options);

}  // namespace gf::codegen
