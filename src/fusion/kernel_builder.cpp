#include "fusion/kernel_builder.h"

#include <algorithm>

namespace gf::fusion {

namespace {
Expr make(ExprKind kind, DType dtype) {
  Expr e{};
  e.kind = kind;
  e.dtype = dtype;
  return e;
}
}  // namespace

ExprId KernelBuilder::add(Expr e) {
  auto key = std::make_tuple(static_cast<int>(e.kind), static_cast<int>(e.dtype),
                             static_cast<int>(e.op), static_cast<int>(e.index_op), e.axis, e.buffer,
                             0, e.constant, e.args, static_cast<int>(e.node));
  auto it = seen_.find(key);
  if (it != seen_.end()) return it->second;
  const auto id = static_cast<ExprId>(k_.exprs.size());
  k_.exprs.push_back(std::move(e));
  seen_.emplace(std::move(key), id);
  return id;
}

ExprId KernelBuilder::outer(int axis) {
  // A loop of extent 1 only ever sees 0.
  if (k_.outer_dims[static_cast<size_t>(axis)] == 1) return index_constant(0);
  Expr e = make(ExprKind::kOuterIndex, DType::kI64);
  e.axis = axis;
  return add(std::move(e));
}

ExprId KernelBuilder::inner(int axis) {
  if (k_.inner_dims[static_cast<size_t>(axis)] == 1) return index_constant(0);
  Expr e = make(ExprKind::kInnerIndex, DType::kI64);
  e.axis = axis;
  return add(std::move(e));
}

ExprId KernelBuilder::row(int index, DType dtype) {
  Expr e = make(ExprKind::kRowValue, dtype);
  e.axis = index;
  return add(std::move(e));
}

ExprId KernelBuilder::constant(double value, DType dtype) {
  Expr e = make(ExprKind::kConstant, dtype);
  e.constant = value;
  return add(std::move(e));
}

bool KernelBuilder::constant_value(ExprId e, int64_t& out) const {
  const Expr& x = k_.exprs[static_cast<size_t>(e)];
  if (x.kind != ExprKind::kConstant || x.dtype != DType::kI64) return false;
  out = static_cast<int64_t>(x.constant);
  return true;
}

ExprId KernelBuilder::index(IndexOp op, ExprId a, ExprId b) {
  int64_t x = 0, y = 0;
  const bool ca = constant_value(a, x), cb = constant_value(b, y);
  if (ca && cb) {
    switch (op) {
      case IndexOp::kAdd: return index_constant(x + y);
      case IndexOp::kSub: return index_constant(x - y);
      case IndexOp::kMul: return index_constant(x * y);
      case IndexOp::kDiv: if (y != 0) return index_constant(x / y); break;
      case IndexOp::kMod: if (y != 0) return index_constant(x % y); break;
      case IndexOp::kMin: return index_constant(std::min(x, y));
      case IndexOp::kMax: return index_constant(std::max(x, y));
      default: break;
    }
  }
  switch (op) {
    case IndexOp::kAdd:
      if (ca && x == 0) return b;
      if (cb && y == 0) return a;
      break;
    case IndexOp::kSub:
      if (cb && y == 0) return a;
      break;
    case IndexOp::kMul:
      if ((ca && x == 0) || (cb && y == 0)) return index_constant(0);
      if (ca && x == 1) return b;
      if (cb && y == 1) return a;
      break;
    case IndexOp::kDiv:
      if (cb && y == 1) return a;
      if (ca && x == 0) return index_constant(0);
      break;
    case IndexOp::kMod:
      if (cb && y == 1) return index_constant(0);
      break;
    default: break;
  }
  DType t = (op == IndexOp::kLess || op == IndexOp::kLessEq || op == IndexOp::kEqual ||
             op == IndexOp::kAnd)
                ? DType::kBool
                : DType::kI64;
  Expr e = make(ExprKind::kIndex, t);
  e.index_op = op;
  e.args = {a, b};
  return add(std::move(e));
}

ExprId KernelBuilder::load(int buffer, ExprId linear_index) {
  Expr e = make(ExprKind::kLoad, k_.buffers[static_cast<size_t>(buffer)].dtype);
  e.buffer = buffer;
  e.args = {linear_index};
  return add(std::move(e));
}

ExprId KernelBuilder::op(Op o, DType dtype, std::vector<ExprId> args, NodeId node) {
  Expr e = make(ExprKind::kOp, dtype);
  e.op = o;
  e.args = std::move(args);
  e.node = node;
  return add(std::move(e));
}

ExprId KernelBuilder::cast(ExprId x, DType dtype) {
  if (this->dtype(x) == dtype) return x;
  Expr e = make(ExprKind::kCast, dtype);
  e.args = {x};
  return add(std::move(e));
}

ExprId KernelBuilder::select(ExprId cond, ExprId a, ExprId b) {
  if (a == b) return a;
  Expr e = make(ExprKind::kSelect, dtype(a));
  e.args = {cond, a, b};
  return add(std::move(e));
}

ExprId KernelBuilder::linearize(const std::vector<ExprId>& idx, const std::vector<int64_t>& dims) {
  if (auto it = delinearized_.find({idx, dims}); it != delinearized_.end()) return it->second;
  ExprId lin = index_constant(0);
  for (size_t d = 0; d < dims.size(); ++d) {
    lin = index(IndexOp::kAdd, index(IndexOp::kMul, lin, index_constant(dims[d])), idx[d]);
  }
  return lin;
}

std::vector<ExprId> KernelBuilder::delinearize(ExprId linear, const std::vector<int64_t>& dims) {
  std::vector<ExprId> out(dims.size());
  int64_t stride = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    ExprId q = index(IndexOp::kDiv, linear, index_constant(stride));
    out[d] = d == 0 ? q : index(IndexOp::kMod, q, index_constant(dims[d]));
    stride *= dims[d];
  }
  if (!dims.empty()) delinearized_.emplace(std::pair{out, dims}, linear);
  return out;
}

std::vector<ExprId> KernelBuilder::broadcast_index(const std::vector<ExprId>& idx,
                                                   const std::vector<int64_t>& to,
                                                   const std::vector<int64_t>& from) {
  std::vector<ExprId> out(from.size());
  const size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) {
    out[d] = from[d] == 1 ? index_constant(0) : idx[lead + d];
  }
  return out;
}

}  // namespace gf::fusion
