#include "runtime/shape_buckets.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace gf {

namespace {

// Axes of `values` declared with symbolic dim `name`, as (index in `values`, axis).
std::vector<std::pair<size_t, size_t>> axes_named(const Graph& g, const std::vector<ValueId>& values,
                                                  const std::string& name) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const Shape& s = g.value(values[i]).type.shape;
    for (size_t a = 0; a < s.rank(); ++a)
      if (s[a].is_symbolic() && s[a].symbol() == name) out.emplace_back(i, a);
  }
  return out;
}

std::string symbolic_dims_of_inputs(const Graph& g) {
  std::set<std::string> names;
  for (ValueId v : g.inputs())
    for (const Dim& d : g.value(v).type.shape)
      if (d.is_symbolic()) names.insert(d.symbol());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out.empty() ? "none" : out;
}

}  // namespace

ShapeBuckets::ShapeBuckets(const Graph& g, const std::map<std::string, std::vector<int64_t>>& sizes) {
  for (const auto& [name, bucket_sizes] : sizes) {
    const std::string what = "shape_buckets['" + name + "']";
    BucketedDim d{name, bucket_sizes, axes_named(g, g.inputs(), name), axes_named(g, g.outputs(), name)};
    if (d.input_axes.empty()) {
      throw Error(ErrorCode::kInvalidArgument, what + ": no input of '" + g.name +
                                                   "' has a dim named '" + name +
                                                   "' (its inputs' symbolic dims: " +
                                                   symbolic_dims_of_inputs(g) + ")");
    }
    if (bucket_sizes.empty()) throw Error(ErrorCode::kInvalidArgument, what + " lists no sizes");
    for (size_t i = 0; i < bucket_sizes.size(); ++i) {
      if (bucket_sizes[i] < 1 || (i > 0 && bucket_sizes[i] <= bucket_sizes[i - 1])) {
        throw Error(ErrorCode::kInvalidArgument,
                    what + ": sizes must be positive and strictly ascending, got " +
                        std::to_string(bucket_sizes[i]) + " at position " + std::to_string(i));
      }
    }
    dims_.push_back(std::move(d));
  }
}

std::vector<int64_t> ShapeBuckets::pad(std::vector<Tensor>& inputs) const {
  std::vector<int64_t> actual, target;
  bool grows = false;
  for (const BucketedDim& d : dims_) {
    const auto [input, axis] = d.input_axes.front();
    const int64_t n = inputs[input].dims()[axis];
    auto it = std::lower_bound(d.sizes.begin(), d.sizes.end(), n);
    const int64_t to = it == d.sizes.end() ? n : *it;  // above the largest bucket: unpadded
    actual.push_back(n);
    target.push_back(to);
    grows = grows || to != n;
  }
  if (!grows) return {};
  for (size_t k = 0; k < dims_.size(); ++k) {
    if (target[k] == actual[k]) continue;
    for (const auto& [input, axis] : dims_[k].input_axes)
      inputs[input] = resize_axis(inputs[input], axis, target[k]);
  }
  return actual;
}

void ShapeBuckets::cut(std::vector<Tensor>& outputs, const std::vector<int64_t>& actual) const {
  for (size_t k = 0; k < dims_.size(); ++k) {
    for (const auto& [output, axis] : dims_[k].output_axes) {
      if (outputs[output].dims()[axis] > actual[k])
        outputs[output] = resize_axis(outputs[output], axis, actual[k]);
    }
  }
}

Tensor resize_axis(const Tensor& t, size_t axis, int64_t size) {
  GF_ASSERT(axis < t.rank() && size >= 0);
  std::vector<int64_t> dims = t.dims();
  const int64_t from = dims[axis];
  dims[axis] = size;
  Tensor out(t.dtype(), dims);  // zero-filled
  size_t outer = 1, inner = dtype_size(t.dtype());
  for (size_t a = 0; a < axis; ++a) outer *= static_cast<size_t>(dims[a]);
  for (size_t a = axis + 1; a < dims.size(); ++a) inner *= static_cast<size_t>(dims[a]);
  const size_t keep = static_cast<size_t>(std::min(from, size)) * inner;
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(out.raw());
  if (keep == 0) return out;
  for (size_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * static_cast<size_t>(size) * inner, src + o * static_cast<size_t>(from) * inner, keep);
  }
  return out;
}

}  // namespace gf
