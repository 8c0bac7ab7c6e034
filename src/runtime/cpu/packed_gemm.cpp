#include "runtime/cpu/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "graphfuse/error.h"

namespace gf::cpu {

namespace {

constexpr int64_t kRows = PackedWeights::kPanelRows;
// Two 16-float vectors: 24 accumulators + 2 of B fit the 32 registers.
constexpr int64_t kCols = ColumnSource::kBlockCols;
// K is walked in blocks of this depth: a block of B's column tile (32 KB) stays in L1 while every
// panel passes over it, and the panels' block (kDepth x M) stays in L2 across the column tiles.
constexpr int64_t kDepth = 256;
// Column tiles packed together (256 KB, in L2), so that a panel's block (12 KB, in L1) serves all
// of them before the next one loads: the weights then stream once per depth block rather than
// once per column tile (ResNet's 7x7 layers are 2 tiles wide and 4 MB of weights deep).
constexpr int64_t kGroupTiles = 8;

__attribute__((target("avx512f"))) __mmask16 column_mask(int64_t cols, int64_t half) {
  const int64_t n = std::clamp<int64_t>(cols - 16 * half, 0, 16);
  return static_cast<__mmask16>((1u << n) - 1);
}

// One tile, Y[0:rows, 0:cols] (+)= panel block * packed B block, over kVectors 16-float vectors
// of columns (1 for a narrow last tile: 196 positions are 6 tiles of 32 and one of 4). The
// accumulators start from the bias (or 0) on the first depth block and from Y on the later ones,
// so each element is still one sum in k order.
template <int kVectors>
__attribute__((target("avx512f"))) void tile(const float* panel, int64_t depth, const float* bp,
                                             bool first, const float* bias, float* y, int64_t ldy,
                                             int64_t rows, int64_t cols) {
  __mmask16 mask[kVectors];
  for (int v = 0; v < kVectors; ++v) mask[v] = column_mask(cols, v);
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 12
  for (int64_t r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVectors; ++v) {
      if (r < rows && !first) {
        acc[r][v] = _mm512_maskz_loadu_ps(mask[v], y + r * ldy + 16 * v);
      } else {
        acc[r][v] = _mm512_set1_ps(bias != nullptr && r < rows ? bias[r] : 0.0f);
      }
    }
  }
  for (int64_t i = 0; i < depth; ++i) {
    __m512 bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = _mm512_load_ps(bp + i * kCols + 16 * v);
    const float* a = panel + i * kRows;
#pragma GCC unroll 12
    for (int64_t r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 12
  for (int64_t r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    for (int v = 0; v < kVectors; ++v)
      _mm512_mask_storeu_ps(y + r * ldy + 16 * v, mask[v], acc[r][v]);
  }
}

}  // namespace

__attribute__((target("avx512f"))) void DenseColumns::pack(int64_t k0, int64_t depth, int64_t n0,
                                                           int64_t cols, float* dst) const {
  const __mmask16 lo = column_mask(cols, 0), hi = column_mask(cols, 1);
  const float* b = b_ + k0 * ldb_ + n0;
  for (int64_t i = 0; i < depth; ++i) {
    _mm512_store_ps(dst + i * kCols, _mm512_maskz_loadu_ps(lo, b + i * ldb_));
    _mm512_store_ps(dst + i * kCols + 16, _mm512_maskz_loadu_ps(hi, b + i * ldb_ + 16));
  }
}

bool PackedWeights::available() {
  static const bool ok = __builtin_cpu_supports("avx512f");
  return ok;
}

PackedWeights::PackedWeights(const float* w, int64_t m, int64_t k) : m_(m), k_(k) {
  const int64_t panels = (m + kRows - 1) / kRows;
  panels_.assign(static_cast<size_t>(panels * k * kRows), 0.0f);  // rows past m stay 0
  for (int64_t row = 0; row < m; ++row) {
    float* dst = panels_.data() + (row / kRows) * k * kRows + row % kRows;
    for (int64_t i = 0; i < k; ++i) dst[i * kRows] = w[row * k + i];
  }
}

void PackedWeights::multiply(const ColumnSource& b, const float* bias, float* y, int64_t ldy,
                             int64_t m0, int64_t m1, int64_t n0, int64_t n1) const {
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
        const float* panel = panels_.data() + (row / kRows * k_ + k0) * kRows;
        for (int64_t col = group; col < group_end; col += kCols) {
          const int64_t cols = std::min(kCols, group_end - col);
          (cols > 16 ? tile<2> : tile<1>)(panel, depth, blocks.get() + (col - group) * kDepth,
                                          k0 == 0, bias != nullptr ? bias + row : nullptr,
                                          y + row * ldy + col, ldy, std::min(kRows, m1 - row),
                                          cols);
        }
      }
    }
  }
}

}  // namespace gf::cpu
