// Building graphs from C++: each added node is type-checked at once, so a mistake surfaces at the
// line that made it, with the node, op and shapes in the message.
//
// Thread safety: one GraphBuilder is used by one thread at a time; builders on different threads
// are independent.
#pragma once

#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string model_name = "model");

  ValueId input(const std::string& name, DType dtype, Shape shape);
  ValueId constant(const std::string& name, Tensor data);
  // A 1-D i64 constant, the form shape/axes/pads inputs take.
  ValueId constant_ints(const std::vector<int64_t>& values, const std::string& name = "");
  ValueId constant_scalar(float value, DType dtype, const std::string& name = "");

  // Adds any op of the op table; returns its outputs (typed by shape inference).
  std::vector<ValueId> op(Op op, std::vector<ValueId> inputs, Attributes attrs = {},
                          int num_outputs = 1, const std::string& name = "");
  // The same for single-output ops.
  ValueId op1(Op op, std::vector<ValueId> inputs, Attributes attrs = {},
              const std::string& name = "");

  // Conveniences for the common cases.
  ValueId unary(Op op, ValueId x) { return op1(op, {x}); }
  ValueId binary(Op op, ValueId a, ValueId b) { return op1(op, {a, b}); }
  ValueId add(ValueId a, ValueId b) { return binary(Op::kAdd, a, b); }
  ValueId mul(ValueId a, ValueId b) { return binary(Op::kMul, a, b); }
  ValueId matmul(ValueId a, ValueId b) { return binary(Op::kMatMul, a, b); }
  ValueId reshape(ValueId x, const std::vector<int64_t>& shape);
  ValueId transpose(ValueId x, const std::vector<int64_t>& perm);
  ValueId softmax(ValueId x, int64_t axis = -1);
  ValueId layer_norm(ValueId x, ValueId scale, ValueId bias, int64_t axis = -1,
                     float epsilon = 1e-5f);
  ValueId gelu(ValueId x, bool tanh_approximation = false);
  ValueId cast(ValueId x, DType to);
  ValueId reduce(Op op, ValueId x, const std::vector<int64_t>& axes, bool keepdims = true);
  // Fused attention over [batch, heads, seq, head_dim] tensors; k and v may have fewer heads
  // (grouped/multi-query), which must divide q's. scale 0 means 1/sqrt(head_dim).
  ValueId attention(ValueId q, ValueId k, ValueId v, ValueId mask = kNoValue,
                    bool causal = false, float scale = 0.0f);

  void output(ValueId v, const std::string& name = "");

  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId v) const { return graph_.value(v).type; }
  // Verifies and hands over the graph; the builder is empty afterwards.
  Graph build();

 private:
  Graph graph_;
  int next_id_ = 0;
};

}  // namespace gf
