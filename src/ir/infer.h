// Shape and dtype inference, one function per op, registered per op family.
// The same functions serve compile time (symbolic shapes, data known only for constants) and run
// time in the reference interpreter (every input's data known, so every shape is concrete).
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

class InferContext {
 public:
  // `types[i]` / `values[i]` may be null for an omitted optional input; `values[i]` is null
  // whenever the input's data is not known.
  InferContext(const Node& node, std::span<const TensorType* const> types,
               std::span<const Tensor* const> values);

  const Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs; }
  int num_inputs() const { return static_cast<int>(types_.size()); }
  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_input(int i) const;
  const TensorType& input(int i) const;  // fails naming the input if absent
  DType dtype(int i) const { return input(i).dtype; }
  const Shape& shape(int i) const { return input(i).shape; }
  size_t rank(int i) const { return input(i).shape.rank(); }
  const Tensor* value(int i) const;  // null when absent or unknown

  // Failure with the node's name, op and input types prefixed:
  // "node 'n' (Add) with inputs [f32[2,3], f32[4]]: <msg>".
  [[noreturn]] void fail(const std::string& msg,
                         ErrorCode code = ErrorCode::kShapeMismatch) const;
  std::string describe() const;

  // Checks that are common to many ops; each fails with a clear message.
  void expect_dtype(int i, std::initializer_list<DType> allowed) const;
  void expect_float(int i) const;
  void expect_same_dtype(int a, int b) const;
  void expect_rank(int i, size_t rank) const;
  // An axis in [-rank, rank) made non-negative.
  int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") const;
  // Numpy broadcasting of two shapes (symbolic dims: equal symbols match, 1 defers to the other).
  Shape broadcast(const Shape& a, const Shape& b) const;
  // The integer contents of a constant/known 1-D input (axes, shape, pads); nullopt if unknown.
  std::optional<std::vector<int64_t>> int_values(int i) const;

 private:
  const Node& node_;
  std::span<const TensorType* const> types_;
  std::span<const Tensor* const> values_;
};

using InferFn = std::vector<TensorType> (*)(InferContext&);
using InferTable = std::array<InferFn, kNumOps>;

// The registry, filled once by the families below. Null for an op without inference.
const InferTable& infer_table();

// One registration function per op family (src/ir/infer_<family>.cpp).
void register_elementwise_infer(InferTable& table);
void register_reduction_infer(InferTable& table);
void register_layout_infer(InferTable& table);
void register_linear_infer(InferTable& table);

// Runs inference for one node. Fails if the op has no inference or the result count does not
// match the node's outputs.
std::vector<TensorType> infer_node(const Node& node, std::span<const TensorType* const> types,
                                   std::span<const Tensor* const> values);

}  // namespace gf
