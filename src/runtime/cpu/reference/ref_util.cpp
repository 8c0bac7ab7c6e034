#include "runtime/cpu/reference/ref_util.h"

#include "graphfuse/error.h"

namespace gf::ref {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_dims,
                                       const std::vector<int64_t>& out_dims) {
  GF_ASSERT(in_dims.size() <= out_dims.size());
  const std::vector<int64_t> in_strides = contiguous_strides(in_dims);
  std::vector<int64_t> s(out_dims.size(), 0);
  const size_t lead = out_dims.size() - in_dims.size();
  for (size_t i = 0; i < in_dims.size(); ++i) {
    GF_ASSERT(in_dims[i] == out_dims[lead + i] || in_dims[i] == 1);
    s[lead + i] = in_dims[i] == 1 ? 0 : in_strides[i];
  }
  return s;
}

MultiIndex::MultiIndex(std::vector<int64_t> out_dims, std::vector<std::vector<int64_t>> strides)
    : dims_(std::move(out_dims)),
      strides_(std::move(strides)),
      index_(dims_.size(), 0),
      offsets_(strides_.size(), 0) {
  for (const auto& s : strides_) GF_ASSERT(s.size() == dims_.size());
}

void MultiIndex::next() {
  for (size_t d = dims_.size(); d-- > 0;) {
    if (++index_[d] < dims_[d]) {
      for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
      return;
    }
    index_[d] = 0;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * (dims_[d] - 1);
  }
}

}  // namespace gf::ref
