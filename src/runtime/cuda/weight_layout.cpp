#include "runtime/cuda/weight_layout.h"

#include <algorithm>
#include <cstring>

#include "graphfuse/error.h"

namespace gf::cuda {

namespace {

bool is_gemm_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

// Weights are transposed once per session, a few GB for the large models: square tiles keep
// the rows read in cache while each output row is written contiguously (2.5 times the rate of
// the other loop order on this project's build machine), and output tiles go to every thread.
constexpr int64_t kTile = 64;
constexpr int64_t kMinThreadedElements = int64_t{1} << 20;

template <class T>
void transpose_tiles(const T* in, T* out, int64_t rows, int64_t cols) {
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (rows * cols >= kMinThreadedElements)
  for (int64_t tile = 0; tile < col_tiles; ++tile) {
    const int64_t c0 = tile * kTile, c1 = std::min(cols, c0 + kTile);
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * rows + r] = in[r * cols + c];
    }
  }
}

}  // namespace

bool stores_transposed(const Graph& g, ValueId w) {
  const Value& v = g.value(w);
  if (!v.is_constant() || v.constant.rank() != 2 || v.constant.numel() == 0) return false;
  const DType dtype = v.constant.dtype();
  if (!is_gemm_dtype(dtype)) return false;
  if (std::find(g.outputs().begin(), g.outputs().end(), w) != g.outputs().end()) return false;
  bool read = false;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (std::find(n.inputs.begin(), n.inputs.end(), w) == n.inputs.end()) continue;
    const bool product =
        n.op == Op::kMatMul || (n.op == Op::kGemm && n.attrs.get_int("transB", 0) == 0);
    const bool as_b_only = std::count(n.inputs.begin(), n.inputs.end(), w) == 1 && n.inputs[1] == w;
    if (!product || !as_b_only || g.value(n.inputs[0]).type.dtype != dtype) return false;
    read = true;
  }
  return read;
}

Tensor transpose_matrix(const Tensor& t) {
  GF_ASSERT(t.rank() == 2, "transpose_matrix takes a 2-D tensor");
  const int64_t rows = t.dims()[0], cols = t.dims()[1];
  Tensor out(t.dtype(), {cols, rows});
  switch (dtype_size(t.dtype())) {
    case 1:
      transpose_tiles(static_cast<const uint8_t*>(t.raw()), static_cast<uint8_t*>(out.raw()), rows,
                      cols);
      break;
    case 2:
      transpose_tiles(static_cast<const uint16_t*>(t.raw()), static_cast<uint16_t*>(out.raw()),
                      rows, cols);
      break;
    case 4:
      transpose_tiles(static_cast<const uint32_t*>(t.raw()), static_cast<uint32_t*>(out.raw()),
                      rows, cols);
      break;
    case 8:
      transpose_tiles(static_cast<const uint64_t*>(t.raw()), static_cast<uint64_t*>(out.raw()),
                      rows, cols);
      break;
    default:
      GF_ASSERT(false, "transpose_matrix: an element size of 1, 2, 4 or 8 bytes");
  }
  return out;
}

}  // namespace gf::cuda
