// Sliding-window enumeration shared by the Conv and pool reference kernels.
#include "runtime/cpu/reference/linear_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace {

// Every index of `dims`, row-major.
std::vector<std::vector<int64_t>> all_indices(const std::vector<int64_t>& dims) {
  std::vector<std::vector<int64_t>> out;
  const int64_t count = checked_numel(dims);
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(idx);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

Windows resolve_windows(const Attributes& attrs, const std::vector<int64_t>& x_dims,
                        std::vector<int64_t> kernel, bool pool) {
  Windows w;
  w.attrs = read_window_attrs(attrs, std::move(kernel), pool);
  w.in_spatial.assign(x_dims.begin() + 2, x_dims.end());
  w.in_strides = contiguous_strides(w.in_spatial);
  std::vector<int64_t> out_dims;
  for (size_t i = 0; i < w.in_spatial.size(); ++i) {
    w.axes.push_back(resolve_window_axis(w.attrs, i, w.in_spatial[i]));
    out_dims.push_back(w.axes.back().out);
  }
  w.origin = all_indices(out_dims);
  for (auto& o : w.origin)
    for (size_t i = 0; i < o.size(); ++i) o[i] = o[i] * w.attrs.strides[i] - w.axes[i].pad_begin;
  w.taps = all_indices(w.attrs.kernel);
  for (auto& t : w.taps)
    for (size_t i = 0; i < t.size(); ++i) t[i] *= w.attrs.dilations[i];
  return w;
}

int64_t Windows::input_offset(size_t p, size_t t) const {
  int64_t offset = 0;
  for (size_t i = 0; i < in_spatial.size(); ++i) {
    const int64_t at = origin[p][i] + taps[t][i];
    if (at < 0 || at >= in_spatial[i]) return -1;
    offset += at * in_strides[i];
  }
  return offset;
}

bool Windows::in_padded_input(size_t p, size_t t) const {
  for (size_t i = 0; i < in_spatial.size(); ++i) {
    const int64_t at = origin[p][i] + taps[t][i];
    if (at < -axes[i].pad_begin || at >= in_spatial[i] + axes[i].pad_end) return false;
  }
  return true;
}

}  // namespace gf::ref
