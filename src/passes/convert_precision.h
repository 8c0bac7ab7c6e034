// Mixed precision for GPU sessions: f32 compute turned into f16 or bf16. The graph's inputs and
// outputs keep f32 (Casts at the boundary), float constants read by converted ops are stored
// converted, and every op computes in the target type except those kept in f32:
//   - sums and products over many elements and their relatives (ReduceSum, ReduceProd,
//     ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, CumSum), Exp and Pow:
//     their results leave f16's range (65504) on ordinary data;
//   - Cast to anything but f32 (an f32 index or count rounded to 16 bits first would change);
//     a Cast to f32 becomes a Cast to the target;
//   - shape producers with value attributes (ConstantOfShape, Range).
// Where a kept op meets a converted one, a Cast joins them. Normalizations and softmax are
// converted: their kernels accumulate in f32 whatever the storage type.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "graphfuse/graph.h"

namespace gf {

// Constants already converted, by their host bytes: the programs a session compiles for
// different input shapes then share one converted copy of each weight (and its device copy,
// which is keyed by host bytes too). An entry lives while both its source and its result are
// held elsewhere. Thread-safe.
class ConvertedConstants {
 public:
  Tensor convert(const Tensor& t, DType target);

 private:
  struct Entry {
    std::weak_ptr<void> source;  // while it lives, the key's address is still its bytes
    std::weak_ptr<void> result;
    void* result_data = nullptr;
  };
  std::mutex mutex_;
  std::map<std::tuple<const void*, size_t, DType>, Entry> entries_;
};

// Ops convert_precision leaves in f32.
bool keeps_f32(const Node& node);

// `target` is kF16 or kBF16 (kInvalidArgument otherwise). Rebuilds `g` (names kept; converted
// constants and boundary Casts get new names) and re-infers its types. Returns the number of
// nodes that now compute in `target`. Constants are converted through `memo` when given.
int convert_precision(Graph& g, DType target, ConvertedConstants* memo = nullptr);

}  // namespace gf
