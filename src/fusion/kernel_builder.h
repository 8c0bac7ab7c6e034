// Builds a FusedKernel's expression DAG: hash-consed (each distinct expression once) with
// integer index arithmetic folded where its operands are known.
#pragma once

#include <map>
#include <tuple>
#include <vector>

#include "fusion/kernel_ir.h"

namespace gf::fusion {

class KernelBuilder {
 public:
  explicit KernelBuilder(FusedKernel& kernel) : k_(kernel) {}

  ExprId outer(int axis);
  ExprId inner(int axis);
  ExprId row(int index, DType dtype);
  ExprId constant(double value, DType dtype);
  ExprId index_constant(int64_t value) { return constant(static_cast<double>(value), DType::kI64); }
  ExprId index(IndexOp op, ExprId a, ExprId b);
  ExprId load(int buffer, ExprId linear_index);
  ExprId op(Op op, DType dtype, std::vector<ExprId> args, NodeId node = kNoNode);
  ExprId cast(ExprId x, DType dtype);
  ExprId select(ExprId cond, ExprId a, ExprId b);

  DType dtype(ExprId e) const { return k_.exprs[static_cast<size_t>(e)].dtype; }
  // The value of an integer expression when it is a constant.
  bool constant_value(ExprId e, int64_t& out) const;

  // Row-major index helpers over static dims. linearize(delinearize(l, dims), dims) is l itself
  // (an identity for every integer l under C division), so a chain of reshapes leaves a plain
  // index that the C compiler can vectorise over, not a ladder of divisions.
  ExprId linearize(const std::vector<ExprId>& idx, const std::vector<int64_t>& dims);
  std::vector<ExprId> delinearize(ExprId linear, const std::vector<int64_t>& dims);
  // Numpy broadcasting read: the index into `from` dims for an output index over `to` dims.
  std::vector<ExprId> broadcast_index(const std::vector<ExprId>& index,
                                      const std::vector<int64_t>& to,
                                      const std::vector<int64_t>& from);

 private:
  ExprId add(Expr e);

  FusedKernel& k_;
  std::map<std::tuple<int, int, int, int, int, int, int, double, std::vector<ExprId>, int>, ExprId>
      seen_;
  // delinearize's results: (index, dims) -> the linear index they came from.
  std::map<std::pair<std::vector<ExprId>, std::vector<int64_t>>, ExprId> delinearized_;
};

}  // namespace gf::fusion
