// emit_cpu_kernel: a FusedKernel as C++ source. Every expr becomes one `const` temporary,
// placed in the innermost scope it needs: outer-invariant exprs once per outer point (before
// the first loop that uses them), inner-dependent exprs inside each inner loop that uses them.
#include "codegen/cpu/cpu_emitter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "codegen/common/scalar_emitter.h"
#include "graphfuse/error.h"

namespace gf::codegen {

namespace {

using fusion::Expr;
using fusion::ExprId;
using fusion::ExprKind;
using fusion::FusedKernel;
using fusion::IndexOp;
using fusion::ReduceKind;

// One line of a // comment: no newline, no trailing backslash (it would continue the comment).
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

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

class KernelWriter {
 public:
  KernelWriter(const FusedKernel& k, const Graph& g, const CpuEmitOptions& o)
      : k_(k), g_(g), opts_(o), target_(cpu_target()) {}

  std::string write();

 private:
  [[noreturn]] void malformed(const std::string& why) const {
    throw Error(ErrorCode::kInvalidGraph, "fused kernel '" + k_.name + "': " + why);
  }
  void validate_and_analyse();
  std::string tmp(ExprId id) const { return "t" + std::to_string(id); }
  const Expr& expr(ExprId id) const { return k_.exprs[static_cast<size_t>(id)]; }
  std::string expr_value(ExprId id) const;  // the initialiser of tmp(id)
  std::string op_value(const Expr& e) const;
  std::string index_value(const Expr& e) const;
  std::string as_type(ExprId id, DType t) const {
    return emit_cast(target_, expr(id).dtype, t, tmp(id));
  }
  // Emits the not yet emitted exprs among `roots` and their args that live at this level
  // (`inner`: those that use an inner index; otherwise the outer-invariant ones).
  void emit_exprs(const std::vector<ExprId>& roots, bool inner, std::set<ExprId>& done, int depth,
                  size_t row_limit);
  void open_inner_loops(int depth);
  void close_inner_loops(int depth);
  void emit_reduction(size_t r, std::set<ExprId>& outer_done, int depth);
  void emit_store(const fusion::Store& s, int depth);
  std::string indent(int depth) const { return std::string(static_cast<size_t>(2 * depth), ' '); }

  const FusedKernel& k_;
  const Graph& g_;
  const CpuEmitOptions& opts_;
  Target target_;
  std::vector<bool> uses_inner_;  // per expr: depends on an inner loop index
  std::vector<int> max_row_;      // per expr: the highest row value it reads, -1 for none
  std::ostringstream out_;
};

void KernelWriter::validate_and_analyse() {
  if (!is_c_identifier(k_.name)) malformed("name is not a C identifier");
  const int n = static_cast<int>(k_.exprs.size());
  uses_inner_.assign(k_.exprs.size(), false);
  max_row_.assign(k_.exprs.size(), -1);
  for (int id = 0; id < n; ++id) {
    const Expr& e = k_.exprs[static_cast<size_t>(id)];
    const std::string where = "expr " + std::to_string(id);
    for (ExprId a : e.args) {
      if (a < 0 || a >= id) malformed(where + " uses expr " + std::to_string(a) + " (not earlier)");
      uses_inner_[static_cast<size_t>(id)] =
          uses_inner_[static_cast<size_t>(id)] || uses_inner_[static_cast<size_t>(a)];
      max_row_[static_cast<size_t>(id)] =
          std::max(max_row_[static_cast<size_t>(id)], max_row_[static_cast<size_t>(a)]);
    }
    switch (e.kind) {
      case ExprKind::kOuterIndex:
        if (e.axis < 0 || e.axis >= static_cast<int>(k_.outer_dims.size()))
          malformed(where + ": bad outer axis");
        break;
      case ExprKind::kInnerIndex:
        if (e.axis < 0 || e.axis >= static_cast<int>(k_.inner_dims.size()))
          malformed(where + ": bad inner axis");
        uses_inner_[static_cast<size_t>(id)] = true;
        break;
      case ExprKind::kRowValue:
        if (e.axis < 0 || e.axis >= static_cast<int>(k_.reductions.size()))
          malformed(where + ": bad row value");
        max_row_[static_cast<size_t>(id)] = e.axis;
        break;
      case ExprKind::kLoad:
        if (e.buffer < 0 || e.buffer >= static_cast<int>(k_.buffers.size()) || e.args.size() != 1) {
          malformed(where + ": bad load");
        }
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
  for (size_t r = 0; r < k_.reductions.size(); ++r) {
    const ExprId v = k_.reductions[r].value;
    if (v < 0 || v >= n) malformed("reduction " + std::to_string(r) + ": bad value expr");
    if (max_row_[static_cast<size_t>(v)] >= static_cast<int>(r)) {
      malformed("reduction " + std::to_string(r) + " reads its own or a later row value");
    }
    if (k_.reductions[r].accumulate == DType::kBool) {
      throw Error(ErrorCode::kUnsupported, "fused kernel '" + k_.name + "': bool accumulator");
    }
  }
  for (const fusion::Store& s : k_.stores) {
    if (s.buffer < 0 || s.buffer >= static_cast<int>(k_.buffers.size()) ||
        !k_.buffers[static_cast<size_t>(s.buffer)].is_output) {
      malformed("store to buffer " + std::to_string(s.buffer) + ", not an output");
    }
    if (s.index < 0 || s.index >= n || s.value < 0 || s.value >= n) malformed("bad store exprs");
    if (!s.per_inner &&
        (uses_inner_[static_cast<size_t>(s.index)] || uses_inner_[static_cast<size_t>(s.value)])) {
      malformed("a per-outer store uses an inner index");
    }
  }
}

std::string KernelWriter::index_value(const Expr& e) const {
  const std::string a = as_type(e.args[0], DType::kI64), b = as_type(e.args[1], DType::kI64);
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

std::string KernelWriter::op_value(const Expr& e) const {
  ScalarOp op;
  op.op = e.op;
  op.result = e.dtype;
  if (e.node != kNoNode) {
    const Node& node = g_.node(e.node);
    op.attrs = &node.attrs;
    op.node_name = node.name;
  } else {
    op.node_name = "<" + k_.name + ">";
  }
  for (ExprId a : e.args) {
    op.args.push_back(tmp(a));
    op.arg_types.push_back(expr(a).dtype);
  }
  std::string value = emit_op(target_, op);
  if (opts_.round_16bit_intermediates) value = emit_round_to(target_, e.dtype, value);
  return value;
}

std::string KernelWriter::expr_value(ExprId id) const {
  const Expr& e = expr(id);
  switch (e.kind) {
    case ExprKind::kOuterIndex:
      return "o" + std::to_string(e.axis);
    case ExprKind::kInnerIndex:
      return "i" + std::to_string(e.axis);
    case ExprKind::kRowValue: {
      const DType acc = k_.reductions[static_cast<size_t>(e.axis)].accumulate;
      return emit_cast(target_, acc, e.dtype, "row" + std::to_string(e.axis));
    }
    case ExprKind::kConstant:
      return emit_literal(target_, e.dtype, e.constant);
    case ExprKind::kLoad: {
      const fusion::KernelBuffer& b = k_.buffers[static_cast<size_t>(e.buffer)];
      const std::string loaded = emit_load_convert(
          target_, b.dtype,
          "b" + std::to_string(e.buffer) + "[" + as_type(e.args[0], DType::kI64) + "]");
      return emit_cast(target_, b.dtype, e.dtype, loaded);
    }
    case ExprKind::kOp:
      return op_value(e);
    case ExprKind::kCast:
      return as_type(e.args[0], e.dtype);
    case ExprKind::kIndex:
      return index_value(e);
    case ExprKind::kSelect:
      return as_type(e.args[0], DType::kBool) + " ? " + as_type(e.args[1], e.dtype) + " : " +
             as_type(e.args[2], e.dtype);
  }
  return {};
}

void KernelWriter::emit_exprs(const std::vector<ExprId>& roots, bool inner, std::set<ExprId>& done,
                              int depth, size_t row_limit) {
  // The closure of `roots` over args, then emitted in id order (args come first in a DAG).
  std::set<ExprId> needed;
  std::vector<ExprId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (!needed.insert(id).second) continue;
    for (ExprId a : expr(id).args) stack.push_back(a);
  }
  for (ExprId id : needed) {
    if (uses_inner_[static_cast<size_t>(id)] != inner || done.count(id)) continue;
    if (max_row_[static_cast<size_t>(id)] >= static_cast<int>(row_limit)) {
      malformed("expr " + std::to_string(id) + " reads a row value before it is computed");
    }
    const Expr& e = expr(id);
    out_ << indent(depth) << "const " << compute_c_type(e.dtype) << " " << tmp(id) << " = "
         << expr_value(id) << ";";
    if (e.kind == ExprKind::kOp) {
      out_ << "  // " << op_name(e.op);
      if (e.node != kNoNode) out_ << " " << comment_safe(g_.node(e.node).name);
    }
    out_ << "\n";
    done.insert(id);
  }
}

void KernelWriter::open_inner_loops(int depth) {
  out_ << indent(depth) << "{\n";
  for (size_t d = 0; d < k_.inner_dims.size(); ++d) {
    out_ << indent(depth + 1) << "for (int64_t i" << d << " = 0; i" << d << " < "
         << k_.inner_dims[d] << "; ++i" << d << ")\n";
  }
  out_ << indent(depth + 1) << "{\n";
}

void KernelWriter::close_inner_loops(int depth) {
  out_ << indent(depth + 1) << "}\n" << indent(depth) << "}\n";
}

void KernelWriter::emit_reduction(size_t r, std::set<ExprId>& outer_done, int depth) {
  const fusion::RowReduction& red = k_.reductions[r];
  const DType acc_t = red.accumulate;
  const std::string acc = "acc" + std::to_string(r);
  emit_exprs({red.value}, false, outer_done, depth, r);
  std::string init;
  switch (red.kind) {
    case ReduceKind::kSum:
      init = emit_literal(target_, acc_t, 0);
      break;
    case ReduceKind::kProd:
      init = emit_literal(target_, acc_t, 1);
      break;
    // -inf / +inf saturate to lowest / highest for integer accumulators.
    case ReduceKind::kMax:
      init = emit_literal(target_, acc_t, -HUGE_VAL);
      break;
    case ReduceKind::kMin:
      init = emit_literal(target_, acc_t, HUGE_VAL);
      break;
  }
  const std::string c_type = compute_c_type(acc_t);
  out_ << indent(depth) << c_type << " " << acc << " = " << init << ";\n";
  open_inner_loops(depth);
  std::set<ExprId> inner_done;
  emit_exprs({red.value}, true, inner_done, depth + 2, r);
  const std::string v = as_type(red.value, acc_t);
  std::string step;
  const bool integer = is_integer(acc_t);
  switch (red.kind) {
    case ReduceKind::kSum:
      step = integer ? "gf_wadd(" + acc + ", " + v + ")" : acc + " + " + v;
      break;
    case ReduceKind::kProd:
      step = integer ? "gf_wmul(" + acc + ", " + v + ")" : acc + " * " + v;
      break;
    case ReduceKind::kMax:
      step = "gf_max<" + c_type + ">(" + acc + ", " + v + ")";
      break;
    case ReduceKind::kMin:
      step = "gf_min<" + c_type + ">(" + acc + ", " + v + ")";
      break;
  }
  out_ << indent(depth + 2) << acc << " = " << step << ";\n";
  close_inner_loops(depth);
  out_ << indent(depth) << "const " << c_type << " row" << r << " = " << acc << ";\n";
}

void KernelWriter::emit_store(const fusion::Store& s, int depth) {
  const fusion::KernelBuffer& b = k_.buffers[static_cast<size_t>(s.buffer)];
  out_ << indent(depth) << "b" << s.buffer << "[" << as_type(s.index, DType::kI64)
       << "] = " << emit_store_convert(target_, b.dtype, as_type(s.value, b.dtype)) << ";\n";
}

std::string KernelWriter::write() {
  validate_and_analyse();
  const int64_t outer = product(k_.outer_dims), inner = product(k_.inner_dims);
  const bool any_per_inner = std::any_of(k_.stores.begin(), k_.stores.end(),
                                         [](const fusion::Store& s) { return s.per_inner; });
  const int64_t inner_passes = static_cast<int64_t>(k_.reductions.size()) + (any_per_inner ? 1 : 0);
  const int64_t work = outer * std::max<int64_t>(1, inner * inner_passes);

  out_ << "// Generated by graphfuse (CPU code generator): kernel " << k_.name << ".\n"
       << "#include <cmath>\n#include <cstdint>\n#include <cstring>\n\nnamespace {\n"
       << scalar_prelude(target_) << "}  // namespace\n\n"
       << "extern \"C\" void " << k_.name << "(void* const* buffers) {\n";
  std::istringstream comment(k_.comment);
  for (std::string line; std::getline(comment, line);)
    out_ << "  // " << comment_safe(line) << "\n";
  for (size_t i = 0; i < k_.buffers.size(); ++i) {
    const fusion::KernelBuffer& b = k_.buffers[i];
    const std::string type = (b.is_output ? "" : "const ") + storage_c_type(b.dtype);
    out_ << "  " << type << "* b" << i << " = static_cast<" << type << "*>(buffers[" << i
         << "]);  // " << comment_safe(b.name) << ": " << dtype_name(b.dtype) << dims_string(b.dims)
         << (b.is_output ? " (output)" : "") << "\n";
  }
  if (outer == 0) {
    out_ << "}\n";
    return out_.str();
  }
  const size_t rank = k_.outer_dims.size();
  if (outer >= 2 && work >= kMinParallelWork) {
    out_ << "#pragma omp parallel for schedule(static)";
    if (rank > 1) out_ << " collapse(" << rank << ")";
    out_ << "\n";
  }
  for (size_t d = 0; d < rank; ++d) {
    out_ << "  for (int64_t o" << d << " = 0; o" << d << " < " << k_.outer_dims[d] << "; ++o" << d
         << ")\n";
  }
  out_ << "  {\n";
  constexpr int kBody = 2;
  std::set<ExprId> outer_done;
  for (size_t r = 0; r < k_.reductions.size(); ++r) emit_reduction(r, outer_done, kBody);
  const size_t all_rows = k_.reductions.size();
  for (const fusion::Store& s : k_.stores) {
    if (s.per_inner) continue;
    emit_exprs({s.index, s.value}, false, outer_done, kBody, all_rows);
    emit_store(s, kBody);
  }
  if (any_per_inner && inner > 0) {
    std::vector<ExprId> roots;
    for (const fusion::Store& s : k_.stores) {
      if (s.per_inner) roots.insert(roots.end(), {s.index, s.value});
    }
    emit_exprs(roots, false, outer_done, kBody, all_rows);
    open_inner_loops(kBody);
    std::set<ExprId> inner_done;
    emit_exprs(roots, true, inner_done, kBody + 2, all_rows);
    for (const fusion::Store& s : k_.stores) {
      if (s.per_inner) emit_store(s, kBody + 2);
    }
    close_inner_loops(kBody);
  }
  out_ << "  }\n}\n";
  return out_.str();
}

}  // namespace

std::string emit_cpu_kernel(const fusion::FusedKernel& kernel, const Graph& graph,
                            const CpuEmitOptions& options) {
  return KernelWriter(kernel, graph, options).write();
}

}  // namespace gf::codegen
