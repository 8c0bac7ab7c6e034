// Shared pieces of the layout family's reference kernels (layout*.cpp); private to it. Data
// movement is done on bytes, so every kernel serves every dtype.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "runtime/cpu/reference/kernels.h"

namespace gf::ref::layout {

// The sub-families, registered by register_layout_kernels.
void register_indexing_kernels(KernelTable& table);
void register_shape_producer_kernels(KernelTable& table);

// Byte access to tensors whose dtype does not matter to the kernel.
inline const char* bytes_of(const Tensor& t) {
  return static_cast<const char*>(t.raw());
}
inline char* bytes_of(Tensor& t) {
  return static_cast<char*>(t.raw());
}

// Copies element `from` of `src` to element `to` of `dst`; both have the same dtype.
inline void copy_element(Tensor& dst, int64_t to, const Tensor& src, int64_t from) {
  const size_t size = dtype_size(src.dtype());
  std::memcpy(bytes_of(dst) + static_cast<size_t>(to) * size,
              bytes_of(src) + static_cast<size_t>(from) * size, size);
}

// Product of dims[begin, end).
inline int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// An axis attribute made non-negative (inference has checked its range).
inline size_t axis_attr(const KernelArgs& a, int64_t fallback, size_t rank) {
  const int64_t axis = a.attrs().get_int("axis", fallback);
  return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
}

// Reads index operand element `flat` and makes it non-negative for an axis of `size`; an index
// outside [-size, size) fails naming its position, value and the axis.
int64_t checked_index(const KernelArgs& a, const Tensor& indices, int64_t flat, int64_t size,
                      size_t axis);

}  // namespace gf::ref::layout
