// Shape inference for the shape producers: Shape, Size, ConstantOfShape, Range. At build time
// they stay nodes even over static shapes (folding them is a pass's job); only their output
// types are inferred here.
#include <cmath>

#include "ir/infer_layout_family.h"
#include "ir/layout_rules.h"

namespace gf::layout {

namespace {

std::vector<TensorType> infer_shape(InferContext& ctx) {
  const int64_t r = static_cast<int64_t>(ctx.rank(0));
  const ShapeRange range =
      resolve_shape_range(r, ctx.attrs().get_int("start", 0), ctx.attrs().get_int("end", r));
  return {TensorType{DType::kI64, Shape{Dim(range.end - range.start)}}};
}

std::vector<TensorType> infer_size(InferContext& ctx) {
  (void)ctx.input(0);
  return {TensorType{DType::kI64, Shape{}}};
}

std::vector<TensorType> infer_constant_of_shape(InferContext& ctx) {
  expect_int_vector(ctx, 0, {DType::kI64}, "shape");
  DType dtype = DType::kF32;
  if (const Tensor* value = ctx.attrs().get_tensor("value")) {
    if (value->numel() != 1) {
      ctx.fail("attribute 'value' must hold one element, got " + value->type_string(),
               ErrorCode::kInvalidGraph);
    }
    dtype = value->dtype();
  }
  const std::optional<std::vector<int64_t>> dims = ctx.int_values(0);
  if (!dims) {
    const int64_t n = required_vector_length(ctx, 0, "shape");
    return {TensorType{dtype, Shape::unknown_of_rank(static_cast<size_t>(n))}};
  }
  Shape out = Shape::from_static(expect_non_negative(ctx, *dims, "shape"));
  check_output_size(ctx, out);
  return {TensorType{dtype, std::move(out)}};
}

// max(ceil((limit - start) / delta), 0) for integers, exact over the whole int64 range.
uint64_t integer_range_count(int64_t start, int64_t limit, int64_t delta) {
  if (delta > 0 && limit > start) {
    const uint64_t span = static_cast<uint64_t>(limit) - static_cast<uint64_t>(start);
    const uint64_t step = static_cast<uint64_t>(delta);
    return span / step + (span % step != 0);
  }
  if (delta < 0 && limit < start) {
    const uint64_t span = static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    const uint64_t step = uint64_t{0} - static_cast<uint64_t>(delta);
    return span / step + (span % step != 0);
  }
  return 0;
}

int64_t range_count(const InferContext& ctx, const Tensor& start, const Tensor& limit,
                    const Tensor& delta) {
  const auto fail_size = [&](const std::string& count) {
    ctx.fail("the range has " + count + " elements, more than 2^40", ErrorCode::kInvalidArgument);
  };
  if (is_floating(start.dtype())) {
    const double s = start.element_as_double(0), l = limit.element_as_double(0),
                 d = delta.element_as_double(0);
    if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
      ctx.fail("start, limit and delta must be finite, got " + std::to_string(s) + ", " +
                   std::to_string(l) + ", " + std::to_string(d),
               ErrorCode::kInvalidArgument);
    }
    if (d == 0) ctx.fail("delta must not be 0", ErrorCode::kInvalidArgument);
    const double count = std::ceil((l - s) / d);
    if (!(count <= static_cast<double>(kMaxOutputElements))) fail_size(std::to_string(count));
    return count > 0 ? static_cast<int64_t>(count) : 0;
  }
  const int64_t s = start.element_as_int(0), l = limit.element_as_int(0),
                d = delta.element_as_int(0);
  if (d == 0) ctx.fail("delta must not be 0", ErrorCode::kInvalidArgument);
  const uint64_t count = integer_range_count(s, l, d);
  if (count > static_cast<uint64_t>(kMaxOutputElements)) fail_size(std::to_string(count));
  return static_cast<int64_t>(count);
}

std::vector<TensorType> infer_range(InferContext& ctx) {
  ctx.expect_dtype(0,
                   {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64});
  const char* names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    ctx.expect_same_dtype(0, i);
    expect_scalar(ctx, i, names[i]);
  }
  const DType t = ctx.dtype(0);
  // stash_type holds an ONNX TensorProto code: 1 = float, 11 = double.
  const int64_t stash = ctx.attrs().get_int("stash_type", 1);
  if ((t == DType::kF16 || t == DType::kBF16) && stash != 1 && stash != 11) {
    ctx.fail("stash_type " + std::to_string(stash) + " is not supported (1 = f32, 11 = f64)",
             ErrorCode::kUnsupported);
  }
  const Tensor *start = ctx.value(0), *limit = ctx.value(1), *delta = ctx.value(2);
  if (!start || !limit || !delta) return {TensorType{t, Shape{Dim::unknown()}}};
  return {TensorType{t, Shape{Dim(range_count(ctx, *start, *limit, *delta))}}};
}

}  // namespace

void register_shape_producer_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kShape)] = with_node_context<infer_shape>;
  table[static_cast<size_t>(Op::kSize)] = with_node_context<infer_size>;
  table[static_cast<size_t>(Op::kConstantOfShape)] = with_node_context<infer_constant_of_shape>;
  table[static_cast<size_t>(Op::kRange)] = with_node_context<infer_range>;
}

}  // namespace gf::layout
