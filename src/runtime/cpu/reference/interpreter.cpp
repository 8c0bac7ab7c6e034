#include "runtime/cpu/reference/interpreter.h"

#include <algorithm>
#include <string_view>

#include "ir/infer.h"
#include "runtime/cpu/reference/kernels.h"

namespace gf::ref {

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t{};
    register_elementwise_kernels(t);
    register_reduction_kernels(t);
    register_layout_kernels(t);
    register_linear_kernels(t);
    return t;
  }();
  return table;
}

void kernel_fail(const KernelArgs& args, const std::string& msg, ErrorCode code) {
  std::string s = "node '" + args.node.name + "' (" + std::string(op_name(args.node.op)) +
                  ") with inputs [";
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    s += (i ? ", " : "") + (args.inputs[i].defined() ? args.inputs[i].type_string() : "<none>");
  }
  throw Error(code, s + "]: " + msg);
}

void HostMemoryBudget::release(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  in_use_ -= bytes;
}

uint64_t HostMemoryBudget::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

uint64_t HostMemoryBudget::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void HostMemoryBudget::reserve_bytes(uint64_t bytes, const std::string& what) {
  std::lock_guard lock(mutex_);
  if (in_use_ + bytes > limit_ || in_use_ + bytes < in_use_) {
    throw Error(ErrorCode::kOutOfMemory, what + " needs " + std::to_string(bytes) +
                                             " bytes, over the host memory limit of " +
                                             std::to_string(limit_) + " bytes (" +
                                             std::to_string(in_use_) + " in use)");
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
}

uint64_t HostMemoryBudget::reserve(const Node& node, const std::vector<TensorType>& outputs) {
  std::lock_guard lock(mutex_);
  uint64_t bytes = 0;
  for (const TensorType& t : outputs) {
    const int64_t n = checked_numel(t.shape.static_dims());
    const auto b = static_cast<uint64_t>(n) * dtype_size(t.dtype);
    if (b / dtype_size(t.dtype) != static_cast<uint64_t>(n) || bytes + b < bytes ||
        in_use_ + bytes + b > limit_) {
      throw Error(ErrorCode::kOutOfMemory,
                  "node '" + node.name + "' (" + std::string(op_name(node.op)) +
                      "): output " + t.to_string() + " needs " + std::to_string(b) +
                      " bytes, over the host memory limit of " + std::to_string(limit_) +
                      " bytes (" + std::to_string(in_use_ + bytes) + " in use)");
    }
    bytes += b;
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return bytes;
}

namespace {

// What one run holds of a budget; whatever is still held is returned on every exit path.
class BudgetLease {
 public:
  explicit BudgetLease(HostMemoryBudget* budget) : budget_(budget) {}
  BudgetLease(const BudgetLease&) = delete;
  BudgetLease& operator=(const BudgetLease&) = delete;
  ~BudgetLease() {
    if (budget_ != nullptr) budget_->release(held_);
  }
  void take(const Node& node, const std::vector<TensorType>& outputs) {
    if (budget_ != nullptr) held_ += budget_->reserve(node, outputs);
  }
  void give_back(uint64_t bytes) {
    if (budget_ == nullptr) return;
    budget_->release(bytes);
    held_ -= bytes;
  }

 private:
  HostMemoryBudget* budget_;
  uint64_t held_ = 0;
};

std::vector<Tensor> execute_node(const Node& node, std::span<const Tensor> inputs,
                                 BudgetLease* lease) {

  std::vector<TensorType> in_types(inputs.size());
  std::vector<const TensorType*> type_ptrs(inputs.size(), nullptr);
  std::vector<const Tensor*> value_ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    in_types[i] = TensorType{inputs[i].dtype(), Shape::from_static(inputs[i].dims())};
    type_ptrs[i] = &in_types[i];
    value_ptrs[i] = &inputs[i];
  }
  std::vector<TensorType> out_types = infer_node(node, type_ptrs, value_ptrs);
  for (const TensorType& t : out_types) {
    GF_ASSERT(t.shape.is_static(), "inference left a dynamic shape with all inputs known");
  }
  if (lease != nullptr) lease->take(node, out_types);
  std::vector<Tensor> outputs;
  outputs.reserve(out_types.size());
  for (const TensorType& t : out_types) outputs.emplace_back(t.dtype, t.shape.static_dims());
  Kernel k = kernel_table()[static_cast<size_t>(node.op)];
  if (k == nullptr) {
    throw Error(ErrorCode::kUnsupported, "node '" + node.name + "' (" +
                                             std::string(op_name(node.op)) +
                                             "): the reference interpreter has no kernel");
  }
  const KernelArgs args{node, inputs, outputs};
  try {
    k(args);
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("node '")) throw;
    kernel_fail(args, e.what(), e.code());
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> run_node(const Node& node, std::span<const Tensor> inputs) {
  return execute_node(node, inputs, nullptr);
}

std::vector<Tensor> run_graph(const Graph& g, std::span<const Tensor> inputs,
                              HostMemoryBudget* budget) {
  if (inputs.size() != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "graph takes " + std::to_string(g.inputs().size()) +
                                                 " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<Tensor> env(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(g.inputs()[i])] = inputs[i];
  for (size_t v = 0; v < g.num_values(); ++v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (val.is_constant()) env[v] = val.constant;
  }
  // Free each intermediate after its last use so peak memory follows liveness.
  std::vector<int> uses(g.num_values(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++uses[static_cast<size_t>(v)];
  for (ValueId v : g.outputs()) ++uses[static_cast<size_t>(v)];

  // Only node outputs count against the budget; inputs and constants belong to the caller.
  BudgetLease lease(budget);
  auto release = [&](size_t v) {
    const Value& val = g.value(static_cast<ValueId>(v));
    if (val.producer == kNoNode) return;
    lease.give_back(env[v].nbytes());
    env[v] = Tensor();
  };
  std::vector<Tensor> args;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    args.clear();
    for (ValueId v : n.inputs) args.push_back(v == kNoValue ? Tensor() : env[static_cast<size_t>(v)]);
    std::vector<Tensor> outs = execute_node(n, args, &lease);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const auto v = static_cast<size_t>(n.outputs[i]);
      env[v] = std::move(outs[i]);
      if (uses[v] == 0) release(v);  // an output nothing reads
    }
    for (ValueId v : n.inputs) {
      if (v != kNoValue && --uses[static_cast<size_t>(v)] == 0) release(static_cast<size_t>(v));
    }
  }
  std::vector<Tensor> result;
  for (ValueId v : g.outputs()) result.push_back(env[static_cast<size_t>(v)]);
  return result;
}

}  // namespace gf::ref
