// Reference kernels for the layout family: the data-movement ops (Reshape, Squeeze, Unsqueeze,
// Flatten, Transpose, Concat, Split) and the family's shared helpers. Indexing ops are in
// layout_indexing.cpp, shape producers in layout_shape_ops.cpp.
#include <numeric>

#include "runtime/cpu/reference/gather_nd.h"
#include "runtime/cpu/reference/layout_family.h"
#include "runtime/cpu/reference/ref_util.h"

namespace gf::ref {

namespace layout {

int64_t checked_index(const KernelArgs& a, const Tensor& indices, int64_t flat, int64_t size,
                      size_t axis) {
  const int64_t v = indices.element_as_int(flat);
  if (v < -size || v >= size) {
    // Name the position as a multi-index: "indices[1,0]".
    std::vector<int64_t> pos(indices.rank());
    int64_t rest = flat;
    for (size_t d = indices.rank(); d-- > 0;) {
      pos[d] = rest % indices.dims()[d];
      rest /= indices.dims()[d];
    }
    std::string where = "[";
    for (size_t d = 0; d < pos.size(); ++d) where += (d ? "," : "") + std::to_string(pos[d]);
    kernel_fail(a, "index " + std::to_string(v) + " at indices" + where + "] is out of range [" +
                       std::to_string(-size) + ", " + std::to_string(size) + ") for axis " +
                       std::to_string(axis) + " of size " + std::to_string(size));
  }
  return v < 0 ? v + size : v;
}

}  // namespace layout

namespace {

using layout::bytes_of;
using layout::product;

// Reshape, Squeeze, Unsqueeze and Flatten keep the row-major order: only the dims change.
void copy_data(const KernelArgs& a) {
  if (a.inputs[0].nbytes())
    std::memcpy(a.outputs[0].raw(), a.inputs[0].raw(), a.inputs[0].nbytes());
}

void transpose(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  Tensor& y = a.outputs[0];
  std::vector<int64_t> perm(x.rank());
  if (a.attrs().has("perm")) {
    perm = a.attrs().get_ints("perm");
  } else {
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
  }
  const std::vector<int64_t> in_strides = contiguous_strides(x.dims());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) strides[i] = in_strides[static_cast<size_t>(perm[i])];
  MultiIndex it(y.dims(), {strides});
  for (int64_t i = 0; i < y.numel(); ++i, it.next()) layout::copy_element(y, i, x, it.offset(0));
}

// Concat and Split view each tensor as [outer, block] where outer spans the dims before the
// axis; row o of the joined tensor is the rows o of the parts laid side by side.
void concat(const KernelArgs& a) {
  Tensor& y = a.outputs[0];
  const size_t axis = layout::axis_attr(a, 0, y.rank());
  const size_t elem = dtype_size(y.dtype());
  const int64_t outer = product(y.dims(), 0, axis);
  const size_t row = static_cast<size_t>(product(y.dims(), axis, y.rank())) * elem;
  size_t offset = 0;
  for (const Tensor& x : a.inputs) {
    const size_t block = static_cast<size_t>(product(x.dims(), axis, x.rank())) * elem;
    if (block == 0) continue;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(bytes_of(y) + static_cast<size_t>(o) * row + offset,
                  bytes_of(x) + static_cast<size_t>(o) * block, block);
    }
    offset += block;
  }
}

void split(const KernelArgs& a) {
  const Tensor& x = a.inputs[0];
  const size_t axis = layout::axis_attr(a, 0, x.rank());
  const size_t elem = dtype_size(x.dtype());
  const int64_t outer = product(x.dims(), 0, axis);
  const size_t row = static_cast<size_t>(product(x.dims(), axis, x.rank())) * elem;
  size_t offset = 0;
  for (Tensor& y : a.outputs) {
    const size_t block = static_cast<size_t>(product(y.dims(), axis, y.rank())) * elem;
    if (block == 0) continue;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(bytes_of(y) + static_cast<size_t>(o) * block,
                  bytes_of(x) + static_cast<size_t>(o) * row + offset, block);
    }
    offset += block;
  }
}

}  // namespace

void register_layout_kernels(KernelTable& table) {
  table[static_cast<size_t>(Op::kReshape)] = copy_data;
  table[static_cast<size_t>(Op::kSqueeze)] = copy_data;
  table[static_cast<size_t>(Op::kUnsqueeze)] = copy_data;
  table[static_cast<size_t>(Op::kFlatten)] = copy_data;
  table[static_cast<size_t>(Op::kTranspose)] = transpose;
  table[static_cast<size_t>(Op::kConcat)] = concat;
  table[static_cast<size_t>(Op::kSplit)] = split;
  layout::register_indexing_kernels(table);
  layout::register_shape_producer_kernels(table);
  layout::register_gather_nd_kernel(table);
}

}  // namespace gf::ref
