#include "ir/tensor_transpose.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "graphfuse/error.h"

namespace gf {

namespace {

// Weights are transposed once per session, a few GB for the large models: square tiles keep
// the rows read in cache while each output row is written contiguously (2.5 times the rate of
// the other loop order on this project's build machine), and output tiles go to every thread.
// Inside a tile, 16- and 32-bit elements move as 8x8 / 4x4 blocks through SSE2 registers
// (16-byte loads and stores, unpacks in between) where the block fits, one at a time elsewhere.
constexpr int64_t kTile = 64;
constexpr int64_t kMinThreadedElements = int64_t{1} << 20;

#if defined(__SSE2__)
// dst[j * dst_stride + i] = src[i * src_stride + j] for an 8x8 block of 16-bit elements.
inline void transpose_block(const uint16_t* src, int64_t src_stride, uint16_t* dst, int64_t dst_stride) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  __m128i a[8], b[8];
  for (int i = 0; i < 4; ++i) {  // pairs of rows, interleaved by element
    a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {  // quads of rows, interleaved by pairs
    b[4 * i] = _mm_unpacklo_epi32(a[4 * i], a[4 * i + 2]);
    b[4 * i + 1] = _mm_unpackhi_epi32(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm_unpacklo_epi32(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm_unpackhi_epi32(a[4 * i + 1], a[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {  // the two quads' halves: output rows 2j and 2j + 1
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * j) * dst_stride), _mm_unpacklo_epi64(b[j], b[4 + j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * j + 1) * dst_stride), _mm_unpackhi_epi64(b[j], b[4 + j]));
  }
}

// The same for a 4x4 block of 32-bit elements.
inline void transpose_block(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride) {
  __m128i r[4];
  for (int i = 0; i < 4; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  const __m128i a0 = _mm_unpacklo_epi32(r[0], r[1]), a1 = _mm_unpackhi_epi32(r[0], r[1]);
  const __m128i a2 = _mm_unpacklo_epi32(r[2], r[3]), a3 = _mm_unpackhi_epi32(r[2], r[3]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi64(a0, a2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + dst_stride), _mm_unpackhi_epi64(a0, a2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * dst_stride), _mm_unpacklo_epi64(a1, a3));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * dst_stride), _mm_unpackhi_epi64(a1, a3));
}

// Elements per side of the register block of T (1: element by element).
template <class T>
constexpr int64_t block_side() {
  return sizeof(T) == 2 ? 8 : sizeof(T) == 4 ? 4 : 1;
}
#else
template <class T>
constexpr int64_t block_side() {
  return 1;
}
template <class T>
inline void transpose_block(const T*, int64_t, T*, int64_t) {}
#endif

// One tile: rows [r0, r1) x columns [c0, c1) of a [rows, cols] matrix into its transpose.
template <class T>
void transpose_tile(const T* src, T* dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1) {
  constexpr int64_t side = block_side<T>();
  // The part covered by whole blocks, then the strips right of and below it.
  const int64_t rb = side > 1 ? r0 + (r1 - r0) / side * side : r0;
  const int64_t cb = side > 1 ? c0 + (c1 - c0) / side * side : c0;
  if constexpr (side > 1) {
    for (int64_t c = c0; c < cb; c += side)
      for (int64_t r = r0; r < rb; r += side) transpose_block(src + r * cols + c, cols, dst + c * rows + r, rows);
  }
  for (int64_t c = cb; c < c1; ++c)
    for (int64_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
  for (int64_t c = c0; c < cb; ++c)
    for (int64_t r = rb; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
}

// `batches` matrices [rows, cols], one after another, into [cols, rows] each.
template <class T>
void transpose_tiles(const T* in, T* out, int64_t batches, int64_t rows, int64_t cols) {
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t matrix = rows * cols;
#pragma omp parallel for collapse(2) schedule(static) if (batches * matrix >= kMinThreadedElements)
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t tile = 0; tile < col_tiles; ++tile) {
      const T* src = in + b * matrix;
      T* dst = out + b * matrix;
      const int64_t c0 = tile * kTile, c1 = std::min(cols, c0 + kTile);
      for (int64_t r0 = 0; r0 < rows; r0 += kTile)
        transpose_tile(src, dst, rows, cols, r0, std::min(rows, r0 + kTile), c0, c1);
    }
  }
}

void transpose_batched(const Tensor& in, Tensor& out, int64_t batches, int64_t rows, int64_t cols) {
  switch (dtype_size(in.dtype())) {
    case 1:
      transpose_tiles(static_cast<const uint8_t*>(in.raw()), static_cast<uint8_t*>(out.raw()), batches,
                      rows, cols);
      break;
    case 2:
      transpose_tiles(static_cast<const uint16_t*>(in.raw()), static_cast<uint16_t*>(out.raw()),
                      batches, rows, cols);
      break;
    case 4:
      transpose_tiles(static_cast<const uint32_t*>(in.raw()), static_cast<uint32_t*>(out.raw()),
                      batches, rows, cols);
      break;
    case 8:
      transpose_tiles(static_cast<const uint64_t*>(in.raw()), static_cast<uint64_t*>(out.raw()),
                      batches, rows, cols);
      break;
    default:
      GF_ASSERT(false, "transpose: an element size of 1, 2, 4 or 8 bytes");
  }
}

// True when `perm` keeps every dim but the last two, which it swaps.
bool swaps_last_two(const std::vector<int64_t>& perm) {
  const size_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != static_cast<int64_t>(rank) - 2 ||
      perm[rank - 2] != static_cast<int64_t>(rank) - 1) {
    return false;
  }
  for (size_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

Tensor transpose_tensor(const Tensor& in, const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& dims = in.dims();
  const size_t rank = dims.size();
  GF_ASSERT(perm.size() == rank, "transpose_tensor: a perm of the tensor's rank");
  std::vector<int64_t> out_dims(rank), in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * dims[i];
  for (size_t i = 0; i < rank; ++i) out_dims[i] = dims[static_cast<size_t>(perm[i])];
  if (in.numel() == 0) return Tensor(in.dtype(), out_dims);
  Tensor out = Tensor::unfilled(in.dtype(), out_dims);  // every element is written below
  if (swaps_last_two(perm)) {
    const int64_t rows = dims[rank - 2], cols = dims[rank - 1];
    transpose_batched(in, out, in.numel() / (rows * cols), rows, cols);
    return out;
  }
  const size_t elem = dtype_size(in.dtype());
  const auto* src = static_cast<const char*>(in.raw());
  auto* dst = static_cast<char*>(out.raw());
  std::vector<int64_t> index(rank, 0);  // over out_dims
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += index[i] * in_strides[static_cast<size_t>(perm[i])];
    std::memcpy(dst + static_cast<size_t>(o) * elem, src + static_cast<size_t>(offset) * elem, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_dims[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

Tensor transpose_matrix(const Tensor& t) {
  GF_ASSERT(t.rank() == 2, "transpose_matrix takes a 2-D tensor");
  return transpose_tensor(t, {1, 0});
}

}  // namespace gf
