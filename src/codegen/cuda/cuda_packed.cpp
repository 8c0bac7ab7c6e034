// Packed 16-bit ops in a vector run: f16/bf16 Add, Sub, Mul, Relu, Abs and Neg computed on two
// values per 32-bit register (kPackedHelpers in cuda_target.cpp), where each would otherwise
// take a conversion to float, the float op, a rounding and a conversion back.
//
// Only with per-op rounding, and only on exact 16-bit operands (loads, or other packed results):
// then the packed op's one rounding gives the reference's bits. A sum or difference of two
// values of one 16-bit format is exact in float unless their exponents lie so far apart that
// the smaller is far below half a step of the larger, where both roundings give the larger; a
// product of two f16 values is exact in float. A bf16 product is exact only when it keeps above
// float's smallest step (2^-149), so a bf16 Mul is packed only when one operand is a constant
// whose values are all multiples of 2^-16 (x * 0.5, x * 1.5, not x * 1e-5).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "codegen/cuda/cuda_kernel_writer.h"
#include "graphfuse/dtype.h"

namespace gf::codegen {

using fusion::ExprId;
using fusion::ExprKind;

namespace {

// Ops whose packed form only touches sign bits (or, for Relu, zeroes a half).
bool is_sign_op(Op op) {
  return op == Op::kRelu || op == Op::kAbs || op == Op::kNeg;
}

// Every value of a constant bf16 tensor is 0, not finite, or a multiple of 2^-16.
bool bf16_values_are_multiples_of_2_pow_minus_16(const Tensor& t) {
  const auto* v = t.data<BFloat16>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float f = static_cast<float>(v[i]);
    if (f == 0.0f || !std::isfinite(f)) continue;
    if (std::ldexp(f, 16) != std::trunc(std::ldexp(f, 16))) return false;
  }
  return true;
}

}  // namespace

bool CudaKernelWriter::packed_ops_available(DType t) const {
  return opts_.round_16bit_intermediates &&
         (t == DType::kF16 ? opts_.compute_capability >= 53
                           : t == DType::kBF16 && opts_.compute_capability >= 90);
}

bool CudaKernelWriter::exact_bf16_product(const fusion::Expr& mul) const {
  for (ExprId a : mul.args) {
    const fusion::Expr& e = exprs_.expr(a);
    if (e.kind != ExprKind::kLoad) continue;
    const ValueId v = k_.buffers[static_cast<size_t>(e.buffer)].value;
    if (v < 0 || static_cast<size_t>(v) >= g_.num_values() || !g_.value(v).is_constant()) continue;
    const Tensor& c = g_.value(v).constant;
    if (c.dtype() == DType::kBF16 && bf16_values_are_multiples_of_2_pow_minus_16(c)) return true;
  }
  return false;
}

std::vector<ExprId> CudaKernelWriter::write_packed_ops(const VectorPlan& p, bool inner_level,
                                                       const std::vector<ExprId>& roots,
                                                       const std::vector<ExprId>& vector_loads,
                                                       const std::string& indent) {
  const int w = p.width;
  if (w < 2 || w % 2 != 0 || !opts_.round_16bit_intermediates) return {};
  // Per packable expr, its pair gf_i as a 32-bit expression.
  std::map<ExprId, std::string> pair;
  std::set<ExprId> uniform;  // loads of one value per run
  for (ExprId id : vector_loads) {
    const fusion::Expr& e = exprs_.expr(id);
    const DType t = k_.buffers[static_cast<size_t>(e.buffer)].dtype;
    if (e.dtype != t || !packed_ops_available(t)) continue;
    const bool one_value = p.loads[static_cast<size_t>(id)] == VectorAccess::kUniform;
    if (one_value) uniform.insert(id);
    pair[id] = one_value ? "gf_hu" + std::to_string(id)
                         : "gf_pair16(gf_l" + std::to_string(id) + ", gf_i)";
  }
  std::vector<ExprId> ops;
  std::map<ExprId, std::string> value;      // per packed op, its pair gf_i from its args' pairs
  std::map<ExprId, int> packed_users;       // per packed op, how many packed ops read it
  for (ExprId id : closure(roots, true)) {  // ascending ids: args first
    const fusion::Expr& e = exprs_.expr(id);
    if (e.kind != ExprKind::kOp || exprs_.has_source(id) || exprs_.uses_inner(id) != inner_level ||
        !packed_ops_available(e.dtype))
      continue;
    const bool binary = e.op == Op::kAdd || e.op == Op::kSub || e.op == Op::kMul;
    if (!(binary && e.args.size() == 2) && !(is_sign_op(e.op) && e.args.size() == 1)) continue;
    bool args_packed = true;
    for (ExprId a : e.args)
      args_packed = args_packed && pair.count(a) && exprs_.expr(a).dtype == e.dtype;
    if (!args_packed) continue;
    if (e.op == Op::kMul && e.dtype == DType::kBF16 && !exact_bf16_product(e)) continue;
    const std::string suffix = e.dtype == DType::kF16 ? "_f16x2(" : "_bf16x2(";
    auto arg = [&](size_t i) { return pair[e.args[i]]; };
    std::string& v = value[id];
    switch (e.op) {
      case Op::kAdd:
        v = "gf_add" + suffix + arg(0) + ", " + arg(1) + ")";
        break;
      case Op::kSub:
        v = "gf_sub" + suffix + arg(0) + ", " + arg(1) + ")";
        break;
      case Op::kMul:
        v = "gf_mul" + suffix + arg(0) + ", " + arg(1) + ")";
        break;
      case Op::kRelu:
        v = "gf_relu" + suffix + arg(0) + ")";
        break;
      case Op::kAbs:
        v = arg(0) + " & 0x7fff7fffu";
        break;
      default:  // Neg
        v = arg(0) + " ^ 0x80008000u";
        break;
    }
    pair[id] = "gf_h" + std::to_string(id) + "[gf_i]";
    for (ExprId a : e.args) ++packed_users[a];
    ops.push_back(id);
  }
  // A sign op alone costs nothing in float (a modifier of the next instruction): keep it packed
  // only where a packed op or a store (one of `roots`) reads it.
  for (ExprId r : roots) ++packed_users[r];
  std::vector<ExprId> kept;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {  // users before the ops they read
    const fusion::Expr& e = exprs_.expr(*it);
    if (is_sign_op(e.op) && packed_users[*it] == 0) {
      for (ExprId a : e.args) --packed_users[a];
      continue;
    }
    kept.push_back(*it);
  }
  std::reverse(kept.begin(), kept.end());
  if (kept.empty()) return {};
  std::set<ExprId> uniforms_read;
  for (ExprId id : kept)
    for (ExprId a : exprs_.expr(id).args)
      if (uniform.count(a)) uniforms_read.insert(a);
  for (ExprId id : uniforms_read)
    out_ << indent << "const uint32_t gf_hu" << id << " = (uint32_t)gf_u" << id << " * 0x10001u;\n";
  for (ExprId id : kept) out_ << indent << "uint32_t gf_h" << id << "[" << w / 2 << "];\n";
  out_ << indent << "#pragma unroll\n"
       << indent << "for (int gf_i = 0; gf_i < " << w / 2 << "; ++gf_i) {\n";
  for (ExprId id : kept)
    out_ << indent << "  gf_h" << id << "[gf_i] = " << value[id] << ";  // "
         << op_name(exprs_.expr(id).op) << "\n";
  out_ << indent << "}\n";
  for (ExprId id : kept) {
    const bool f16 = exprs_.expr(id).dtype == DType::kF16;
    exprs_.set_value_source(id, std::string(f16 ? "gf_f16x2_at(gf_h" : "gf_bf16x2_at(gf_h") +
                                    std::to_string(id) + ", gf_j)");
  }
  return kept;
}

}  // namespace gf::codegen
