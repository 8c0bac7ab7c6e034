#include "ir/infer.h"

#include <optional>
#include <string_view>

namespace gf {

InferContext::InferContext(const Node& node, std::span<const TensorType* const> types,
                           std::span<const Tensor* const> values)
    : node_(node), types_(types), values_(values) {}

bool InferContext::has_input(int i) const {
  return i >= 0 && i < num_inputs() && types_[static_cast<size_t>(i)] != nullptr;
}

const TensorType& InferContext::input(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required", ErrorCode::kInvalidGraph);
  return *types_[static_cast<size_t>(i)];
}

const Tensor* InferContext::value(int i) const {
  if (!has_input(i) || static_cast<size_t>(i) >= values_.size()) return nullptr;
  return values_[static_cast<size_t>(i)];
}

std::string InferContext::describe() const {
  std::string s = "node '" + node_.name + "' (" + std::string(op_name(node_.op)) +
                  ") with inputs [";
  for (int i = 0; i < num_inputs(); ++i) {
    if (i) s += ", ";
    s += has_input(i) ? types_[static_cast<size_t>(i)]->to_string() : "<none>";
  }
  return s + "]";
}

void InferContext::fail(const std::string& msg, ErrorCode code) const {
  throw Error(code, describe() + ": " + msg);
}

void InferContext::expect_dtype(int i, std::initializer_list<DType> allowed) const {
  const DType t = dtype(i);
  std::string names;
  for (DType a : allowed) {
    if (a == t) return;
    names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
  }
  fail("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(t)) +
           "; expected one of " + names,
       ErrorCode::kShapeMismatch);
}

void InferContext::expect_float(int i) const {
  if (!is_floating(dtype(i))) {
    fail("input " + std::to_string(i) + " must be a float type, got " +
         std::string(dtype_name(dtype(i))));
  }
}

void InferContext::expect_same_dtype(int a, int b) const {
  if (dtype(a) != dtype(b)) {
    fail("inputs " + std::to_string(a) + " and " + std::to_string(b) +
         " must have the same dtype, got " + std::string(dtype_name(dtype(a))) + " and " +
         std::string(dtype_name(dtype(b))));
  }
}

void InferContext::expect_rank(int i, size_t r) const {
  if (rank(i) != r) {
    fail("input " + std::to_string(i) + " must have rank " + std::to_string(r) + ", got " +
         std::to_string(rank(i)));
  }
}

int64_t InferContext::normalize_axis(int64_t axis, int64_t r, const char* what) const {
  if (axis < -r || axis >= r) {
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(r),
         ErrorCode::kInvalidGraph);
  }
  return axis < 0 ? axis + r : axis;
}

Shape InferContext::broadcast(const Shape& a, const Shape& b) const {
  const size_t r = std::max(a.rank(), b.rank());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const bool has_a = i + a.rank() >= r, has_b = i + b.rank() >= r;
    const Dim da = has_a ? a[i + a.rank() - r] : Dim(1);
    const Dim db = has_b ? b[i + b.rank() - r] : Dim(1);
    if (da.is_static() && da.value() == 1) {
      out[i] = db;
    } else if (db.is_static() && db.value() == 1) {
      out[i] = da;
    } else if (da.is_static() && db.is_static()) {
      if (da.value() != db.value()) {
        fail("cannot broadcast " + a.to_string() + " with " + b.to_string());
      }
      out[i] = da;
    } else if (da == db) {
      out[i] = da;
    } else {
      // One side unknown/symbolic: a concrete side (not 1) decides; two different symbols stay
      // unknown until shapes are bound.
      out[i] = da.is_static() ? da : db.is_static() ? db : Dim::unknown();
    }
  }
  return Shape(std::move(out));
}

std::optional<std::vector<int64_t>> InferContext::int_values(int i) const {
  const Tensor* t = value(i);
  if (t == nullptr) return std::nullopt;
  if (!is_integer(t->dtype())) {
    fail("input " + std::to_string(i) + " must be an integer tensor, got " + t->type_string());
  }
  return t->to_int_vector();
}

const InferTable& infer_table() {
  static const InferTable table = [] {
    InferTable t{};
    register_elementwise_infer(t);
    register_reduction_infer(t);
    register_layout_infer(t);
    register_linear_infer(t);
    return t;
  }();
  return table;
}

std::vector<TensorType> infer_node(const Node& node, std::span<const TensorType* const> types,
                                   std::span<const Tensor* const> values) {
  InferContext ctx(node, types, values);
  InferFn fn = infer_table()[static_cast<size_t>(node.op)];
  if (fn == nullptr) ctx.fail("no shape inference for this op", ErrorCode::kUnsupported);
  std::vector<TensorType> out;
  try {
    out = fn(ctx);
  } catch (const Error& e) {
    // Errors raised below the op's own checks (a wrong-kind attribute, say) get the node named.
    if (std::string_view(e.what()).starts_with("node '")) throw;
    throw Error(e.code(), ctx.describe() + ": " + e.what());
  }
  if (out.size() < node.outputs.size()) {
    ctx.fail("inference gave " + std::to_string(out.size()) + " outputs for " +
                 std::to_string(node.outputs.size()),
             ErrorCode::kInvalidGraph);
  }
  out.resize(node.outputs.size());
  return out;
}

void infer_shapes(Graph& g) {
  verify_graph(g);
  std::vector<const TensorType*> types;
  std::vector<const Tensor*> values;
  for (NodeId id : g.topological_order()) {
    Node& n = g.node(id);
    types.clear();
    values.clear();
    for (ValueId v : n.inputs) {
      types.push_back(v == kNoValue ? nullptr : &g.value(v).type);
      values.push_back(v != kNoValue && g.value(v).is_constant() ? &g.value(v).constant
                                                                  : nullptr);
    }
    std::vector<TensorType> out = infer_node(n, types, values);
    for (size_t i = 0; i < n.outputs.size(); ++i) g.value(n.outputs[i]).type = std::move(out[i]);
  }
}

}  // namespace gf
