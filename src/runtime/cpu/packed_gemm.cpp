#include "runtime/cpu/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

#include "graphfuse/error.h"

namespace gf::cpu {

namespace {

constexpr int64_t kRows = PackedWeights::kPanelRows;
// 8 rows x 3 vectors: 24 accumulators + 3 of B fit the 32 registers, each step loads 3 + 8
// values for 24 FMAs, and 8 rows divide every filter count of ResNet (12 left 64 filters 11% idle).
constexpr int64_t kCols = ColumnSource::kBlockCols;
constexpr int kVectors = kCols / 16;
// K is walked in blocks of this depth: a block of B's column tile (48 KB) stays near L1 while every
// panel passes over it, and the panels' block (kDepth x M) stays in L2 across the column tiles.
constexpr int64_t kDepth = PackedWeights::kDepth;
// Column tiles packed together (384 KB, in L2), so that a panel's block (8 KB, in L1) serves all
// of them before the next one loads: the weights then stream once per depth block rather than
// once per column tile (ResNet's 7x7 layers are 2 tiles wide and 4 MB of weights deep).
constexpr int64_t kGroupTiles = 8;

__attribute__((target("avx512f"))) __mmask16 column_mask(int64_t cols, int64_t half) {
  const int64_t n = std::clamp<int64_t>(cols - 16 * half, 0, 16);
  return static_cast<__mmask16>((1u << n) - 1);
}

// One tile, Y[0:rows, 0:cols] (+)= panel block * packed B block, over kUsed 16-float vectors
// of columns (fewer for a narrow last tile: 196 positions are 4 tiles of 48 and one of 4). The
// accumulators start from the bias (or 0) on the first depth block and from Y on the later ones,
// so each element is still one sum in k order.
template <int kUsed>
__attribute__((target("avx512f"))) void tile(const float* panel, int64_t depth, const float* bp,
                                             bool first, const float* bias, float* y, int64_t ldy,
                                             int64_t rows, int64_t cols, const GemmEpilogue* last) {
  __mmask16 mask[kUsed];
#pragma GCC unroll 3
  for (int v = 0; v < kUsed; ++v) mask[v] = column_mask(cols, v);
  __m512 acc[kRows][kUsed];
#pragma GCC unroll 8
  for (int64_t r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int v = 0; v < kUsed; ++v) {
      if (r < rows && !first) {
        acc[r][v] = _mm512_maskz_loadu_ps(mask[v], y + r * ldy + 16 * v);
      } else {
        acc[r][v] = _mm512_set1_ps(bias != nullptr && r < rows ? bias[r] : 0.0f);
      }
    }
  }
  for (int64_t i = 0; i < depth; ++i) {
    __m512 bv[kUsed];
#pragma GCC unroll 3
    for (int v = 0; v < kUsed; ++v) bv[v] = _mm512_load_ps(bp + i * kCols + 16 * v);
    const float* a = panel + i * kRows;
    // The panels after this one follow it in memory: fetched while this one computes (ResNet-50's
    // last stage, 4-9 MB of weights per conv over 49 positions, ran 20% faster).
    _mm_prefetch(reinterpret_cast<const char*>(a + 2 * depth * kRows), _MM_HINT_T0);
#pragma GCC unroll 8
    for (int64_t r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
#pragma GCC unroll 3
      for (int v = 0; v < kUsed; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
  if (last != nullptr) {  // the last depth block: the epilogue on the final sums
    const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int64_t r = 0; r < kRows; ++r) {
      if (r >= rows) break;
#pragma GCC unroll 3
      for (int v = 0; v < kUsed; ++v) {
        if (last->residual != nullptr) {
          acc[r][v] = _mm512_add_ps(
              acc[r][v], _mm512_maskz_loadu_ps(mask[v], last->residual + r * last->ldr + 16 * v));
        }
        // max(0, x) returns x for x NaN or -0: x < 0 ? 0 : x. (The zero-masked form: GCC 12
        // warns about the unmasked one's undefined pass-through.)
        if (last->relu) acc[r][v] = _mm512_maskz_max_ps(static_cast<__mmask16>(0xffff), zero, acc[r][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int64_t r = 0; r < kRows; ++r) {
    if (r >= rows) break;
#pragma GCC unroll 3
    for (int v = 0; v < kUsed; ++v) _mm512_mask_storeu_ps(y + r * ldy + 16 * v, mask[v], acc[r][v]);
  }
}

}  // namespace

__attribute__((target("avx512f"))) void DenseColumns::pack(int64_t k0, int64_t depth, int64_t n0,
                                                           int64_t cols, float* dst) const {
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = column_mask(cols, v);
  const float* b = b_ + k0 * ldb_ + n0;
  for (int64_t i = 0; i < depth; ++i) {
    for (int v = 0; v < kVectors; ++v)
      _mm512_store_ps(dst + i * kCols + 16 * v,
                      _mm512_maskz_loadu_ps(mask[v], b + i * ldb_ + 16 * v));
  }
}

bool PackedWeights::available() {
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
}

PackedWeights::PackedWeights(const float* w, int64_t m, int64_t k) : m_(m), k_(k) {
  panels_.assign(static_cast<size_t>((m + kRows - 1) / kRows * kRows * k), 0.0f);  // rows past m: 0
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t i = 0; i < k; ++i) {
      const int64_t k0 = i / kDepth * kDepth;
      panel(row, k0)[(i - k0) * kRows + row % kRows] = w[row * k + i];
    }
  }
}

float* PackedWeights::panel(int64_t row, int64_t k0) {
  return const_cast<float*>(std::as_const(*this).panel(row, k0));
}

const float* PackedWeights::panel(int64_t row, int64_t k0) const {
  const int64_t panels = (m_ + kRows - 1) / kRows, depth = std::min(kDepth, k_ - k0);
  return panels_.data() + k0 * panels * kRows + row / kRows * depth * kRows;
}

void PackedWeights::multiply(const ColumnSource& b, const float* bias, float* y, int64_t ldy,
                             int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                             const GemmEpilogue& epilogue) const {
  GF_ASSERT(m0 % kRows == 0 && m1 <= m_);
  // This thread's packed B blocks, kept for its later calls.
  thread_local std::unique_ptr<float[], decltype(&std::free)> blocks(
      static_cast<float*>(std::aligned_alloc(64, kGroupTiles * kDepth * kCols * sizeof(float))),
      &std::free);
  if (!blocks) throw Error(ErrorCode::kOutOfMemory, "cannot allocate the packed GEMM's B blocks");
  for (int64_t k0 = 0; k0 < k_; k0 += kDepth) {
    const int64_t depth = std::min(kDepth, k_ - k0);
    for (int64_t group = n0; group < n1; group += kGroupTiles * kCols) {
      const int64_t group_end = std::min(n1, group + kGroupTiles * kCols);
      for (int64_t col = group; col < group_end; col += kCols)
        b.pack(k0, depth, col, std::min(kCols, group_end - col),
               blocks.get() + (col - group) * kDepth);
      for (int64_t row = m0; row < m1; row += kRows) {
        const float* rows = panel(row, k0);
        for (int64_t col = group; col < group_end; col += kCols) {
          const int64_t cols = std::min(kCols, group_end - col);
          GemmEpilogue tile_epilogue = epilogue;
          if (tile_epilogue.residual != nullptr)
            tile_epilogue.residual += row * tile_epilogue.ldr + col;
          const bool last = k0 + depth >= k_ && !epilogue.empty();
          (cols > 32   ? tile<3>
           : cols > 16 ? tile<2>
                       : tile<1>)(rows, depth, blocks.get() + (col - group) * kDepth, k0 == 0,
                                  bias != nullptr ? bias + row : nullptr, y + row * ldy + col, ldy,
                                  std::min(kRows, m1 - row), cols,
                                  last ? &tile_epilogue : nullptr);
        }
      }
    }
  }
}

}  // namespace gf::cpu
