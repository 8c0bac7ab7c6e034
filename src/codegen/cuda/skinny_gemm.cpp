// emit_skinny_gemm_kernel: constants for one spec ahead of a fixed kernel body.
//
// Two layouts:
//   W [k, n]: a warp's lanes own consecutive 16-byte column groups (a warp reads 512 contiguous
//     bytes of one row of W); the block's 8 warps take interleaved rows of its k range; blocks
//     are (column tile, k split) pairs. Warps are summed in shared memory, splits by the last
//     block of each column tile, both in a fixed order.
//   W [n, k]: one warp per output column, lanes along k; a butterfly of shuffles sums them.
//     Blocks shrink to 4 or 2 warps when 8 would leave SMs idle. When a lane's share of the row
//     fits in registers, the lane loads all of it before waiting for the kernels before it, so
//     behind a programmatic edge the weight stream overlaps the previous kernel entirely.
//   W [n, k] on tensor cores (kernels/skinny_gemm_mma.cuh): a block per 8 output columns, or a
//     cluster of blocks when the tiles alone would leave most SMs idle; the cluster's warps split
//     k into equal runs of 32-element chunks. Preloading as above.
#include "codegen/cuda/skinny_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "codegen/cuda/cuda_target.h"
#include "codegen/cuda/kernels/cluster_cuh.h"
#include "codegen/cuda/kernels/mma_fragments_cuh.h"
#include "codegen/cuda/kernels/skinny_gemm_common_cuh.h"
#include "codegen/cuda/kernels/skinny_gemm_cuh.h"
#include "codegen/cuda/kernels/skinny_gemm_mma_cuh.h"
#include "graphfuse/error.h"

namespace gf::codegen {

namespace {

constexpr int kWarpSize = 32;
constexpr int kWarps = kCudaBlockThreads / kWarpSize;
// Blocks per SM the k split aims for: enough loads in flight to cover memory latency.
constexpr int64_t kTargetBlocksPerSm = 2;
// Each warp reads at least this many rows of W per split: fewer make the split's bookkeeping
// (partials, the last block's sum) cost more than the rows.
constexpr int64_t kMinRowsPerWarp = 4;
// Partials written and read back by a split stay under 1/kPartialTrafficShare of W's bytes.
constexpr int64_t kPartialTrafficShare = 2;
// W [n, k]: 16-byte pieces of W (of W and W_up together when gated) a lane may hold in
// registers before the wait: up to 3072-long f16/bf16 rows, 64 registers.
constexpr int64_t kMaxPreloadPieces = 12;
// Tensor cores: output columns per block (an MMA's 8 columns), k elements per chunk (a lane
// loads 8 of them per row), and blocks per cluster at most (the portable size).
constexpr int64_t kMmaTileCols = 8;
constexpr int64_t kMmaChunk = 32;
constexpr int64_t kMaxClusterBlocks = 8;
// Tensor cores: 16-byte pieces of W a lane may hold before the wait (64 registers).
constexpr int64_t kMmaMaxPreloadPieces = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `f` exactly, as a C float literal (a hex float).
std::string float_literal(float f) {
  char text[64];
  std::snprintf(text, sizeof text, "%af", static_cast<double>(f));
  return text;
}

struct Layout {
  int vec = 1;        // elements per 16-byte load
  bool vector_loads = false;
  int warps = kWarps;  // per block
  int64_t preload_pieces = 0;  // W [n, k]: 16-byte loads of W per lane issued before the wait
  bool preload_norm = false;   // ... and as many of the row norm's scale (and bias)
  int64_t tiles = 1;  // [k, n]: column tiles of 32 column groups; [n, k]: blocks of `warps` columns
  int64_t splits = 1;
  int64_t k_per_split = 0;
  uint64_t counter_bytes = 0;  // workspace: one counter per tile, then the partials
  uint64_t workspace_bytes = 0;
  bool tensor_cores = false;    // the rest is theirs: tiles of 16 columns, each a cluster of
  int64_t cluster = 1;          // blocks whose warps take chunks_per_warp chunks of k each,
  int64_t chunks_per_warp = 0;  // the first preload_chunks of them loaded before the wait
  int64_t preload_chunks = 0;
  int64_t tile_cols = 0;  // output columns per block, 8 per MMA column group
};

bool tensor_cores_fit(const SkinnyGemmSpec& s) {
  return s.w_transposed && s.dtype != DType::kF32 && s.k % 8 == 0;
}

void check_spec(const SkinnyGemmSpec& s, int sm_count) {
  if (sm_count < 1) throw Error(ErrorCode::kInvalidArgument, "skinny GEMM: sm_count must be at least 1");
  const bool dtype_ok = s.dtype == DType::kF32 || s.dtype == DType::kF16 || s.dtype == DType::kBF16;
  if (!dtype_ok || s.m < 1 || s.m > kSkinnyGemmMaxRows || s.n < 1 || s.k < 1 ||
      s.n > INT32_MAX / 2 || s.k > INT32_MAX / 2 || s.n * s.k > (int64_t{1} << 40) ||
      (s.row_norm != SkinnyRowNorm::kNone &&
       (!s.w_transposed || !std::isfinite(s.row_norm_epsilon) || s.row_norm_epsilon < 0))) {
    throw Error(ErrorCode::kUnsupported, "skinny GEMM kernel does not take " + s.to_string() +
                                             " (f32/f16/bf16, m in 1.." +
                                             std::to_string(kSkinnyGemmMaxRows) + ")");
  }
  if (s.tensor_core_tile_cols != 0 && s.tensor_core_tile_cols != 8 &&
      s.tensor_core_tile_cols != 16 && s.tensor_core_tile_cols != 32) {
    throw Error(ErrorCode::kInvalidArgument,
                "skinny GEMM: tensor_core_tile_cols must be 0, 8, 16 or 32, not " +
                    std::to_string(s.tensor_core_tile_cols));
  }
  if (s.math == SkinnyMath::kTensorCores && !tensor_cores_fit(s)) {
    throw Error(
        ErrorCode::kUnsupported,
        "skinny GEMM on tensor cores takes W [n, k] in f16 or bf16 with k a multiple of 8, not " +
            s.to_string());
  }
}

// Tensor cores: a block per tile, or where the tiles would leave more than half the SMs idle,
// enough blocks per tile (a cluster) to give every SM one; warps enough that each block's share
// of k is in flight at once. Clusters are kept for few tiles: at one row, 12 products of 768 x
// 768 took 26.0 us in 16-column tiles of 3-block clusters (144 blocks) and 20.4 in 8-column
// tiles without (96 blocks; bench_skinny_gemm --math tensor-cores on an H200).
Layout tensor_core_layout(const SkinnyGemmSpec& s, int sm_count) {
  Layout l;
  l.tensor_cores = true;
  l.vec = 8;
  l.vector_loads = true;
  l.tile_cols = s.tensor_core_tile_cols != 0 ? s.tensor_core_tile_cols : kMmaTileCols;
  l.tiles = ceil_div(s.n, l.tile_cols);
  const int64_t chunks = ceil_div(s.k, kMmaChunk);
  if (2 * l.tiles < sm_count)
    l.cluster =
        std::clamp<int64_t>(ceil_div(sm_count, l.tiles), 1, std::min(kMaxClusterBlocks, chunks));
  l.warps = static_cast<int>(std::min<int64_t>(kWarps, ceil_div(chunks, l.cluster)));
  l.chunks_per_warp = ceil_div(chunks, l.cluster * l.warps);
  const int64_t pieces_per_chunk = (s.gated ? 2 : 1) * (l.tile_cols / 8);  // of W (and W_up)
  if (s.prefetch_weights)
    l.preload_chunks = std::min(l.chunks_per_warp, kMmaMaxPreloadPieces / pieces_per_chunk);
  l.k_per_split = s.k;
  return l;
}

Layout layout_for(const SkinnyGemmSpec& s, int sm_count) {
  if (skinny_gemm_uses_tensor_cores(s)) return tensor_core_layout(s, sm_count);
  Layout l;
  const int64_t es = static_cast<int64_t>(dtype_size(s.dtype));
  l.vec = static_cast<int>(16 / es);
  if (s.w_transposed) {
    l.vector_loads = s.k % l.vec == 0;
    while (l.warps > 2 && ceil_div(s.n, l.warps) < sm_count) l.warps /= 2;
    l.tiles = ceil_div(s.n, l.warps);
    const int64_t pieces = ceil_div(s.k, kWarpSize * l.vec);
    if (l.vector_loads && s.prefetch_weights && pieces * (s.gated ? 2 : 1) <= kMaxPreloadPieces)
      l.preload_pieces = pieces;
    const int64_t norm_arrays = s.row_norm == SkinnyRowNorm::kNone ? 0 : s.row_norm_bias ? 2 : 1;
    l.preload_norm = l.preload_pieces > 0 && norm_arrays > 0 && s.constant_epilogue &&
                     pieces * ((s.gated ? 2 : 1) + norm_arrays) <= kMaxPreloadPieces;
    l.k_per_split = s.k;
    return l;
  }
  l.vector_loads = s.n % l.vec == 0;
  const int64_t groups = ceil_div(s.n, l.vec);
  l.tiles = ceil_div(groups, kWarpSize);
  int64_t splits = ceil_div(kTargetBlocksPerSm * sm_count, l.tiles);
  splits = std::min(splits, std::max<int64_t>(1, s.k / (kWarps * kMinRowsPerWarp)));
  const int64_t traffic_cap = s.k * es / (2 * kPartialTrafficShare * 4 * s.m * (s.gated ? 2 : 1));
  splits = std::max<int64_t>(1, std::min(splits, traffic_cap));
  l.k_per_split = ceil_div(s.k, splits);
  l.splits = ceil_div(s.k, l.k_per_split);
  if (l.splits > 1) {
    l.counter_bytes = static_cast<uint64_t>(ceil_div(l.tiles * 4, 256) * 256);
    l.workspace_bytes = l.counter_bytes + static_cast<uint64_t>(l.splits * s.m * s.n * 4) * (s.gated ? 2 : 1);
  }
  return l;
}

// Weights up to kSkinnyMaxPrefetchBytes are moved towards L2 before the kernel waits for the
// one before it.
constexpr uint64_t kMaxPrefetchBytes = kSkinnyMaxPrefetchBytes;

bool prefetches_weights(const SkinnyGemmSpec& s, const Layout& l) {
  // The bulk prefetch takes 16-byte aligned pieces: rows of W that vector loads can read.
  return s.prefetch_weights && l.vector_loads && l.preload_pieces == 0 &&
         skinny_gemm_weight_bytes(s) <= kMaxPrefetchBytes;
}

}  // namespace

std::string SkinnyGemmSpec::to_string() const {
  std::ostringstream s;
  s << dtype_name(dtype) << " m=" << m << " n=" << n << " k=" << k
    << (w_transposed ? " W[n,k]" : " W[k,n]") << (gated ? " gated" : "")
    << (has_bias ? " +bias" : "")
    << (activation != SkinnyActivation::kNone && !gated ? " +activation" : "")
    << (has_residual ? " +residual" : "") << (prefetch_weights ? " (constant W)" : "")
    << (stable_input_addresses ? " (early input addresses)" : "")
    << (next_w_bytes + next_w_up_bytes > 0
            ? " (next weights to L2: " + std::to_string(next_w_bytes + next_w_up_bytes) + " B)"
            : "")
    << (math == SkinnyMath::kCudaCores     ? " (CUDA cores)"
        : math == SkinnyMath::kTensorCores ? " (tensor cores)"
                                           : "")
    << (row_norm == SkinnyRowNorm::kLayerNorm ? " after LayerNorm"
        : row_norm == SkinnyRowNorm::kRmsNorm ? " after RMSNorm"
                                              : "");
  return s.str();
}

bool skinny_gemm_uses_tensor_cores(const SkinnyGemmSpec& spec) {
  switch (spec.math) {
    case SkinnyMath::kCudaCores:
      return false;
    case SkinnyMath::kTensorCores:
      return true;
    case SkinnyMath::kAuto:
      break;
  }
  return tensor_cores_fit(spec) && spec.m >= kSkinnyTensorCoreMinRows;
}

std::vector<SkinnyBuffer> skinny_gemm_buffers(const SkinnyGemmSpec& spec, int sm_count) {
  std::vector<SkinnyBuffer> b{SkinnyBuffer::kA};
  if (spec.row_norm != SkinnyRowNorm::kNone) b.push_back(SkinnyBuffer::kNormScale);
  if (spec.row_norm == SkinnyRowNorm::kLayerNorm && spec.row_norm_bias)
    b.push_back(SkinnyBuffer::kNormBias);
  b.push_back(SkinnyBuffer::kW);
  if (spec.gated) b.push_back(SkinnyBuffer::kWUp);
  if (spec.has_bias) b.push_back(SkinnyBuffer::kBias);
  if (spec.has_residual) b.push_back(SkinnyBuffer::kResidual);
  b.push_back(SkinnyBuffer::kC);
  if (skinny_gemm_workspace_bytes(spec, sm_count) > 0) b.push_back(SkinnyBuffer::kWorkspace);
  if (spec.next_w_bytes > 0) b.push_back(SkinnyBuffer::kNextW);
  if (spec.next_w_up_bytes > 0) b.push_back(SkinnyBuffer::kNextWUp);
  return b;
}

uint64_t skinny_gemm_workspace_bytes(const SkinnyGemmSpec& spec, int sm_count) {
  check_spec(spec, sm_count);
  return layout_for(spec, sm_count).workspace_bytes;
}

CudaKernelSource emit_skinny_gemm_kernel(const SkinnyGemmSpec& spec, const std::string& name,
                                         int sm_count) {
  check_spec(spec, sm_count);
  const Layout l = layout_for(spec, sm_count);
  const std::vector<SkinnyBuffer> buffers = skinny_gemm_buffers(spec, sm_count);
  auto index_of = [&](SkinnyBuffer role) {
    const auto it = std::find(buffers.begin(), buffers.end(), role);
    return it == buffers.end() ? 0 : static_cast<int>(it - buffers.begin());
  };
  std::ostringstream src;
  src << "// skinny GEMM " << spec.to_string() << ": " << l.tiles << " tiles x "
      << (l.tensor_cores ? std::to_string(l.cluster) + " cluster blocks of " +
                               std::to_string(l.tile_cols) + " columns on tensor cores\n"
                         : std::to_string(l.splits) + " k splits\n")
      << cuda_prelude() << "\n"
      << "#define GF_NAME " << name << "\n"
      << "#define GF_DTYPE "
      << (spec.dtype == DType::kF32   ? 0
          : spec.dtype == DType::kF16 ? 1
                                      : 2)
      << "\n"
      << "#define GF_TRANSPOSED " << (spec.w_transposed ? 1 : 0) << "\n"
      << "typedef " << (spec.dtype == DType::kF32 ? "float" : "uint16_t") << " gf_t;\n"
      << "constexpr int kM = " << spec.m << ", kN = " << spec.n << ", kK = " << spec.k << ";\n"
      << "constexpr int kVec = " << l.vec << ", kWarps = " << l.warps << ";\n"
      << "constexpr int kPreloadPieces = " << l.preload_pieces << ";\n"
      << "constexpr bool kPreloadNorm = " << (l.preload_norm ? "true" : "false") << ";\n"
      << "constexpr bool kConstantEpilogue = " << (spec.constant_epilogue ? "true" : "false")
      << ";\n"
      << "constexpr bool kStableInputAddresses = "
      << (spec.stable_input_addresses ? "true" : "false") << ";\n"
      << "constexpr bool kVectorLoads = " << (l.vector_loads ? "true" : "false") << ";\n"
      << "constexpr bool kPrefetchWeights = " << (prefetches_weights(spec, l) ? "true" : "false")
      << ";\n"
      << "constexpr int kTiles = " << l.tiles << ", kSplits = " << l.splits
      << ", kKPerSplit = " << l.k_per_split << ";\n"
      << "constexpr long long kCounterBytes = " << l.counter_bytes << ";\n"
      << "constexpr bool kGated = " << (spec.gated ? "true" : "false")
      << ", kHasBias = " << (spec.has_bias ? "true" : "false")
      << ", kHasResidual = " << (spec.has_residual ? "true" : "false") << ";\n"
      << "constexpr int kActivation = " << static_cast<int>(spec.activation) << ";\n"
      << "constexpr int kRowNorm = " << static_cast<int>(spec.row_norm) << ";\n"
      << "constexpr bool kRowNormBias = "
      << (spec.row_norm == SkinnyRowNorm::kLayerNorm && spec.row_norm_bias ? "true" : "false")
      << ";\n"
      << "constexpr float kRowNormEpsilon = " << float_literal(spec.row_norm_epsilon) << ";\n"
      << "constexpr int kBufA = " << index_of(SkinnyBuffer::kA)
      << ", kBufNormScale = " << index_of(SkinnyBuffer::kNormScale)
      << ", kBufNormBias = " << index_of(SkinnyBuffer::kNormBias)
      << ", kBufW = " << index_of(SkinnyBuffer::kW)
      << ", kBufWUp = " << index_of(SkinnyBuffer::kWUp)
      << ", kBufBias = " << index_of(SkinnyBuffer::kBias)
      << ", kBufResidual = " << index_of(SkinnyBuffer::kResidual)
      << ", kBufC = " << index_of(SkinnyBuffer::kC)
      << ", kBufWorkspace = " << index_of(SkinnyBuffer::kWorkspace)
      << ", kBufNextW = " << index_of(SkinnyBuffer::kNextW)
      << ", kBufNextWUp = " << index_of(SkinnyBuffer::kNextWUp) << ";\n"
      << "constexpr unsigned long long kNextWBytes = " << spec.next_w_bytes
      << "ull, kNextWUpBytes = " << spec.next_w_up_bytes << "ull;\n";
  if (l.tensor_cores) {
    const std::string cluster = std::to_string(l.cluster);
    src << "typedef uint16_t gf_elem;\n"
        << "constexpr bool kBf16 = " << (spec.dtype == DType::kBF16 ? "true" : "false") << ";\n"
        << "#define GF_CLUSTER_BLOCKS " << cluster << "\n"
        << "#define GF_CLUSTER " << (l.cluster > 1 ? "__cluster_dims__(" + cluster + ", 1, 1)" : "")
        << "\n"
        << "constexpr int kClusterBlocks = " << cluster << ", kN8 = " << l.tile_cols / 8
        << ", kChunksPerWarp = " << l.chunks_per_warp << ", kPreloadChunks = " << l.preload_chunks
        << ";\n"
        << embedded::skinny_gemm_common_cuh << "\n"
        << embedded::mma_fragments_cuh << "\n"
        << embedded::cluster_cuh << "\n"
        << embedded::skinny_gemm_mma_cuh;
  } else {
    src << embedded::skinny_gemm_common_cuh << "\n" << embedded::skinny_gemm_cuh;
  }
  CudaKernelSource out;
  out.name = name;
  out.source = src.str();
  out.schedule = CudaSchedule::kBlockPerRow;
  out.launch.grid = static_cast<uint32_t>(l.tiles * l.splits * l.cluster);
  out.launch.block = static_cast<uint32_t>(l.warps * kWarpSize);
  out.launch.cluster_blocks = static_cast<uint32_t>(l.cluster);
  out.waits_for_prior_grids = true;
  return out;
}

}  // namespace gf::codegen
