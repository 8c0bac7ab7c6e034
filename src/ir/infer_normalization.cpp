// Shape inference for Softmax, LogSoftmax, LayerNormalization and RMSNormalization (part of the
// reduction family; registered through register_reduction_infer).
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/infer.h"
#include "ir/infer_reduction_family.h"

namespace gf {

namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                                      DType::kF64};

// The normalized axis of X (input 0), which must have rank >= 1.
int64_t normalized_axis(const InferContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.rank(0));
  if (rank == 0) ctx.fail("input 0 must have rank >= 1");
  return ctx.normalize_axis(int_attr(ctx, "axis", -1), rank);
}

void check_stash_type(const InferContext& ctx) {
  const int64_t stash = int_attr(ctx, "stash_type", kStashFloat);
  if (stash != kStashFloat) {
    ctx.fail("stash_type " + std::to_string(stash) + " is not supported (only 1, float32)",
             ErrorCode::kUnsupported);
  }
}

// Scale and bias must broadcast one-directionally onto X (ONNX) and, here, vary only over the
// normalized dims [axis, rank): a per-row scale is valid ONNX that no kernel of ours handles.
void check_affine_input(const InferContext& ctx, int i, int64_t axis, const std::string& what) {
  const Shape& x = ctx.shape(0);
  const Shape& s = ctx.shape(i);
  if (s.rank() > x.rank()) {
    ctx.fail(what + " " + s.to_string() + " has a higher rank than X " + x.to_string());
  }
  const size_t lead = x.rank() - s.rank();
  for (size_t k = 0; k < s.rank(); ++k) {
    const Dim& sd = s[k];
    const Dim& xd = x[lead + k];
    if (sd.is_static() && sd.value() == 1) continue;
    if (sd.is_static() && xd.is_static() && sd.value() != xd.value()) {
      ctx.fail(what + " " + s.to_string() + " does not broadcast to X " + x.to_string());
    }
    // A symbolic dim may still be 1; run time (all dims static) decides.
    if (static_cast<int64_t>(lead + k) < axis && sd.is_static()) {
      ctx.fail(what + " " + s.to_string() + " varies over dim " + std::to_string(lead + k) +
                   " of X " + x.to_string() + ", before the normalized axis " +
                   std::to_string(axis),
               ErrorCode::kUnsupported);
    }
  }
}

std::vector<TensorType> infer_softmax(InferContext& ctx) {
  ctx.expect_dtype(0, kFloatTypes);
  normalized_axis(ctx);
  return {ctx.input(0)};
}

// Outputs Y (X's type), then Mean and InvStdDev (float32, X's shape with the normalized dims
// set to 1); a node may use only the first one or two.
std::vector<TensorType> infer_layer_norm(InferContext& ctx) {
  ctx.expect_dtype(0, kFloatTypes);
  const int64_t axis = normalized_axis(ctx);
  check_stash_type(ctx);
  float_attr(ctx, "epsilon", 1e-5f);
  ctx.expect_same_dtype(0, 1);
  check_affine_input(ctx, 1, axis, "Scale");
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    check_affine_input(ctx, 2, axis, "B");
  }
  std::vector<Dim> stat_dims = ctx.shape(0).dims();
  for (size_t d = static_cast<size_t>(axis); d < stat_dims.size(); ++d) stat_dims[d] = Dim(1);
  const TensorType stat{DType::kF32, Shape(std::move(stat_dims))};
  return {ctx.input(0), stat, stat};
}

// RMSNormalization (opset 23): the scale may have a different float type than X.
std::vector<TensorType> infer_rms_norm(InferContext& ctx) {
  ctx.expect_dtype(0, kFloatTypes);
  ctx.expect_dtype(1, kFloatTypes);
  const int64_t axis = normalized_axis(ctx);
  check_stash_type(ctx);
  float_attr(ctx, "epsilon", 1e-5f);
  check_affine_input(ctx, 1, axis, "scale");
  return {ctx.input(0)};
}

}  // namespace

void register_normalization_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kSoftmax)] = infer_softmax;
  table[static_cast<size_t>(Op::kLogSoftmax)] = infer_softmax;
  table[static_cast<size_t>(Op::kLayerNormalization)] = infer_layer_norm;
  table[static_cast<size_t>(Op::kRMSNormalization)] = infer_rms_norm;
}

}  // namespace gf
