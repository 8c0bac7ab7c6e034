// Shape inference for the broadcast half of the elementwise family: binary arithmetic,
// comparisons, logic, variadic Min/Max/Sum/Mean, Where, Clip and PRelu (numpy broadcasting).
#include "ir/infer.h"
#include "ir/infer_elementwise_family.h"

namespace gf::elementwise_infer {

namespace {

// Two inputs of one dtype in kAllowed; the result has that dtype, or bool for comparisons.
template <DTypeMask kAllowed, bool kBoolOut>
std::vector<TensorType> infer_binary(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kAllowed);
  ctx.expect_same_dtype(0, 1);
  const Shape shape = ctx.broadcast(ctx.shape(0), ctx.shape(1));
  return {TensorType{kBoolOut ? DType::kBool : ctx.dtype(0), shape}};
}

// ONNX lets the exponent's type differ from the base's; the result has the base's type.
std::vector<TensorType> infer_pow(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kNumericTypes);
  expect_dtype_in(ctx, 1, kNumericTypes);
  return {TensorType{ctx.dtype(0), ctx.broadcast(ctx.shape(0), ctx.shape(1))}};
}

std::vector<TensorType> infer_mod(InferContext& ctx) {
  const int64_t fmod = attr_int(ctx, "fmod", 0);
  if (fmod != 0 && fmod != 1) {
    ctx.fail("attribute 'fmod' is " + std::to_string(fmod) + "; expected 0 or 1",
             ErrorCode::kInvalidGraph);
  }
  if (is_floating(ctx.dtype(0)) && fmod != 1) {
    ctx.fail("Mod of a float type requires fmod=1 (ONNX)", ErrorCode::kInvalidGraph);
  }
  return infer_binary<kNumericTypes, false>(ctx);
}

// Min/Max/Sum/Mean: any number of inputs of one dtype, all broadcast together.
template <DTypeMask kAllowed>
std::vector<TensorType> infer_variadic(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kAllowed);
  Shape shape = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    ctx.expect_same_dtype(0, i);
    shape = ctx.broadcast(shape, ctx.shape(i));
  }
  return {TensorType{ctx.dtype(0), shape}};
}

std::vector<TensorType> infer_where(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kBoolType);
  ctx.expect_same_dtype(1, 2);
  const Shape shape = ctx.broadcast(ctx.broadcast(ctx.shape(0), ctx.shape(1)), ctx.shape(2));
  return {TensorType{ctx.dtype(1), shape}};
}

// min and max are optional scalars of the input's dtype (see may_be_scalar).
std::vector<TensorType> infer_clip(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kNumericTypes);
  for (int i : {1, 2}) {
    if (!ctx.has_input(i)) continue;
    ctx.expect_same_dtype(0, i);
    if (!may_be_scalar(ctx.shape(i))) {
      ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
               ctx.shape(i).to_string());
    }
  }
  return {ctx.input(0)};
}

// The slope broadcasts to X one way only: the output always has X's shape.
std::vector<TensorType> infer_prelu(InferContext& ctx) {
  expect_dtype_in(ctx, 0, kSignedNumericTypes);
  ctx.expect_same_dtype(0, 1);
  const Shape& x = ctx.shape(0);
  const Shape& slope = ctx.shape(1);
  bool ok = slope.rank() <= x.rank();
  for (size_t i = 0; ok && i < slope.rank(); ++i) {
    const Dim& s = slope[i];
    const Dim& d = x[x.rank() - slope.rank() + i];
    const bool s_is_one = s.is_static() && s.value() == 1;
    const bool conflict = s.is_static() && d.is_static() && s.value() != d.value();
    ok = s_is_one || !conflict;
  }
  if (!ok) {
    ctx.fail("slope " + slope.to_string() + " does not broadcast to X " + x.to_string());
  }
  return {ctx.input(0)};
}

}  // namespace

void register_broadcast_infer(InferTable& table) {
  auto set = [&](Op op, InferFn fn) { table[static_cast<size_t>(op)] = fn; };
  for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv}) {
    set(op, infer_binary<kNumericTypes, false>);
  }
  set(Op::kPow, infer_pow);
  set(Op::kMod, infer_mod);
  set(Op::kMin, infer_variadic<kNumericTypes>);
  set(Op::kMax, infer_variadic<kNumericTypes>);
  set(Op::kSum, infer_variadic<kFloatTypes>);
  set(Op::kMean, infer_variadic<kFloatTypes>);
  set(Op::kEqual, infer_binary<kAllTypes, true>);
  for (Op op : {Op::kLess, Op::kLessOrEqual, Op::kGreater, Op::kGreaterOrEqual}) {
    set(op, infer_binary<kNumericTypes, true>);
  }
  for (Op op : {Op::kAnd, Op::kOr, Op::kXor}) set(op, infer_binary<kBoolType, false>);
  for (Op op : {Op::kBitwiseAnd, Op::kBitwiseOr, Op::kBitwiseXor}) {
    set(op, infer_binary<kIntegerTypes, false>);
  }
  set(Op::kPRelu, infer_prelu);
  set(Op::kWhere, infer_where);
  set(Op::kClip, infer_clip);
}

}  // namespace gf::elementwise_infer
