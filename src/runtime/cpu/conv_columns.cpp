#include "runtime/cpu/conv_columns.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>

namespace gf::cpu {

namespace {

constexpr int64_t kCols = ColumnSource::kBlockCols;
constexpr int kVectors = kCols / 16;

// How far a window's corner or a tap can sit from the plane's origin along one axis.
int64_t reach(const ConvAxis& a) {
  return a.in + a.pad + a.out * a.stride + a.kernel * a.dilation;
}

}  // namespace

bool ConvColumns::fits(const ConvAxis& h, const ConvAxis& w) {
  return reach(h) * reach(w) < std::numeric_limits<int32_t>::max();
}

__attribute__((target("avx512f"))) void ConvColumns::pack(int64_t k0, int64_t depth, int64_t n0,
                                                          int64_t cols, float* dst) const {
  // Per column: its window's top row and left column in the input (negative in the padding),
  // and the offset of that corner in the plane.
  alignas(64) int32_t top[kCols] = {}, left[kCols] = {}, corner[kCols] = {};
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t p = n0 + j, oh = p / w_.out, ow = p % w_.out;
    top[j] = static_cast<int32_t>(oh * h_.stride - h_.pad);
    left[j] = static_cast<int32_t>(ow * w_.stride - w_.pad);
    corner[j] = static_cast<int32_t>(top[j] * w_.in + left[j]);
  }
  __m512i top_v[kVectors], left_v[kVectors], corner_v[kVectors];
  __mmask16 live[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    top_v[v] = _mm512_load_si512(top + 16 * v);
    left_v[v] = _mm512_load_si512(left + 16 * v);
    corner_v[v] = _mm512_load_si512(corner + 16 * v);
    const int64_t n = std::clamp<int64_t>(cols - 16 * v, 0, 16);
    live[v] = static_cast<__mmask16>((1u << n) - 1);
  }
  const __m512i rows = _mm512_set1_epi32(static_cast<int32_t>(h_.in));
  const __m512i width = _mm512_set1_epi32(static_cast<int32_t>(w_.in));
  // Row k0 + i of B is tap (kh, kw) of channel c; walked in that order.
  const int64_t taps = h_.kernel * w_.kernel;
  int64_t c = k0 / taps, kh = k0 % taps / w_.kernel, kw = k0 % w_.kernel;
  for (int64_t i = 0; i < depth; ++i) {
    const float* plane = x_ + c * h_.in * w_.in;
    const int32_t dh = static_cast<int32_t>(kh * h_.dilation);
    const int32_t dw = static_cast<int32_t>(kw * w_.dilation);
    const __m512i shift = _mm512_set1_epi32(static_cast<int32_t>(dh * w_.in + dw));
    for (int v = 0; v < kVectors; ++v) {
      const __m512i ih = _mm512_add_epi32(top_v[v], _mm512_set1_epi32(dh));
      const __m512i iw = _mm512_add_epi32(left_v[v], _mm512_set1_epi32(dw));
      // Unsigned compares: a negative coordinate is out of range too.
      const __mmask16 inside =
          live[v] & _mm512_cmplt_epu32_mask(ih, rows) & _mm512_cmplt_epu32_mask(iw, width);
      const __m512i at = _mm512_add_epi32(corner_v[v], shift);
      _mm512_store_ps(dst + i * kCols + 16 * v,
                      _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside, at, plane, 4));
    }
    if (++kw == w_.kernel) {
      kw = 0;
      if (++kh == h_.kernel) {
        kh = 0;
        ++c;
      }
    }
  }
}

}  // namespace gf::cpu
