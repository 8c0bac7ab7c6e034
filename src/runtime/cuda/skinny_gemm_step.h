// Decode-shaped GEMMs as generated skinny GEMM kernels (codegen/cuda/skinny_gemm.h) instead of
// cuBLASLt. A GEMM group's anchor qualifies when it is a MatMul, or a Gemm without transA,
// whose product (its batch dims folded into rows, as plan_gemm folds them) is one call of
// M = 1..16 rows against a W shared by every row, in f32, f16 or bf16, and the session's
// SessionOptions::skinny_gemm choice takes it (prefers_skinny_gemm). The kernel also takes
// the head of the group's epilogue that it can compute, in its order: a bias row ([N], a
// constant or a value; a Gemm's own C counts), then Relu or Gelu (erf or tanh), then a residual
// of the product's shape; each optional, reshapes of the product anywhere between. The rest of
// the epilogue stays the group's generated epilogue kernel, which reads the kernel's result.
//
// Given the graph's reader counts, the kernel also takes the LayerNormalization or
// RMSNormalization that makes A (over A's last dim, through metadata views, read by nothing
// else), with W stored [n, k]: it reads the norm's input and applies the norm as it loads A
// (codegen::SkinnyRowNorm), so the norm needs no kernel when it is alone in its group.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/skinny_gemm.h"
#include "fusion/plan.h"
#include "graphfuse/session.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

// SkinnyGemm::kAuto takes products of at most this many rows (after folding), W stored [n, k].
// bench_skinny_gemm on an H200 (f16, GPT-2 small's 48 products in one CUDA graph), the kernel's
// time over cuBLASLt's with W [n, k]: plain edges 0.64, 0.72, 0.84, 1.11, 1.76 at m = 1, 2, 4,
// 8, 16; programmatic edges (as the executor's graphs run on sm_90+) 0.50, 0.59, 0.83, 1.22,
// 1.82. With W [k, n] it lost from m = 2 on (1.03 to 3.60), hence the [n, k] upload. Since the
// early weight reads are coherent loads (which ptxas keeps above the wait), programmatic edges
// gave 0.38 at m = 1 and 0.96-0.97 at m = 8, and the whole GPT-2 step at batch 8 was still
// faster with cuBLASLt (564-573 against 654-666 us). From two rows on the kernel now multiplies
// on tensor cores (SkinnyMath): 0.44, 0.45, 0.48, 0.57 at m = 2, 4, 8, 16 (108, 111, 118, 140
// against 246 us), and the GPT-2 step at batch 8 (bench/compare_torch.py, bench_model_latency)
// went from 414 us with cuBLASLt's products to 264 with these (2026-12-01): every row count.
inline constexpr int64_t kSkinnyGemmAutoMaxRows = 16;

// Whether a product of `rows` rows (after folding) with W stored [n, k] (`w_transposed`) or
// [k, n] runs as a skinny GEMM kernel under `choice`. kAlways: any row count the kernel takes.
bool prefers_skinny_gemm(SkinnyGemm choice, int64_t rows, bool w_transposed);

struct SkinnyGemmStep {
  CudaStep step;  // a kKernel step; its k-split workspace is its private buffer
  codegen::SkinnyGemmSpec spec;
  std::vector<NodeId> nodes;  // what it computes: the anchor, then the epilogue nodes it fused
  NodeId folded_norm = kNoNode;  // the norm it applies to A, whose output it does not need
  ValueId w = kNoValue;          // its weight
  std::string fused;             // the nodes it computes, for its label and source
};

// How many times each value is read: by node inputs, plus once more when it is a graph output.
std::vector<int> value_reads(const Graph& g);

// The step for `group` (a kGemm group) as kernel `name` for `sm_count` SMs; nullopt when the
// anchor is not such a product or `choice` leaves it to cuBLASLt (the executor then calls it).
// `reads` (value_reads of g) lets the step fold the norm before A; null: it reads A as stored.
std::optional<SkinnyGemmStep> skinny_gemm_step(const Graph& g, const fusion::Group& group,
                                               const std::string& name, int sm_count,
                                               SkinnyGemm choice = SkinnyGemm::kAlways,
                                               const std::vector<int>* reads = nullptr);

// Makes `step`'s kernel move `next`'s weight towards L2 as it starts, where both weights are
// constants (SkinnyGemmSpec::next_w_bytes): in a chain of one-token products each kernel then
// starts the reads of the one after it, whose blocks cannot start before its own have left their
// SMs. Re-emits the kernel (same name) and adds the weight's table entry; nothing where
// codegen::skinny_gemm_prefetches_next says no.
// How many skinny steps later `next` is: SessionOptions::skinny_prefetch_distance
// (bench_skinny_gemm --prefetch-ahead measures the distances).
void prefetch_next_weights(SkinnyGemmStep& step, const SkinnyGemmStep& next, int sm_count);

}  // namespace gf::cuda
