// Index helpers shared by the reference kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gf::ref {

// Row-major strides of `dims`, in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

// Strides that read an input of `in_dims` broadcast (numpy rules) to `out_dims`: 0 along
// broadcast dimensions. `in_dims` must be broadcast-compatible (checked by inference).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_dims,
                                       const std::vector<int64_t>& out_dims);

// Walks every element of an output of `out_dims` in row-major order, tracking the element
// offset of each input under its own strides.
//   MultiIndex it(out_dims, {strides_a, strides_b});
//   for (int64_t i = 0; i < n; ++i, it.next()) out[i] = f(a[it.offset(0)], b[it.offset(1)]);
class MultiIndex {
 public:
  MultiIndex(std::vector<int64_t> out_dims, std::vector<std::vector<int64_t>> strides);
  int64_t offset(size_t input) const { return offsets_[input]; }
  const std::vector<int64_t>& index() const { return index_; }
  void next();

 private:
  std::vector<int64_t> dims_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
};

}  // namespace gf::ref
