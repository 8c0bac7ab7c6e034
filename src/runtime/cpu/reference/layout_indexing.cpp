// Reference kernels for the layout family's indexing ops: Slice, Gather, GatherElements,
// Expand, Tile, Pad, Trilu. Each output element is located in the input by index arithmetic
// and moved as bytes.
#include <algorithm>

#include "ir/layout_rules.h"
#include "runtime/cpu/reference/layout_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref::layout {

namespace {

using gf::layout::pads_for_all_axes;
using gf::layout::resolve_slice_axis;
using gf::layout::SliceAxis;

void slice(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  const int64_t r = static_cast<int64_t>(x.rank());
  const std::vector<int64_t> starts = a.inputs[1].to_int_vector();
  const std::vector<int64_t> ends = a.inputs[2].to_int_vector();
  std::vector<int64_t> axes(starts.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (a.has_input(3)) axes = a.inputs[3].to_int_vector();
  const std::vector<int64_t> steps =
      a.has_input(4) ? a.inputs[4].to_int_vector() : std::vector<int64_t>(starts.size(), 1);

  const std::vector<int64_t> in_strides = contiguous_strides(x.dims());
  std::vector<int64_t> strides = in_strides;  // unsliced axes walk the input as is
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t d = static_cast<size_t>(axes[i] < 0 ? axes[i] + r : axes[i]);
    const SliceAxis s = resolve_slice_axis(x.dims()[d], starts[i], ends[i], steps[i]);
    base += s.start * in_strides[d];
    // With one element or none the step is never taken (and step * stride could overflow).
    strides[d] = s.count > 1 ? s.step * in_strides[d] : 0;
  }
  MultiIndex it(y.dims(), {strides});
  for (int64_t i = 0; i < y.numel(); ++i, it.next()) copy_element(y, i, x, base + it.offset(0));
}

void gather(const KernelArgs& a) {
  const Tensor& data = a.inputs[0];
  const Tensor& indices = a.inputs[1];
  Tensor& y = a.outputs[0];
  const size_t axis = axis_attr(a, 0, data.rank());
  const int64_t size = data.dims()[axis];
  const int64_t outer = product(data.dims(), 0, axis);
  const size_t inner =
      static_cast<size_t>(product(data.dims(), axis + 1, data.rank())) * dtype_size(data.dtype());
  const int64_t count = indices.numel();
  for (int64_t k = 0; k < count; ++k) {
    const int64_t v = checked_index(a, indices, k, size, axis);
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(bytes_of(y) + static_cast<size_t>(o * count + k) * inner,
                  bytes_of(data) + static_cast<size_t>(o * size + v) * inner, inner);
    }
  }
}

void gather_elements(const KernelArgs& a) {
  const Tensor& data = a.inputs[0];
  const Tensor& indices = a.inputs[1];
  Tensor& y = a.outputs[0];
  const size_t axis = axis_attr(a, 0, data.rank());
  const std::vector<int64_t> strides = contiguous_strides(data.dims());
  MultiIndex it(indices.dims(), {contiguous_strides(data.dims())});
  for (int64_t i = 0; i < indices.numel(); ++i, it.next()) {
    const int64_t v = checked_index(a, indices, i, data.dims()[axis], axis);
    // it.offset(0) addresses data at the same coordinates; swap in the gathered one on `axis`.
    const int64_t from = it.offset(0) + (v - it.index()[axis]) * strides[axis];
    copy_element(y, i, data, from);
  }
}

void expand(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  MultiIndex it(y.dims(), {broadcast_strides(x.dims(), y.dims())});
  for (int64_t i = 0; i < y.numel(); ++i, it.next()) copy_element(y, i, x, it.offset(0));
}

void tile(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  const std::vector<int64_t> strides = contiguous_strides(x.dims());
  MultiIndex it(y.dims(), {});
  for (int64_t i = 0; i < y.numel(); ++i, it.next()) {
    int64_t from = 0;
    for (size_t d = 0; d < x.rank(); ++d) from += it.index()[d] % x.dims()[d] * strides[d];
    copy_element(y, i, x, from);
  }
}

// Maps an index outside [0, n) back into it for Pad's non-constant modes (n > 0); numpy's
// semantics, including pads wider than the axis.
int64_t pad_source_index(const std::string& mode, int64_t j, int64_t n) {
  if (mode == "edge") return std::clamp<int64_t>(j, 0, n - 1);
  if (mode == "wrap") return (j % n + n) % n;
  // reflect: a triangle wave of period 2(n-1) that does not repeat the edge element.
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  const int64_t m = (j % period + period) % period;
  return m < n ? m : period - m;
}

void pad(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  const size_t r = x.rank();
  const std::string mode = a.attrs().get_string("mode", "constant");
  const std::vector<int64_t> full =
      pads_for_all_axes(a.inputs[1].to_int_vector(),
                        a.has_input(3) ? a.inputs[3].to_int_vector() : std::vector<int64_t>{},
                        static_cast<int64_t>(r));
  // Negative pads crop first: the padded modes read only the `kept` part, from `crop` on.
  std::vector<int64_t> crop(r), kept(r), lead(r);
  for (size_t d = 0; d < r; ++d) {
    crop[d] = std::max<int64_t>(-full[d], 0);
    kept[d] = x.dims()[d] - crop[d] - std::max<int64_t>(-full[r + d], 0);
    lead[d] = std::max<int64_t>(full[d], 0);
  }
  const bool constant = mode == "constant";
  const bool has_fill = constant && a.has_input(2);
  const std::vector<int64_t> strides = contiguous_strides(x.dims());
  MultiIndex it(y.dims(), {});
  for (int64_t i = 0; i < y.numel(); ++i, it.next()) {
    int64_t from = 0;
    bool inside = true;
    for (size_t d = 0; d < r && inside; ++d) {
      int64_t j = it.index()[d] - lead[d];
      if (j < 0 || j >= kept[d]) {
        if (constant)
          inside = false;
        else
          j = pad_source_index(mode, j, kept[d]);
      }
      from += (j + crop[d]) * strides[d];
    }
    if (inside) {
      copy_element(y, i, x, from);
    } else if (has_fill) {
      copy_element(y, i, a.inputs[2], 0);
    }  // else the zero the output was allocated with
  }
}

void trilu(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  const int64_t k = a.has_input(1) ? a.inputs[1].element_as_int(0) : 0;
  const bool upper = a.attrs().get_int("upper", 1) != 0;
  const int64_t rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const int64_t batch = product(x.dims(), 0, x.rank() - 2);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        // Diagonal j - i is kept above (upper) or below (lower) diagonal k, inclusive; the
        // rest stays the zero the output was allocated with.
        const bool keep = upper ? j - i >= k : j - i <= k;
        const int64_t e = (b * rows + i) * cols + j;
        if (keep) copy_element(y, e, x, e);
      }
    }
  }
}

}  // namespace

void register_indexing_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kSlice)] = slice;
  table[static_cast<size_t>(Op::kGather)] = gather;
  table[static_cast<size_t>(Op::kGatherElements)] = gather_elements;
  table[static_cast<size_t>(Op::kExpand)] = expand;
  table[static_cast<size_t>(Op::kTile)] = tile;
  table[static_cast<size_t>(Op::kPad)] = pad;
  table[static_cast<size_t>(Op::kTrilu)] = trilu;
}

}  // namespace gf::ref::layout
