// KernelExprWriter: validation of a FusedKernel and its exprs as C temporaries.
#include "codegen/common/kernel_exprs.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "codegen/common/index_analysis.h"
#include "graphfuse/error.h"

namespace gf::codegen {

using fusion::Expr;
using fusion::ExprId;
using fusion::ExprKind;
using fusion::IndexOp;
using fusion::ReduceKind;

std::string comment_safe(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  while (!s.empty() && (s.back() == '\\' || s.back() == ' ')) s.pop_back();
  return s;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

KernelExprWriter::KernelExprWriter(const fusion::FusedKernel& kernel, const Graph& graph,
                                   const Target& target, bool round_16bit_intermediates)
    : kernel_(kernel), graph_(graph), target_(target), round_16bit_(round_16bit_intermediates) {
  validate_and_analyse();
  exact_16bit_.assign(kernel_.exprs.size(), -1);
  find_results_rounded_by_store();
}

void KernelExprWriter::find_results_rounded_by_store() {
  const size_t n = kernel_.exprs.size();
  std::vector<bool> stored(n, false), read_otherwise(n, false);
  for (const Expr& e : kernel_.exprs)
    for (ExprId a : e.args) read_otherwise[static_cast<size_t>(a)] = true;
  for (const fusion::RowReduction& r : kernel_.reductions)
    read_otherwise[static_cast<size_t>(r.value)] = true;
  for (const fusion::Store& s : kernel_.stores) {
    const auto v = static_cast<size_t>(s.value);
    read_otherwise[static_cast<size_t>(s.index)] = true;
    if (kernel_.buffers[static_cast<size_t>(s.buffer)].dtype == kernel_.exprs[v].dtype) {
      stored[v] = true;
    } else {
      read_otherwise[v] = true;
    }
  }
  rounded_by_store_.assign(n, false);
  for (size_t id = 0; id < n; ++id) {
    const Expr& e = kernel_.exprs[id];
    rounded_by_store_[id] = e.kind == ExprKind::kOp && stored[id] && !read_otherwise[id] &&
                            (e.dtype == DType::kF16 || e.dtype == DType::kBF16);
  }
}

bool KernelExprWriter::rounds_per_op(ExprId id) const {
  return round_16bit_ && !rounded_by_store_[static_cast<size_t>(id)];
}

void KernelExprWriter::malformed(const std::string& why) const {
  throw Error(ErrorCode::kInvalidGraph, "fused kernel '" + kernel_.name + "': " + why);
}

void KernelExprWriter::validate_and_analyse() {
  const fusion::FusedKernel& k = kernel_;
  if (!is_c_identifier(k.name)) malformed("name is not a C identifier");
  for (int64_t d : k.outer_dims)
    if (d < 0) malformed("negative outer dim in " + dims_string(k.outer_dims));
  for (int64_t d : k.inner_dims)
    if (d < 0) malformed("negative inner dim in " + dims_string(k.inner_dims));
  const int n = static_cast<int>(k.exprs.size());
  uses_inner_.assign(k.exprs.size(), false);
  max_row_.assign(k.exprs.size(), -1);
  for (int id = 0; id < n; ++id) {
    const Expr& e = k.exprs[static_cast<size_t>(id)];
    const auto at = static_cast<size_t>(id);
    const std::string where = "expr " + std::to_string(id);
    for (ExprId a : e.args) {
      if (a < 0 || a >= id) malformed(where + " uses expr " + std::to_string(a) + " (not earlier)");
      uses_inner_[at] = uses_inner_[at] || uses_inner_[static_cast<size_t>(a)];
      max_row_[at] = std::max(max_row_[at], max_row_[static_cast<size_t>(a)]);
    }
    switch (e.kind) {
      case ExprKind::kOuterIndex:
        if (e.axis < 0 || e.axis >= static_cast<int>(k.outer_dims.size()))
          malformed(where + ": bad outer axis");
        break;
      case ExprKind::kInnerIndex:
        if (e.axis < 0 || e.axis >= static_cast<int>(k.inner_dims.size()))
          malformed(where + ": bad inner axis");
        uses_inner_[at] = true;
        break;
      case ExprKind::kRowValue:
        if (e.axis < 0 || e.axis >= static_cast<int>(k.reductions.size()))
          malformed(where + ": bad row value");
        max_row_[at] = e.axis;
        break;
      case ExprKind::kLoad:
        if (e.buffer < 0 || e.buffer >= static_cast<int>(k.buffers.size()) || e.args.size() != 1)
          malformed(where + ": bad load");
        break;
      case ExprKind::kCast:
      case ExprKind::kSelect:
        if (e.args.size() != (e.kind == ExprKind::kCast ? 1u : 3u))
          malformed(where + ": bad arity");
        break;
      case ExprKind::kIndex:
        if (e.args.size() != 2) malformed(where + ": index op needs 2 args");
        break;
      case ExprKind::kConstant:
      case ExprKind::kOp:
        break;
    }
  }
  for (size_t r = 0; r < k.reductions.size(); ++r) {
    const ExprId v = k.reductions[r].value;
    if (v < 0 || v >= n) malformed("reduction " + std::to_string(r) + ": bad value expr");
    if (max_row_[static_cast<size_t>(v)] >= static_cast<int>(r))
      malformed("reduction " + std::to_string(r) + " reads its own or a later row value");
    if (k.reductions[r].accumulate == DType::kBool) {
      throw Error(ErrorCode::kUnsupported,
                  "fused kernel '" + k.name + "' (" + target_.name + "): bool accumulator");
    }
  }
  for (const fusion::Store& s : k.stores) {
    if (s.buffer < 0 || s.buffer >= static_cast<int>(k.buffers.size()) ||
        !k.buffers[static_cast<size_t>(s.buffer)].is_output) {
      malformed("store to buffer " + std::to_string(s.buffer) + ", not an output");
    }
    if (s.index < 0 || s.index >= n || s.value < 0 || s.value >= n) malformed("bad store exprs");
    if (!s.per_inner && (uses_inner(s.index) || uses_inner(s.value)))
      malformed("a per-outer store uses an inner index");
  }
}

void KernelExprWriter::set_index32(bool on) {
  index32_ = on;
  narrow_.assign(kernel_.exprs.size(), false);
  if (!on) return;
  if (!fits_32bit_indexing(kernel_)) {
    throw Error(ErrorCode::kInvalidArgument,
                "fused kernel '" + kernel_.name + "': too large for 32-bit indexing");
  }
  const auto ranges = index_ranges(kernel_);
  for (size_t id = 0; id < ranges.size(); ++id) {
    const Expr& e = kernel_.exprs[id];
    narrow_[id] = ranges[id] && e.dtype == DType::kI64 && ranges[id]->lo >= INT32_MIN &&
                  ranges[id]->hi <= INT32_MAX;
    // Index arithmetic is narrowed only over narrowed operands (no silent truncation).
    for (ExprId a : e.args)
      if (e.kind != ExprKind::kSelect || a != e.args[0])
        narrow_[id] = narrow_[id] && narrow_[static_cast<size_t>(a)];
  }
}

std::string KernelExprWriter::as_type(ExprId id, DType t) const {
  if (index32_ && narrow_[static_cast<size_t>(id)])
    return emit_cast(target_, DType::kI64, t, "(int64_t)" + tmp(id));
  return emit_cast(target_, expr(id).dtype, t, tmp(id));
}

std::string KernelExprWriter::index_ref(ExprId id) const {
  return index32_ && narrow_[static_cast<size_t>(id)] ? tmp(id) : as_type(id, DType::kI64);
}

std::string KernelExprWriter::index_value(ExprId id) const {
  const Expr& e = expr(id);
  // Narrowed operands stay 32-bit where the result is narrowed too, or is a comparison of two.
  const bool narrow_args = index32_ && narrow_[static_cast<size_t>(e.args[0])] &&
                           narrow_[static_cast<size_t>(e.args[1])];
  const bool narrow = narrow_args && (e.dtype != DType::kI64 || narrow_[static_cast<size_t>(id)]);
  const std::string a = narrow ? tmp(e.args[0]) : as_type(e.args[0], DType::kI64);
  const std::string b = narrow ? tmp(e.args[1]) : as_type(e.args[1], DType::kI64);
  switch (e.index_op) {
    case IndexOp::kAdd:
      return a + " + " + b;
    case IndexOp::kSub:
      return a + " - " + b;
    case IndexOp::kMul:
      return a + " * " + b;
    case IndexOp::kDiv:
      return a + " / " + b;
    case IndexOp::kMod:
      return a + " % " + b;
    case IndexOp::kMin:
      return a + " < " + b + " ? " + a + " : " + b;
    case IndexOp::kMax:
      return a + " > " + b + " ? " + a + " : " + b;
    case IndexOp::kLess:
      return a + " < " + b;
    case IndexOp::kLessEq:
      return a + " <= " + b;
    case IndexOp::kEqual:
      return a + " == " + b;
    case IndexOp::kAnd:
      return tmp(e.args[0]) + " && " + tmp(e.args[1]);
  }
  return {};
}

std::string KernelExprWriter::op_value(ExprId id) const {
  const Expr& e = expr(id);
  ScalarOp op;
  op.op = e.op;
  op.result = e.dtype;
  if (e.node != kNoNode) {
    const Node& node = graph_.node(e.node);
    op.attrs = &node.attrs;
    op.node_name = node.name;
  } else {
    op.node_name = "<" + kernel_.name + ">";
  }
  for (ExprId a : e.args) {
    op.args.push_back(tmp(a));
    op.arg_types.push_back(expr(a).dtype);
  }
  std::string value = emit_op(target_, op);
  // A float quotient by a row value (softmax's sum, a norm's scale): the reciprocal, which the
  // compiler hoists out of the row's loop, times the dividend: one multiply per element where a
  // division costs about ten instructions, at one f32 rounding more (a relative 1.2e-7).
  const bool float_result = e.dtype == DType::kF32 || e.dtype == DType::kF16 || e.dtype == DType::kBF16;
  const bool by_row =
      e.op == Op::kDiv && e.args.size() == 2 && expr(e.args[1]).kind == ExprKind::kRowValue;
  if (by_row && float_result) value = "(" + op.args[0] + " * (1.0f / " + op.args[1] + "))";
  // A 16-bit value kept in f32 until its store: the target's approximations, whose few-ulp f32
  // error is far below that store's rounding.
  const bool f32_for_16bit = !round_16bit_ && (e.dtype == DType::kF16 || e.dtype == DType::kBF16);
  if (f32_for_16bit && !by_row && e.op == Op::kDiv && !target_.approx_divide.empty())
    value = target_.approx_divide + "(" + op.args[0] + ", " + op.args[1] + ")";
  if (f32_for_16bit && e.op == Op::kSigmoid && !target_.approx_sigmoid.empty())
    value = target_.approx_sigmoid + "(" + op.args[0] + ")";
  const bool is_16bit = e.dtype == DType::kF16 || e.dtype == DType::kBF16;
  const bool rounded_16bit = round_16bit_ && is_16bit;
  if (is_16bit && e.op == Op::kGelu) {
    const bool tanh = op.attrs && op.attrs->get_string("approximate", "none") == "tanh";
    const std::string& f = tanh ? target_.gelu_tanh_16bit : target_.gelu_erf_16bit;
    if (!f.empty()) value = f + "(" + op.args[0] + ")";
  }
  if (rounded_16bit && e.op == Op::kSigmoid && !target_.rounded_16bit_sigmoid.empty())
    value = target_.rounded_16bit_sigmoid + "(" + op.args[0] + ")";
  if (rounds_where_computed(id) && !unrounded_.count(id))
    value = emit_round_to(target_, e.dtype, value);
  return value;
}

bool KernelExprWriter::rounds_where_computed(ExprId id) const {
  const Expr& e = expr(id);
  return e.kind == ExprKind::kOp && (e.dtype == DType::kF16 || e.dtype == DType::kBF16) &&
         rounds_per_op(id) && !exact_on_exact_args(e);
}

std::string KernelExprWriter::expr_value(ExprId id) const {
  if (const auto kept = value_source_.find(id); kept != value_source_.end()) return kept->second;
  const Expr& e = expr(id);
  switch (e.kind) {
    case ExprKind::kOuterIndex:
      return "o" + std::to_string(e.axis);
    case ExprKind::kInnerIndex:
      return "i" + std::to_string(e.axis);
    case ExprKind::kRowValue: {
      const DType acc = kernel_.reductions[static_cast<size_t>(e.axis)].accumulate;
      return emit_cast(target_, acc, e.dtype, "row" + std::to_string(e.axis));
    }
    case ExprKind::kConstant:
      return emit_literal(target_, e.dtype, e.constant);
    case ExprKind::kLoad: {
      const DType stored = kernel_.buffers[static_cast<size_t>(e.buffer)].dtype;
      const auto source = load_source_.find(id);
      const std::string loaded = emit_load_convert(
          target_, stored,
          source != load_source_.end()
              ? source->second
              : "b" + std::to_string(e.buffer) + "[" + index_ref(e.args[0]) + "]");
      return emit_cast(target_, stored, e.dtype, loaded);
    }
    case ExprKind::kOp:
      return op_value(id);
    case ExprKind::kCast:
      return as_type(e.args[0], e.dtype);
    case ExprKind::kIndex:
      return index_value(id);
    case ExprKind::kSelect:
      if (index32_ && narrow_[static_cast<size_t>(id)])
        return as_type(e.args[0], DType::kBool) + " ? " + tmp(e.args[1]) + " : " + tmp(e.args[2]);
      return as_type(e.args[0], DType::kBool) + " ? " + as_type(e.args[1], e.dtype) + " : " +
             as_type(e.args[2], e.dtype);
  }
  return {};
}

void KernelExprWriter::emit(std::ostream& out, const std::vector<ExprId>& roots, bool inner,
                            std::set<ExprId>& done, const std::string& indent,
                            size_t rows_ready) const {
  // The closure of `roots` over args, written in id order (args come first in a DAG).
  std::set<ExprId> needed;
  std::vector<ExprId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (!needed.insert(id).second) continue;
    if (load_source_.count(id) || value_source_.count(id))
      continue;  // read from elsewhere: its args are not needed
    for (ExprId a : expr(id).args) stack.push_back(a);
  }
  for (ExprId id : needed) {
    if (uses_inner(id) != inner || done.count(id)) continue;
    if (max_row_[static_cast<size_t>(id)] >= static_cast<int>(rows_ready))
      malformed("expr " + std::to_string(id) + " reads a row value before it is computed");
    const Expr& e = expr(id);
    const bool narrow = index32_ && narrow_[static_cast<size_t>(id)];
    out << indent << "const " << (narrow ? "int32_t" : compute_c_type(e.dtype)) << " " << tmp(id)
        << " = " << expr_value(id) << ";";
    if (e.kind == ExprKind::kOp) {
      out << "  // " << op_name(e.op);
      if (e.node != kNoNode) out << " " << comment_safe(graph_.node(e.node).name);
    }
    out << "\n";
    done.insert(id);
  }
}

bool KernelExprWriter::exact_on_exact_args(const Expr& e) const {
  switch (e.op) {
    case Op::kRelu:
    case Op::kAbs:
    case Op::kNeg:
    case Op::kMax:
    case Op::kMin:
    case Op::kSign:
    case Op::kFloor:
    case Op::kCeil:
    case Op::kRound:
    case Op::kIdentity:
      break;
    default:
      return false;
  }
  if (e.dtype != DType::kF16 && e.dtype != DType::kBF16) return false;
  for (ExprId a : e.args)
    if (expr(a).dtype != e.dtype || !holds_exact_16bit(a)) return false;
  return true;
}

bool KernelExprWriter::holds_exact_16bit(ExprId id) const {
  const Expr& e = expr(id);
  switch (e.kind) {
    case ExprKind::kOp: {
      auto& known = exact_16bit_[static_cast<size_t>(id)];
      if (known < 0) known = rounds_per_op(id) || exact_on_exact_args(e) ? 1 : 0;
      return known == 1;
    }
    case ExprKind::kLoad:
    case ExprKind::kConstant:
      return true;  // a 16-bit load, or a value rounded into the format
    case ExprKind::kCast:  // rounds into the format, unless it is one already
      return expr(e.args[0]).dtype != e.dtype || holds_exact_16bit(e.args[0]);
    case ExprKind::kRowValue:
      return kernel_.reductions[static_cast<size_t>(e.axis)].accumulate != e.dtype;
    case ExprKind::kSelect:
      return holds_exact_16bit(e.args[1]) && holds_exact_16bit(e.args[2]);
    default:
      return false;
  }
}

bool KernelExprWriter::stores_exact_bf16(const fusion::Store& s) const {
  const DType t = kernel_.buffers[static_cast<size_t>(s.buffer)].dtype;
  return t == DType::kBF16 && expr(s.value).dtype == DType::kBF16 && holds_exact_16bit(s.value);
}

std::string KernelExprWriter::store_value(const fusion::Store& s) const {
  const DType t = kernel_.buffers[static_cast<size_t>(s.buffer)].dtype;
  // A bf16 value that is already representable: its bits are the float's upper half (a shift,
  // where a conversion would round again).
  if (stores_exact_bf16(s))
    return "(uint16_t)(" + target_.float_as_bits + "(" + tmp(s.value) + ") >> 16)";
  return emit_store_convert(target_, t, as_type(s.value, t));
}

std::string KernelExprWriter::store_statement(const fusion::Store& s) const {
  return "b" + std::to_string(s.buffer) + "[" + index_ref(s.index) + "] = " + store_value(s) + ";";
}

std::string KernelExprWriter::reduction_identity(size_t r) const {
  const fusion::RowReduction& red = kernel_.reductions[r];
  switch (red.kind) {
    case ReduceKind::kSum:
      return emit_literal(target_, red.accumulate, 0);
    case ReduceKind::kProd:
      return emit_literal(target_, red.accumulate, 1);
    // -inf / +inf saturate to lowest / highest for integer accumulators.
    case ReduceKind::kMax:
      return emit_literal(target_, red.accumulate, -HUGE_VAL);
    case ReduceKind::kMin:
      return emit_literal(target_, red.accumulate, HUGE_VAL);
  }
  return {};
}

std::string KernelExprWriter::reduction_combine(size_t r, const std::string& a,
                                                const std::string& b) const {
  const fusion::RowReduction& red = kernel_.reductions[r];
  const bool integer = is_integer(red.accumulate);
  const std::string c_type = compute_c_type(red.accumulate);
  switch (red.kind) {
    case ReduceKind::kSum:
      return integer ? "gf_wadd(" + a + ", " + b + ")" : a + " + " + b;
    case ReduceKind::kProd:
      return integer ? "gf_wmul(" + a + ", " + b + ")" : a + " * " + b;
    case ReduceKind::kMax:
      if (red.accumulate == DType::kF32 && !target_.f32_reduce_max.empty())
        return target_.f32_reduce_max + "(" + a + ", " + b + ")";
      return "gf_max<" + c_type + ">(" + a + ", " + b + ")";
    case ReduceKind::kMin:
      if (red.accumulate == DType::kF32 && !target_.f32_reduce_min.empty())
        return target_.f32_reduce_min + "(" + a + ", " + b + ")";
      return "gf_min<" + c_type + ">(" + a + ", " + b + ")";
  }
  return {};
}

}  // namespace gf::codegen
