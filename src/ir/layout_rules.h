// Index arithmetic of the layout ops that shape inference and the reference kernels must agree
// on (the kernels recompute it from the same inputs instead of carrying it through the graph).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gf::layout {

// One axis of a Slice after ONNX's adjustment and clamping: element k of the output reads input
// index start + k * step.
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// ONNX Slice rules for one axis of size `dim`: negative start/end count from the end; start is
// clamped to [0, dim] (step > 0) or [0, dim - 1] (step < 0), end to [0, dim] or [-1, dim - 1].
// `step` must be non-zero. Safe for the INT64_MIN/INT64_MAX sentinels exporters use.
inline SliceAxis resolve_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;  // cannot overflow: dim >= 0
  if (end < 0) end += dim;
  SliceAxis r;
  r.step = step;
  if (step > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.count = end > r.start ? (end - r.start - 1) / step + 1 : 0;
  } else if (dim > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    // |step| as unsigned: -INT64_MIN does not fit in int64.
    const uint64_t magnitude = uint64_t{0} - static_cast<uint64_t>(step);
    r.count = r.start > end
                  ? static_cast<int64_t>(static_cast<uint64_t>(r.start - end - 1) / magnitude) + 1
                  : 0;
  }
  return r;
}

// Pad's `pads` ([begin..., end...] over `axes`, or over all axes when `axes` is empty) spread to
// every one of `rank` axes: returns [begin_0..begin_{rank-1}, end_0..end_{rank-1}]. Axes must be
// valid (negative ones count from the end); inference has checked them.
inline std::vector<int64_t> pads_for_all_axes(const std::vector<int64_t>& pads,
                                              const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
  const size_t n = axes.empty() ? static_cast<size_t>(rank) : axes.size();
  for (size_t i = 0; i < n; ++i) {
    int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (a < 0) a += rank;
    full[static_cast<size_t>(a)] = pads[i];
    full[static_cast<size_t>(a + rank)] = pads[n + i];
  }
  return full;
}

// The [start, end) range of dims that Shape returns for a tensor of `rank`: both attributes
// count from the end when negative and are clamped to [0, rank].
struct ShapeRange {
  int64_t start = 0;
  int64_t end = 0;
};
inline ShapeRange resolve_shape_range(int64_t rank, int64_t start, int64_t end) {
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

}  // namespace gf::layout
