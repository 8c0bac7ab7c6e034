// Shape inference for the reduction op family: Reduce*, ArgMax/ArgMin and CumSum here;
// softmax and the normalizations in infer_normalization.cpp.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "ir/infer.h"
#include "ir/infer_reduction_family.h"

namespace gf {

namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                      DType::kF64};
// ONNX's numeric reductions take float and 32/64-bit integer types.
constexpr std::initializer_list<DType> kNumericTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                        DType::kF64, DType::kI64, DType::kI32};
// ReduceMax/ReduceMin (opset 20) also take 8-bit integers and bool.
constexpr std::initializer_list<DType> kOrderedTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                        DType::kF64, DType::kI64, DType::kI32,
                                                        DType::kI8,  DType::kU8,  DType::kBool};
// ArgMax/ArgMin: every numeric type, no bool.
constexpr std::initializer_list<DType> kArgTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                    DType::kF64, DType::kI64, DType::kI32,
                                                    DType::kI8,  DType::kU8};

std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Marks the dims that `axes` reduces. Empty axes reduce every dim, or none when `noop`.
// Fails on an axis out of [-rank, rank) or an axis named twice.
std::vector<bool> reduced_dims(const InferContext& ctx, const std::vector<int64_t>& axes,
                               int64_t rank, bool noop) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      ctx.fail("axes " + ints_to_string(axes) + ": axis " + std::to_string(a) +
                   " is out of range for rank " + std::to_string(rank),
               ErrorCode::kInvalidGraph);
    }
    const size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduced[d]) {
      ctx.fail("axes " + ints_to_string(axes) + " names dim " + std::to_string(d) + " twice",
               ErrorCode::kInvalidGraph);
    }
    reduced[d] = true;
  }
  return reduced;
}

// The output shape when the axes input's data is unknown (build time, non-constant axes).
Shape reduce_shape_unknown_axes(const InferContext& ctx, bool keepdims) {
  const Shape& in = ctx.shape(0);
  if (keepdims) {
    // Any dim may become 1; a dim that is 1 already stays 1.
    std::vector<Dim> dims;
    for (const Dim& d : in) dims.push_back(d.is_static() && d.value() == 1 ? d : Dim::unknown());
    return Shape(std::move(dims));
  }
  const Dim& n = ctx.shape(1)[0];
  if (!n.is_static()) {
    ctx.fail(
        "with keepdims=0 the axes input must be a constant or have a static length, "
        "otherwise the output rank is unknown",
        ErrorCode::kUnsupported);
  }
  if (n.value() > static_cast<int64_t>(in.rank())) {
    ctx.fail(
        "axes has " + std::to_string(n.value()) + " entries for rank " + std::to_string(in.rank()),
        ErrorCode::kInvalidGraph);
  }
  return Shape::unknown_of_rank(in.rank() - static_cast<size_t>(n.value()));
}

std::vector<TensorType> infer_reduce(InferContext& ctx) {
  switch (ctx.node().op) {
    case Op::kReduceMax:
    case Op::kReduceMin:
      ctx.expect_dtype(0, kOrderedTypes);
      break;
    case Op::kReduceLogSum:
    case Op::kReduceLogSumExp:
      ctx.expect_dtype(0, kFloatTypes);
      break;
    default:
      ctx.expect_dtype(0, kNumericTypes);
      break;
  }
  if (ctx.attrs().has("axes")) {
    ctx.fail("'axes' is an input (ONNX opset 18 form), not an attribute", ErrorCode::kInvalidGraph);
  }
  const bool keepdims = flag_attr(ctx, "keepdims", true);
  const bool noop = flag_attr(ctx, "noop_with_empty_axes", false);
  const Shape& in = ctx.shape(0);
  const int64_t rank = static_cast<int64_t>(in.rank());

  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
  if (ctx.has_input(1)) {
    ctx.expect_dtype(1, {DType::kI64});
    ctx.expect_rank(1, 1);
    const Dim& n = ctx.shape(1)[0];
    axes = n.is_static() && n.value() == 0 ? std::vector<int64_t>{} : ctx.int_values(1);
  }
  if (!axes) return {TensorType{ctx.dtype(0), reduce_shape_unknown_axes(ctx, keepdims)}};

  const std::vector<bool> reduced = reduced_dims(ctx, *axes, rank, noop);
  std::vector<Dim> dims;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (!reduced[d]) {
      dims.push_back(in[d]);
    } else if (keepdims) {
      dims.push_back(Dim(1));
    }
  }
  return {TensorType{ctx.dtype(0), Shape(std::move(dims))}};
}

// ArgMax/ArgMin: i64 indices along one axis.
std::vector<TensorType> infer_arg_reduce(InferContext& ctx) {
  ctx.expect_dtype(0, kArgTypes);
  const Shape& in = ctx.shape(0);
  if (in.rank() == 0) ctx.fail("input 0 must have rank >= 1");
  const int64_t axis =
      ctx.normalize_axis(int_attr(ctx, "axis", 0), static_cast<int64_t>(in.rank()));
  const bool keepdims = flag_attr(ctx, "keepdims", true);
  flag_attr(ctx, "select_last_index", false);  // validated here, read by the kernel
  const Dim& len = in[static_cast<size_t>(axis)];
  if (len.is_static() && len.value() == 0) {
    ctx.fail("cannot take the index of an extreme along axis " + std::to_string(axis) +
             ", which is empty");
  }
  std::vector<Dim> dims;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (d != static_cast<size_t>(axis)) {
      dims.push_back(in[d]);
    } else if (keepdims) {
      dims.push_back(Dim(1));
    }
  }
  return {TensorType{DType::kI64, Shape(std::move(dims))}};
}

// CumSum: input 1 is the axis, a 0-D or one-element integer tensor.
std::vector<TensorType> infer_cumsum(InferContext& ctx) {
  ctx.expect_dtype(0, kNumericTypes);
  ctx.expect_dtype(1, {DType::kI64, DType::kI32});
  const int64_t rank = static_cast<int64_t>(ctx.rank(0));
  if (rank == 0) ctx.fail("input 0 must have rank >= 1");
  const Shape& axis_shape = ctx.shape(1);
  const bool one_element =
      axis_shape.rank() == 0 ||
      (axis_shape.rank() == 1 && (!axis_shape[0].is_static() || axis_shape[0].value() == 1));
  if (!one_element) ctx.fail("the axis input must be 0-D or hold one element");
  if (auto axis = ctx.int_values(1)) ctx.normalize_axis(axis->at(0), rank);
  flag_attr(ctx, "exclusive", false);
  flag_attr(ctx, "reverse", false);
  return {ctx.input(0)};
}

}  // namespace

void register_reduction_infer(InferTable& table) {
  for (Op op : {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceMin, Op::kReduceProd,
                Op::kReduceL1, Op::kReduceL2, Op::kReduceSumSquare, Op::kReduceLogSum,
                Op::kReduceLogSumExp}) {
    table[static_cast<size_t>(op)] = infer_reduce;
  }
  table[static_cast<size_t>(Op::kArgMax)] = infer_arg_reduce;
  table[static_cast<size_t>(Op::kArgMin)] = infer_arg_reduce;
  table[static_cast<size_t>(Op::kCumSum)] = infer_cumsum;
  register_normalization_infer(table);
}

}  // namespace gf
