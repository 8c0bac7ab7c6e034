// The CUDA code generator: one fused kernel as one self-contained CUDA C++ source for NVRTC
// (nvrtc_compiler.h), plus the launch configuration it was written for.
//
// Parameter ABI (fixed for every generated kernel):
//   extern "C" __global__ void <kernel.name>(void* const* buffers);
// `buffers` points to a DEVICE array of device pointers, one per kernel.buffers entry, in that
// order. The runtime re-binds a kernel (or a whole CUDA graph of them) to new buffers by
// rewriting that small table; the launch parameters themselves never change. Launch with
// gridDim = (launch.grid, 1, 1), blockDim = (launch.block, 1, 1) and
// launch.dynamic_shared_bytes of dynamic shared memory; a grid of 0 means there is nothing to
// compute (an empty outer space): do not launch.
//
// Schedules:
//   kPointwise   no inner space: a grid-stride loop over the flat outer index. Where every store
//                (and, ideally, load) is contiguous in that index, each thread takes runs of
//                `vector_width` points: contiguous loads and stores become 128-bit accesses,
//                loads constant along the run (broadcasts) one scalar load, the rest one load
//                per point; points after the last whole run go through a scalar tail loop.
//   kWarpPerRow  one warp per outer point (inner size <= kWarpPerRowMaxInner).
//   kBlockPerRow one block per outer point.
// In the row schedules each thread accumulates its part of the inner space for each reduction
// in order; a butterfly of warp shuffles (plus shared memory across a block's warps) gives
// every thread the row value; per-inner stores are then spread over the row's threads and the
// others are done by its first thread. Rows that fit in registers are persistent
// (`persistent_rows`): each thread loads its chunks of `vector_width` consecutive inner points
// once (128-bit loads where contiguous) and keeps the loads the reductions read in registers
// through every reduction and the per-inner stores (one read of the row from memory, as in a
// hand-written LayerNorm). Longer rows loop over the row once per reduction and once for the
// stores. Accumulation is in the reduction's accumulator type (f32, f64 for f64, i64 for
// integers), so sums differ from the CPU's sequential order by rounding only.
//
// Index arithmetic is 32-bit (`index32`) when every buffer and loop space of the kernel has at
// most INT32_MAX elements and range analysis proves each intermediate fits; 64-bit otherwise.
//
// Alignment: a vectorised kernel requires every buffer pointer bound to it to be a multiple of
// `alignment` bytes (at most 16). Arena offsets (256-byte aligned) always are; a pointer a user
// passes in must be checked by the executor, which emits the kernel again with
// CudaEmitOptions::vectorize = false (alignment = the element size) when it is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fusion/kernel_ir.h"
#include "graphfuse/graph.h"

namespace gf::codegen {

// Threads per block, every schedule: 8 warps.
inline constexpr int kCudaBlockThreads = 256;
// Rows up to this many inner elements get one warp (at most 32 per lane); longer rows a block,
// whose extra warps then have enough work to pay for the shared-memory step.
inline constexpr int64_t kWarpPerRowMaxInner = 1024;
// Grids hold at most this many blocks per SM: two full waves of 256-thread blocks (an SM holds
// 2048 threads), so grid-stride loops keep every SM busy and the tail stays short.
inline constexpr int64_t kCudaBlocksPerSm = 16;
// A persistent row keeps at most this many values per thread in registers (of 255), so
// occupancy stays high enough to keep a row's loads in flight.
inline constexpr int kMaxRowValuesPerThread = 64;
// An H200 (SXM) has 132 SMs.
inline constexpr int kH200SmCount = 132;

enum class CudaSchedule { kPointwise, kWarpPerRow, kBlockPerRow };
std::string_view cuda_schedule_name(CudaSchedule s);

struct CudaEmitOptions {
  // Round each f16/bf16 op result to its 16-bit format, as the unfused reference kernels do when
  // they store it; off, intermediates stay in float (faster, not bit-exact).
  bool round_16bit_intermediates = true;
  // Sizes the grid only; the source does not depend on it.
  int sm_count = kH200SmCount;
  // Vector accesses and register-resident rows where the kernel allows them; off, one scalar
  // access per point (for buffers that are not aligned to the vector width).
  bool vectorize = true;
  // 32-bit index arithmetic where every buffer fits (see above); off, always 64-bit.
  bool index32 = true;
  // The device's compute capability (major * 10 + minor): instructions newer than it are not
  // emitted (tensor-core attention needs 80).
  int compute_capability = 90;
  // Attention on tensor cores where the node fits (anchor_attention.h); off, the one-warp-per-row
  // kernel everywhere.
  bool tensor_core_attention = true;
  // 16-row groups per warp of that kernel (1 or 2; others are kInvalidArgument); 0: chosen from
  // the shapes and sm_count.
  int attention_row_groups = 0;
  // On sm_90, attention on warpgroup MMAs where the node fits (anchor_attention.h); off, such
  // nodes take the tensor-core kernel above.
  bool wgmma_attention = true;
  // Keys per K/V tile of the wgmma kernel: 64 or 128 (others are kInvalidArgument); 0: 128
  // for head size 64, 64 for 128.
  int attention_key_tile = 0;
  // Decode-shaped attention (few queries, many keys) split across the keys in thread-block
  // clusters where the node fits (anchor_attention.h); off, such nodes take the one-warp-per-row
  // kernel (two orders of magnitude slower on a long cache).
  bool split_kv_attention = true;
  // Blocks per cluster of that kernel (1..kMaxClusterBlocks; above 8 the loader allows the
  // non-portable size); 0: chosen from the shapes.
  int decode_cluster_blocks = 0;
};

// The largest thread-block cluster sm_90 launches (with the non-portable size allowed).
inline constexpr int kMaxClusterBlocks = 16;

struct LaunchConfig {
  uint32_t grid = 0;  // blocks in x; 0: nothing to do, do not launch
  uint32_t block = 0;  // threads per block in x
  uint32_t dynamic_shared_bytes = 0;
  // Blocks per thread-block cluster, compiled into the kernel (__cluster_dims__); above 8 (the
  // portable size) the loader must allow it: allow_cluster_blocks in cuda_module.h.
  uint32_t cluster_blocks = 1;
};

struct CudaKernelSource {
  std::string name;    // the entry point, kernel.name
  std::string source;  // CUDA C++, no includes
  CudaSchedule schedule = CudaSchedule::kPointwise;
  LaunchConfig launch;
  int vector_width = 1;          // points per vector access (1: scalar)
  bool index32 = false;          // 32-bit index arithmetic
  bool persistent_rows = false;  // row values kept in registers between passes
  uint32_t alignment = 1;        // bytes every buffer pointer must be a multiple of
  // The kernel calls gf_grid_dependency_sync() (the prelude) before it touches non-constant
  // memory, so a CUDA graph may start it early behind a programmatic edge.
  bool waits_for_prior_grids = false;
  // The source uses instructions of one exact architecture (wgmma on sm_90a): compile it with
  // ArchTarget::kSpecific (nvrtc_compiler.h).
  bool arch_specific = false;
};

// `graph` supplies the attributes and names of the nodes that the kernel's kOp exprs came from.
// Throws kUnsupported naming the node and op when an op or dtype has no CUDA form, kInvalidGraph
// for a malformed kernel, kInvalidArgument for sm_count < 1.
CudaKernelSource emit_cuda_kernel(const fusion::FusedKernel& kernel, const Graph& graph,
                                  const CudaEmitOptions& options = {});

}  // namespace gf::codegen
