#include "fusion/kernel_ir.h"

#include <sstream>

namespace gf::fusion {

namespace {
int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string_view index_op_name(IndexOp op) {
  switch (op) {
    case IndexOp::kAdd: return "+";
    case IndexOp::kSub: return "-";
    case IndexOp::kMul: return "*";
    case IndexOp::kDiv: return "/";
    case IndexOp::kMod: return "%";
    case IndexOp::kMin: return "min";
    case IndexOp::kMax: return "max";
    case IndexOp::kLess: return "<";
    case IndexOp::kLessEq: return "<=";
    case IndexOp::kEqual: return "==";
    case IndexOp::kAnd: return "&&";
  }
  return "?";
}

std::string_view reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::kSum: return "sum";
    case ReduceKind::kMax: return "max";
    case ReduceKind::kMin: return "min";
    case ReduceKind::kProd: return "prod";
  }
  return "?";
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}
}  // namespace

int64_t FusedKernel::outer_size() const { return product(outer_dims); }
int64_t FusedKernel::inner_size() const { return inner_dims.empty() ? 1 : product(inner_dims); }

std::string kernel_to_string(const FusedKernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << " outer" << dims_string(k.outer_dims) << " inner"
     << dims_string(k.inner_dims) << "  // " << k.comment << "\n";
  for (size_t b = 0; b < k.buffers.size(); ++b) {
    const KernelBuffer& buf = k.buffers[b];
    os << "  buf" << b << (buf.is_output ? " out " : " in  ") << buf.name << ": "
       << dtype_name(buf.dtype) << dims_string(buf.dims) << "\n";
  }
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    os << "  e" << i << ": " << dtype_name(e.dtype) << " = ";
    auto arg = [&](size_t j) { return "e" + std::to_string(e.args[j]); };
    switch (e.kind) {
      case ExprKind::kOuterIndex: os << "outer" << e.axis; break;
      case ExprKind::kInnerIndex: os << "inner" << e.axis; break;
      case ExprKind::kRowValue: os << "row" << e.axis; break;
      case ExprKind::kConstant: os << e.constant; break;
      case ExprKind::kLoad: os << "buf" << e.buffer << "[" << arg(0) << "]"; break;
      case ExprKind::kCast: os << "cast(" << arg(0) << ")"; break;
      case ExprKind::kSelect: os << arg(0) << " ? " << arg(1) << " : " << arg(2); break;
      case ExprKind::kIndex: os << index_op_name(e.index_op) << "(" << arg(0) << ", " << arg(1) << ")"; break;
      case ExprKind::kOp:
        os << op_name(e.op) << "(";
        for (size_t j = 0; j < e.args.size(); ++j) os << (j ? ", " : "") << arg(j);
        os << ")";
        break;
    }
    os << "\n";
  }
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    const RowReduction& red = k.reductions[r];
    os << "  row" << r << " = " << reduce_name(red.kind) << "<" << dtype_name(red.accumulate)
       << "> over inner of e" << red.value << "\n";
  }
  for (const Store& s : k.stores) {
    os << "  buf" << s.buffer << "[e" << s.index << "] = e" << s.value
       << (s.per_inner ? "  (per inner)" : "") << "\n";
  }
  return os.str();
}

}  // namespace gf::fusion
