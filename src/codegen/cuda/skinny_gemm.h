// Skinny GEMMs: C[m, n] = epilogue(A[m, k] * W) for few rows (m = 1..16), the products of a
// decode step. They are bound by reading W once, so the kernel streams W with 16-byte loads
// spread over every SM (splitting k across blocks when n alone gives too few), keeps the m rows'
// sums in registers (multiplying on tensor cores from two rows on, where it can: SkinnyMath),
// and fuses the epilogue. cuBLASLt stays for every other shape.
//
// ABI as every CUDA kernel here (cuda_emitter.h): kernel(void* const* buffers), buffers in
// skinny_gemm_buffers() order. When the kernel splits k, it needs a workspace buffer of
// workspace_bytes(), zeroed once when allocated: the last block of each column tile sums the
// partials in a fixed order (results are bitwise repeatable) and sets its counter back to zero,
// so the workspace is ready for the next launch (and for CUDA graph replays).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/dtype.h"

namespace gf::codegen {

inline constexpr int64_t kSkinnyGemmMaxRows = 16;
// SkinnyMath::kAuto runs products of at least this many rows on tensor cores where they can.
inline constexpr int64_t kSkinnyTensorCoreMinRows = 2;

enum class SkinnyActivation { kNone, kRelu, kGeluErf, kGeluTanh, kSilu };

// Weights moved towards L2 ahead of their reads (a kernel's own, SkinnyGemmSpec::prefetch_weights,
// or the next kernel's, next_w_bytes) are at most this large. Larger ones gain nothing from it:
// a kernel streams them at full bandwidth anyway, and a matrix near L2's size (50 MB on an H200)
// is evicted before it is read (bench_skinny_gemm: a Llama-size layer slowed from 431 to 536 us
// with every weight prefetched).
inline constexpr uint64_t kSkinnyMaxPrefetchBytes = uint64_t{8} << 20;

// Whether a kernel whose own weights take `own_bytes` moves the next kernel's `next_bytes`
// towards L2 (SkinnyGemmSpec::next_w_bytes): both within kSkinnyMaxPrefetchBytes, since a kernel
// streaming more would evict them before they are read. On an H100 with the next weight alone
// bounded, four Llama-style layers took 568 against 558 us, their 32 MB query projections
// moving the 8 MB key projections' weights; GPT-2 small's products are all within it.
inline bool skinny_gemm_prefetches_next(uint64_t own_bytes, uint64_t next_bytes) {
  return next_bytes > 0 && own_bytes <= kSkinnyMaxPrefetchBytes &&
         next_bytes <= kSkinnyMaxPrefetchBytes;
}

// A normalization of A's rows the kernel applies as it reads them (W [n, k] only), so that the
// LayerNormalization or RMSNormalization before a product needs no kernel of its own: the A
// buffer then holds the norm's input X [m, k], and the kernel multiplies
// round(norm(X) * scale (+ bias)) by W, rounding to the dtype as the norm's stored output would.
enum class SkinnyRowNorm { kNone, kLayerNorm, kRmsNorm };

// Which units multiply. Tensor cores (mma.sync, sm_80+, f32 accumulation) take W [n, k] in
// f16/bf16 with k a multiple of 8; kAuto picks them there from kSkinnyTensorCoreMinRows rows on,
// and CUDA cores otherwise. Forcing tensor cores on a spec they cannot take is kUnsupported. On
// an H200, GPT-2 small's 48 products took 118 us at 8 rows on tensor cores against 223 on CUDA
// cores, but 106 against 89 at one row (bench_skinny_gemm --math).
enum class SkinnyMath { kAuto, kCudaCores, kTensorCores };

struct SkinnyGemmSpec {
  DType dtype = DType::kF16;  // of A, W, bias, residual and C: f32, f16 or bf16
  int64_t m = 1, n = 0, k = 0;
  bool w_transposed = false;  // W stored [n, k] (a Linear layer's weight) instead of [k, n]
  bool gated = false;         // C = silu(A*W) * (A*W_up): a SwiGLU MLP's gate and up products
  bool has_bias = false;      // bias[n], added before the activation (to the gate when gated)
  SkinnyActivation activation = SkinnyActivation::kNone;  // ignored when gated
  bool has_residual = false;  // R[m, n] added after the activation
  SkinnyRowNorm row_norm = SkinnyRowNorm::kNone;
  bool row_norm_bias = false;  // the LayerNormalization's bias [k] (its scale [k] always)
  float row_norm_epsilon = 1e-5f;
  // W (and W_up) are constants, never written by a kernel: the kernel starts reading its part of
  // W before it waits for the kernels before it (gf_grid_dependency_sync): into registers when a
  // lane's share fits (W [n, k]; the kernel then also lets the kernels after it start at once),
  // else towards L2 for weights well inside it (see skinny_gemm.cpp). So in a CUDA graph with
  // programmatic edges the weight streams of consecutive products overlap.
  bool prefetch_weights = false;
  // The bias and the row norm's scale and bias (those the spec has) are constants too: with W
  // [n, k] the kernel reads them before the wait as well (the bias into the lane that stores,
  // the norm's pieces beside W's when they fit), so a dependent miss on them no longer ends
  // each product after its sums are done.
  bool constant_epilogue = false;
  // No binding can repoint A's or the residual's pointer-table entries during a run (neither
  // shares storage with a graph input or output, which gf_bind_in may point at the caller's
  // buffers after its own trigger): the kernel reads those addresses before its wait too, which
  // takes one L2 round trip off the path from the wait to A's loads. The caller vouches for it.
  bool stable_input_addresses = false;
  // Bytes of the next kernel's constant weights (its W, and its W_up when gated) that this
  // kernel moves towards L2 as it starts, spread over its blocks (table entries kNextW and
  // kNextWUp point at them). In a chain of dependent products the next kernel's blocks cannot
  // start before this kernel's leave their SMs, so its own early loads come too late to hide
  // the memory's latency; this kernel, already running, can start them. 0: none. Callers
  // decide with skinny_gemm_prefetches_next.
  uint64_t next_w_bytes = 0, next_w_up_bytes = 0;
  SkinnyMath math = SkinnyMath::kAuto;
  // Tensor cores: output columns per block (8, 16 or 32); 0 lets the layout choose (8). Wider
  // blocks read A from L2 fewer times over, narrower ones spread W over more SMs: GPT-2 small's
  // 48 products at m = 2 / 8 / 16 took 108 / 119 / 141 us in 8 columns, 120 / 128 / 148 in 16
  // and 132 / 147 / 167 in 32 (bench_skinny_gemm --tile-cols, H200).
  int tensor_core_tile_cols = 0;
  std::string to_string() const;
};

// Bytes of the spec's weights: W, and W_up when gated.
inline uint64_t skinny_gemm_weight_bytes(const SkinnyGemmSpec& s) {
  return static_cast<uint64_t>(s.n * s.k) * dtype_size(s.dtype) * (s.gated ? 2 : 1);
}

// The buffer roles in ABI order.
enum class SkinnyBuffer {
  kA,
  kNormScale,
  kNormBias,
  kW,
  kWUp,
  kBias,
  kResidual,
  kC,
  kWorkspace,
  kNextW,
  kNextWUp
};
std::vector<SkinnyBuffer> skinny_gemm_buffers(const SkinnyGemmSpec& spec, int sm_count);

// Bytes of workspace the kernel needs (0 when it does not split k).
uint64_t skinny_gemm_workspace_bytes(const SkinnyGemmSpec& spec, int sm_count);

// Whether the kernel for `spec` multiplies on tensor cores (SkinnyMath).
bool skinny_gemm_uses_tensor_cores(const SkinnyGemmSpec& spec);

// Throws kUnsupported (naming the spec) for m outside 1..16, an empty product, a dtype other
// than f32/f16/bf16, a row norm with W [k, n], or tensor cores forced where they cannot run;
// kInvalidArgument for sm_count < 1 or tensor_core_tile_cols other than 0, 8, 16 or 32. Vector
// loads are used when rows of W are 16-byte aligned (the executor's buffers start 256-byte
// aligned); other sizes get scalar loads, still coalesced. A tensor-core kernel may run as clusters
// of blocks (launch.cluster_blocks; the entry carries __cluster_dims__).
CudaKernelSource emit_skinny_gemm_kernel(const SkinnyGemmSpec& spec, const std::string& name,
                                         int sm_count = kH200SmCount);

}  // namespace gf::codegen
