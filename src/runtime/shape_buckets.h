// Shape buckets (SessionOptions::shape_buckets): a run whose symbolic dim `d` is n runs the
// program compiled for the smallest bucket size >= n, so a few programs serve many sizes. Inputs
// are zero-padded along every axis declared `d`; outputs are cut back along every axis whose
// inferred dim is `d`. Sizes above the largest bucket run unpadded.
//
// Correct only where positions along `d` do not affect one another (a batch), or only affect
// later ones (the sequence of a causal decoder): padding adds zeros (token id 0, false) at the
// end, and whatever reads across the whole of `d` (a reduction over it, non-causal attention)
// would see them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

class ShapeBuckets {
 public:
  ShapeBuckets() = default;
  // `g` shape-inferred. Throws kInvalidArgument for a dim no input declares, or sizes that are
  // empty, not positive or not ascending.
  ShapeBuckets(const Graph& g, const std::map<std::string, std::vector<int64_t>>& sizes);

  bool empty() const { return dims_.empty(); }

  // Pads `inputs` (already checked against the graph) up to their buckets and returns each
  // bucketed dim's size before padding; returns {} and leaves `inputs` alone when no dim grows.
  std::vector<int64_t> pad(std::vector<Tensor>& inputs) const;
  // Cuts the outputs of a padded run back to `actual` (what pad() returned).
  void cut(std::vector<Tensor>& outputs, const std::vector<int64_t>& actual) const;

 private:
  struct BucketedDim {
    std::string name;
    std::vector<int64_t> sizes;  // ascending
    std::vector<std::pair<size_t, size_t>> input_axes, output_axes;  // (input/output index, axis)
  };
  std::vector<BucketedDim> dims_;
};

// `t` with axis `axis` resized to `size`: cut, or padded with zeros at the end.
Tensor resize_axis(const Tensor& t, size_t axis, int64_t size);

}  // namespace gf
