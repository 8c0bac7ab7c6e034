// The reference interpreter: runs a graph one op at a time on the CPU. It is the test oracle.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "graphfuse/graph.h"

namespace gf::ref {

// Counts the bytes of the intermediates that runs hold, and refuses an allocation that would
// pass the limit before it is made (kOutOfMemory naming the node and the tensor). One budget
// may be shared by concurrent runs.
class HostMemoryBudget {
 public:
  explicit HostMemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}
  // Returns the bytes reserved for `outputs`.
  uint64_t reserve(const Node& node, const std::vector<TensorType>& outputs);
  // Reserves `bytes` for `what` (named in the error).
  void reserve_bytes(uint64_t bytes, const std::string& what);
  void release(uint64_t bytes);
  uint64_t in_use() const;
  uint64_t peak() const;
  uint64_t limit() const { return limit_; }

 private:
  const uint64_t limit_;
  mutable std::mutex mutex_;
  uint64_t in_use_ = 0;
  uint64_t peak_ = 0;
};

// Runs `g` on `inputs` (in the order of g.inputs()); returns g.outputs() in order. Shapes are
// inferred again from the actual inputs, so symbolic dims bind at run time. Intermediates are
// freed after their last use; `budget`, when given, bounds what is live at once, and all that
// this run took of it is returned when it ends (outputs then belong to the caller).
std::vector<Tensor> run_graph(const Graph& g, std::span<const Tensor> inputs,
                              HostMemoryBudget* budget = nullptr);

// Runs a single node on the given inputs (undefined Tensor for an omitted optional input).
std::vector<Tensor> run_node(const Node& node, std::span<const Tensor> inputs);

}  // namespace gf::ref
