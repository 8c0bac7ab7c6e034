// emit_op: each elementwise op of the op table as a C expression, mirroring its reference kernel.
#include "codegen/common/scalar_emitter.h"

#include <cmath>
#include <numbers>

#include "graphfuse/error.h"

namespace gf::codegen {

namespace {

// The pieces every op rule needs: the target, the op, and its compute type.
class OpEmitter {
 public:
  OpEmitter(const Target& target, const ScalarOp& op, DType compute)
      : t_(target), op_(op), ct_(compute), c_(compute_c_type(compute)) {}

  std::string emit();

 private:
  const std::string& x(size_t i = 0) const { return op_.args.at(i); }
  std::string fn(const std::string& name) const { return math_fn(t_, name, ct_); }
  std::string call(const std::string& name, const std::string& a) const {
    return fn(name) + "(" + a + ")";
  }
  // A constant in the compute type; 16-bit floats compute in float, so their constants do too.
  std::string lit(double v) const {
    return emit_literal(t_, ct_ == DType::kF16 || ct_ == DType::kBF16 ? DType::kF32 : ct_, v);
  }
  // A float attribute as the reference reads it: float, widened, then cast to the compute type.
  std::string attr(const char* name, float fallback) const {
    const float v = op_.attrs ? op_.attrs->get_float(name, fallback) : fallback;
    return lit(static_cast<double>(v));
  }
  int64_t int_attr(const char* name, int64_t fallback) const {
    return op_.attrs ? op_.attrs->get_int(name, fallback) : fallback;
  }
  bool is_int() const { return is_integer(ct_); }
  bool is_float() const { return is_floating(ct_); }

  [[noreturn]] void unsupported(const std::string& why) const {
    throw Error(ErrorCode::kUnsupported, "code generation (" + t_.name + "): node '" +
                                             op_.node_name + "' (" + std::string(op_name(op_.op)) +
                                             "): " + why);
  }
  void need_args(size_t n) const {
    GF_ASSERT(op_.args.size() == n && op_.arg_types.size() == n, "wrong argument count");
  }
  void need_float() const {
    if (!is_float()) unsupported("dtype " + std::string(dtype_name(ct_)) + " is not a float");
  }
  void need_numeric() const {
    if (ct_ == DType::kBool) unsupported("dtype bool is not numeric");
  }
  void need_integer() const {
    if (!is_int()) unsupported("dtype " + std::string(dtype_name(ct_)) + " is not an integer");
  }

  std::string unary_float();
  std::string activation();
  std::string binary_arith();
  std::string variadic();
  std::string power();
  std::string gelu();

  // Wrapping integer arithmetic, plain IEEE arithmetic for floats.
  std::string arith(const char* c_op, const char* wrap_fn, const std::string& a,
                    const std::string& b) const {
    if (is_int()) return std::string(wrap_fn) + "(" + a + ", " + b + ")";
    return "(" + a + " " + c_op + " " + b + ")";
  }

  const Target& t_;
  const ScalarOp& op_;
  DType ct_;
  std::string c_;
};

// Float-only unary math that is a single library call.
std::string OpEmitter::unary_float() {
  switch (op_.op) {
    case Op::kExp:
      return call("exp", x());
    case Op::kLog:
      return call("log", x());
    case Op::kSqrt:
      return call("sqrt", x());
    case Op::kTanh:
      return call("tanh", x());
    case Op::kErf:
      return call("erf", x());
    case Op::kSin:
      return call("sin", x());
    case Op::kCos:
      return call("cos", x());
    case Op::kTan:
      return call("tan", x());
    case Op::kAsin:
      return call("asin", x());
    case Op::kAcos:
      return call("acos", x());
    case Op::kAtan:
      return call("atan", x());
    case Op::kSinh:
      return call("sinh", x());
    case Op::kCosh:
      return call("cosh", x());
    case Op::kAsinh:
      return call("asinh", x());
    case Op::kAcosh:
      return call("acosh", x());
    case Op::kAtanh:
      return call("atanh", x());
    case Op::kFloor:
      return call("floor", x());
    case Op::kCeil:
      return call("ceil", x());
    // Half to even: the default rounding mode, as the reference's round_half_even.
    case Op::kRound:
      return call("nearbyint", x());
    case Op::kReciprocal:
      return "(" + lit(1) + " / " + x() + ")";
    case Op::kSigmoid:
      return "gf_sigmoid(" + x() + ")";
    case Op::kSoftplus:
      return "gf_softplus(" + x() + ")";
    case Op::kSoftsign:
      return "(" + x() + " / (" + lit(1) + " + " + call("fabs", x()) + "))";
    case Op::kMish:
      return "(" + x() + " * " + call("tanh", "gf_softplus(" + x() + ")") + ")";
    case Op::kHardSwish:
      return "(" + x() + " * gf_clamp01<" + c_ + ">(" + x() + " / " + lit(6) + " + " + lit(0.5) +
             "))";
    default:
      return {};
  }
}

// The parameterised activations (attribute defaults as in the reference kernels).
std::string OpEmitter::activation() {
  const std::string zero = lit(0);
  switch (op_.op) {
    case Op::kLeakyRelu:
      return "(" + x() + " < " + zero + " ? " + attr("alpha", 0.01f) + " * " + x() + " : " + x() +
             ")";
    case Op::kElu:
      return "(" + x() + " < " + zero + " ? " + attr("alpha", 1.0f) + " * " + call("expm1", x()) +
             " : " + x() + ")";
    case Op::kSelu: {
      const std::string g = attr("gamma", 1.05070102214813232421875f);
      const std::string a = attr("alpha", 1.67326319217681884765625f);
      return "(" + x() + " > " + zero + " ? " + g + " * " + x() + " : " + g + " * " + a + " * " +
             call("expm1", x()) + ")";
    }
    case Op::kCelu: {
      const std::string a = attr("alpha", 1.0f);
      return "(" + x() + " > " + zero + " ? " + x() + " : " + a + " * " +
             call("expm1", x() + " / " + a) + ")";
    }
    case Op::kThresholdedRelu:  // NaN becomes 0, as in ONNX's reference
      return "(" + x() + " > " + attr("alpha", 1.0f) + " ? " + x() + " : " + zero + ")";
    case Op::kHardSigmoid:
      return "gf_clamp01<" + c_ + ">(" + attr("alpha", 0.2f) + " * " + x() + " + " +
             attr("beta", 0.5f) + ")";
    case Op::kGelu:
      return gelu();
    default:
      return {};
  }
}

std::string OpEmitter::gelu() {
  const std::string approximate = op_.attrs ? op_.attrs->get_string("approximate", "none") : "none";
  if (approximate == "tanh") {
    const std::string k = lit(std::sqrt(2.0 / std::numbers::pi));
    return "(" + lit(0.5) + " * " + x() + " * (" + lit(1) + " + " +
           call("tanh", k + " * (" + x() + " + " + lit(0.044715) + " * " + x() + " * " + x() +
                            " * " + x() + ")") +
           "))";
  }
  if (approximate != "none") unsupported("approximate='" + approximate + "'");
  const std::string scaled = t_.gelu_erf_by_reciprocal
                                 ? x() + " * " + lit(1.0 / std::numbers::sqrt2)
                                 : x() + " / " + lit(std::numbers::sqrt2);
  return "(" + lit(0.5) + " * " + x() + " * (" + lit(1) + " + " + call("erf", scaled) + "))";
}

std::string OpEmitter::binary_arith() {
  const std::string& a = x(0);
  const std::string& b = x(1);
  switch (op_.op) {
    case Op::kAdd:
      return arith("+", "gf_wadd", a, b);
    case Op::kSub:
      return arith("-", "gf_wsub", a, b);
    case Op::kMul:
      return arith("*", "gf_wmul", a, b);
    case Op::kDiv:
      if (is_int()) return "gf_idiv<" + c_ + ">(" + a + ", " + b + ")";
      return "(" + a + " / " + b + ")";
    case Op::kMod: {
      if (is_float()) return fn("fmod") + "(" + a + ", " + b + ")";
      const bool python_sign = int_attr("fmod", 0) == 0;
      return "gf_imod<" + c_ + ">(" + a + ", " + b + ", " + (python_sign ? "true" : "false") + ")";
    }
    case Op::kPRelu:
      return "(" + a + " < " + lit(0) + " ? " + arith("*", "gf_wmul", a, b) + " : " + a + ")";
    default:
      return {};
  }
}

// Min, Max, Sum, Mean: folded left to right in the compute type, as the reference does.
std::string OpEmitter::variadic() {
  std::string acc = x(0);
  for (size_t k = 1; k < op_.args.size(); ++k) {
    switch (op_.op) {
      case Op::kMin:
        acc = "gf_min<" + c_ + ">(" + acc + ", " + x(k) + ")";
        break;
      case Op::kMax:
        acc = "gf_max<" + c_ + ">(" + acc + ", " + x(k) + ")";
        break;
      default:
        acc = arith("+", "gf_wadd", acc, x(k));
        break;
    }
  }
  if (op_.op == Op::kMean) {
    acc = "(" + c_ + ")(" + acc + " / " + lit(static_cast<double>(op_.args.size())) + ")";
  }
  return acc;
}

// Base and exponent may differ in dtype; the result has the base's.
std::string OpEmitter::power() {
  need_args(2);
  const DType bt = op_.arg_types[0], et = op_.arg_types[1];
  if (bt == DType::kBool || et == DType::kBool) unsupported("bool operands");
  const std::string pow64 = math_fn(t_, "pow", DType::kF64);
  const std::string b = x(0), e = x(1);
  if (is_integer(bt) && is_integer(et)) return "gf_ipow(" + b + ", (int64_t)" + e + ")";
  if (is_integer(bt)) {
    return "gf_f2i_" + std::string(dtype_name(bt)) + "(" + pow64 + "((double)" + b + ", (double)" +
           e + "))";
  }
  if (bt == DType::kF64 || et == DType::kF64) {
    return "(" + c_ + ")" + pow64 + "((double)" + b + ", (double)" + e + ")";
  }
  return math_fn(t_, "pow", DType::kF32) + "((float)" + b + ", (float)" + e + ")";
}

std::string OpEmitter::emit() {
  const Op op = op_.op;
  const size_t n = op_.args.size();
  if (op == Op::kPow) return power();
  if (op == Op::kMin || op == Op::kMax || op == Op::kSum || op == Op::kMean) {
    GF_ASSERT(n >= 1 && op_.arg_types.size() == n, "variadic op without arguments");
    need_numeric();
    return variadic();
  }
  if (op == Op::kCast || op == Op::kCastLike) {
    GF_ASSERT(n >= 1, "Cast without argument");
    return emit_cast(t_, op_.arg_types[0], op_.result, x());
  }
  if (op == Op::kWhere) {
    need_args(3);
    return "(" + x(0) + " ? " + x(1) + " : " + x(2) + ")";
  }
  if (op == Op::kBatchNormalization) {
    need_args(5);
    need_float();
    // Scale, bias, mean and var may have their own float dtypes; compute in x's.
    std::string p[5];
    for (size_t i = 1; i < 5; ++i) p[i] = emit_cast(t_, op_.arg_types[i], ct_, x(i));
    return "((" + x() + " - " + p[3] + ") / " +
           call("sqrt", p[4] + " + " + attr("epsilon", 1e-5f)) + " * " + p[1] + " + " + p[2] + ")";
  }
  if (op == Op::kClip) {
    need_args(3);  // lowering supplies absent bounds as the type's extremes
    need_numeric();
    return "gf_clip<" + c_ + ">(" + x(0) + ", " + x(1) + ", " + x(2) + ")";
  }
  const OpInfo& info = op_info(op);
  if (info.kind != OpKind::kElementwise && info.kind != OpKind::kBroadcast) {
    unsupported("not an elementwise op");
  }
  if (n == 1) {
    need_args(1);
    switch (op) {
      case Op::kIdentity:
      case Op::kDropout:
        return x();  // Dropout in inference is the identity
      case Op::kNot:
        if (ct_ != DType::kBool) unsupported("Not needs bool");
        return "(!" + x() + ")";
      case Op::kBitwiseNot:
        need_integer();
        return "(" + c_ + ")(~" + x() + ")";
      case Op::kAbs:
        need_numeric();
        if (is_float()) return call("fabs", x());
        if (ct_ == DType::kU8) return x();
        return "(" + x() + " < 0 ? gf_wsub((" + c_ + ")0, " + x() + ") : " + x() + ")";
      case Op::kNeg:
        need_numeric();
        if (is_int()) return "gf_wsub((" + c_ + ")0, " + x() + ")";
        return "(-" + x() + ")";
      case Op::kRelu:
        need_numeric();
        return "(" + x() + " < " + lit(0) + " ? " + lit(0) + " : " + x() + ")";
      case Op::kSign:
        need_numeric();
        return "(" + x() + " > " + lit(0) + " ? " + lit(1) + " : " + x() + " < " + lit(0) + " ? (" +
               c_ + ")(-1) : " + x() + ")";
      case Op::kIsNaN:
        need_float();
        return call("isnan", x());
      case Op::kIsInf: {
        need_float();
        const bool neg = int_attr("detect_negative", 1) != 0;
        const bool pos = int_attr("detect_positive", 1) != 0;
        if (!neg && !pos) return "false";
        std::string sign_test = neg && pos ? ""
                                : pos      ? " && " + x() + " > 0"
                                           : " && " + x() + " < 0";
        return "(" + call("isinf", x()) + sign_test + ")";
      }
      default:
        break;
    }
    need_float();
    std::string e = unary_float();
    if (e.empty()) e = activation();
    if (!e.empty()) return e;
    unsupported("no scalar form");
  }
  need_args(2);
  switch (op) {
    case Op::kEqual:
      return "(" + x(0) + " == " + x(1) + ")";
    case Op::kLess:
      return "(" + x(0) + " < " + x(1) + ")";
    case Op::kLessOrEqual:
      return "(" + x(0) + " <= " + x(1) + ")";
    case Op::kGreater:
      return "(" + x(0) + " > " + x(1) + ")";
    case Op::kGreaterOrEqual:
      return "(" + x(0) + " >= " + x(1) + ")";
    case Op::kAnd:
    case Op::kOr:
    case Op::kXor: {
      if (ct_ != DType::kBool) unsupported("logical op needs bool");
      const char* c_op = op == Op::kAnd ? " && " : op == Op::kOr ? " || " : " != ";
      return "(" + x(0) + c_op + x(1) + ")";
    }
    case Op::kBitwiseAnd:
    case Op::kBitwiseOr:
    case Op::kBitwiseXor: {
      need_integer();
      const char* c_op = op == Op::kBitwiseAnd ? " & " : op == Op::kBitwiseOr ? " | " : " ^ ";
      return "(" + c_ + ")(" + x(0) + c_op + x(1) + ")";
    }
    default:
      break;
  }
  need_numeric();
  std::string e = binary_arith();
  if (e.empty()) unsupported("no scalar form");
  return e;
}

}  // namespace

std::string emit_op(const Target& target, const ScalarOp& op) {
  GF_ASSERT(!op.arg_types.empty() || op.op == Op::kIdentity, "op without arguments");
  // The compute type is the data operand's: Where's condition and Pow's exponent do not count.
  DType compute = op.arg_types.empty() ? op.result : op.arg_types[0];
  if (op.op == Op::kWhere && op.arg_types.size() == 3) compute = op.arg_types[1];
  return OpEmitter(target, op, compute).emit();
}

}  // namespace gf::codegen
