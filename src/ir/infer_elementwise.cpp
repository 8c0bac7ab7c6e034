// Shape inference for the elementwise op family: unary ops, Cast/CastLike, Identity, Dropout.
// The broadcast half (binary, variadic, Where, Clip, PRelu) is in infer_broadcast.cpp.
#include "ir/infer.h"
#include "ir/infer_elementwise_family.h"

namespace gf {

namespace elementwise_infer {

void expect_dtype_in(const InferContext& ctx, int i, DTypeMask allowed) {
  const DType t = ctx.dtype(i);
  if (allowed & dtype_bit(t)) return;
  std::string names;
  for (int d = 0; d < kNumDTypes; ++d) {
    if (allowed & dtype_bit(static_cast<DType>(d))) {
      names += (names.empty() ? "" : ", ") + std::string(dtype_name(static_cast<DType>(d)));
    }
  }
  ctx.fail("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(t)) + "; " +
           std::string(op_name(ctx.node().op)) + " accepts " + names);
}

// Attributes::get_* throw without naming the node; rethrow with the node's description.
template <class F>
static auto named_attr_read(const InferContext& ctx, F read) {
  try {
    return read();
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

int64_t attr_int(const InferContext& ctx, const std::string& name, int64_t fallback) {
  return named_attr_read(ctx, [&] { return ctx.attrs().get_int(name, fallback); });
}

float attr_float(const InferContext& ctx, const std::string& name, float fallback) {
  return named_attr_read(ctx, [&] { return ctx.attrs().get_float(name, fallback); });
}

std::string attr_string(const InferContext& ctx, const std::string& name,
                        const std::string& fallback) {
  return named_attr_read(ctx, [&] { return ctx.attrs().get_string(name, fallback); });
}

bool may_be_scalar(const Shape& s) {
  return s.rank() == 0 || (s.rank() == 1 && (!s[0].is_static() || s[0].value() == 1));
}

}  // namespace elementwise_infer

namespace {

using namespace elementwise_infer;

// Same dtype and shape as the input, which must be one of kAllowed.
template <DTypeMask kAllowed>
std::vector<TensorType> infer_unary(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kAllowed);
  return {ctx.input(0)};
}

// A bool tensor of the input's shape.
std::vector<TensorType> infer_is_nan(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kFloatTypes);
  return {TensorType{DType::kBool, ctx.shape(0)}};
}

std::vector<TensorType> infer_is_inf(InferContext& ctx) {
  attr_int(ctx, "detect_negative", 1);
  attr_int(ctx, "detect_positive", 1);
  return infer_is_nan(ctx);
}

// Float activations with float attributes (LeakyRelu, Elu, Selu, HardSigmoid, ...): the
// attributes are read here so a wrong kind fails at build time, naming the node.
std::vector<TensorType> infer_float_activation(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kFloatTypes);
  for (const char* name : {"alpha", "beta", "gamma"}) attr_float(ctx, name, 1.0f);
  if (ctx.node().op == Op::kCelu && attr_float(ctx, "alpha", 1.0f) == 0.0f) {
    ctx.fail("attribute 'alpha' must be nonzero (Celu divides by it)", ErrorCode::kInvalidGraph);
  }
  return {ctx.input(0)};
}

std::vector<TensorType> infer_gelu(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kFloatTypes);
  const std::string approximate = attr_string(ctx, "approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    ctx.fail("attribute 'approximate' is \"" + approximate + "\"; expected \"none\" or \"tanh\"",
             ErrorCode::kInvalidGraph);
  }
  return {ctx.input(0)};
}

std::vector<TensorType> infer_cast(InferContext& ctx) {
  if (!ctx.attrs().has("to")) ctx.fail("attribute 'to' is required", ErrorCode::kInvalidGraph);
  const int64_t to = attr_int(ctx, "to", 0);
  if (to < 0 || to >= kNumDTypes) {
    ctx.fail("attribute 'to' is " + std::to_string(to) + ", not a gf::DType value (0.." +
                 std::to_string(kNumDTypes - 1) + ")",
             ErrorCode::kInvalidGraph);
  }
  return {TensorType{static_cast<DType>(to), ctx.shape(0)}};
}

std::vector<TensorType> infer_cast_like(InferContext& ctx) {
  return {TensorType{ctx.dtype(1), ctx.shape(0)}};
}

void expect_scalar(const InferContext& ctx, int i, const char* what) {
  if (!may_be_scalar(ctx.shape(i))) {
    ctx.fail(std::string(what) + " (input " + std::to_string(i) + ") must be a scalar, got shape " +
             ctx.shape(i).to_string());
  }
}

// Inference-only Dropout: the output is the input and the mask is all true. Training with a
// positive ratio would need random numbers, which this compiler does not model.
std::vector<TensorType> infer_dropout(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kFloatTypes);
  attr_int(ctx, "seed", 0);
  if (ctx.has_input(1)) {
    expect_dtype_in(ctx, 1, kFloatTypes);
    expect_scalar(ctx, 1, "ratio");
  }
  if (ctx.has_input(2)) {
    expect_dtype_in(ctx, 2, kBoolType);
    expect_scalar(ctx, 2, "training_mode");
  }
  const Tensor* training = ctx.value(2);
  if (training != nullptr && training->numel() == 1 && training->element_as_int(0) != 0) {
    const Tensor* ratio = ctx.value(1);
    const bool ratio_known = !ctx.has_input(1) || (ratio != nullptr && ratio->numel() == 1);
    const double r = ctx.has_input(1) && ratio_known ? ratio->element_as_double(0) : 0.5;
    // An unknown ratio is decided at run time, when every input's data is known.
    if (ratio_known && !(r == 0.0)) {
      ctx.fail("training_mode is true with ratio " + std::to_string(r) +
                   "; only inference (identity) Dropout is supported",
               ErrorCode::kUnsupported);
    }
  }
  return {ctx.input(0), TensorType{DType::kBool, ctx.shape(0)}};
}

}  // namespace

void register_elementwise_infer(InferTable& table) {
  auto set = [&](Op op, InferFn fn) { table[static_cast<size_t>(op)] = fn; };
  // Abs and Sign are defined on every numeric type in ONNX, unsigned included; Neg and Relu
  // only on signed ones.
  set(Op::kAbs, infer_unary<kNumericTypes>);
  set(Op::kSign, infer_unary<kNumericTypes>);
  set(Op::kNeg, infer_unary<kSignedNumericTypes>);
  set(Op::kRelu, infer_unary<kSignedNumericTypes>);
  for (Op op : {Op::kExp,   Op::kLog,     Op::kSqrt,      Op::kReciprocal, Op::kTanh,
                Op::kErf,   Op::kSigmoid, Op::kHardSwish, Op::kSoftplus,   Op::kSoftsign,
                Op::kMish,  Op::kSin,     Op::kCos,       Op::kTan,        Op::kAsin,
                Op::kAcos,  Op::kAtan,    Op::kSinh,      Op::kCosh,       Op::kAsinh,
                Op::kAcosh, Op::kAtanh,   Op::kFloor,     Op::kCeil,       Op::kRound}) {
    set(op, infer_unary<kFloatTypes>);
  }
  for (Op op :
       {Op::kLeakyRelu, Op::kElu, Op::kSelu, Op::kCelu, Op::kThresholdedRelu, Op::kHardSigmoid}) {
    set(op, infer_float_activation);
  }
  set(Op::kGelu, infer_gelu);
  set(Op::kNot, infer_unary<kBoolType>);
  set(Op::kBitwiseNot, infer_unary<kIntegerTypes>);
  set(Op::kIsNaN, infer_is_nan);
  set(Op::kIsInf, infer_is_inf);
  set(Op::kCast, infer_cast);
  set(Op::kCastLike, infer_cast_like);
  set(Op::kIdentity, infer_unary<kAllTypes>);
  set(Op::kDropout, infer_dropout);
  register_broadcast_infer(table);
}

}  // namespace gf
