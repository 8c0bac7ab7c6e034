// Shape inference for the elementwise and broadcast op family.
#include "ir/infer.h"

namespace gf {

namespace {

std::vector<TensorType> infer_same_as_input(InferContext& ctx) { return {ctx.input(0)}; }

std::vector<TensorType> infer_arith_binary(InferContext& ctx) {
  ctx.expect_same_dtype(0, 1);
  return {TensorType{ctx.dtype(0), ctx.broadcast(ctx.shape(0), ctx.shape(1))}};
}

}  // namespace

void register_elementwise_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kRelu)] = infer_same_as_input;
  table[static_cast<size_t>(Op::kIdentity)] = infer_same_as_input;
  table[static_cast<size_t>(Op::kAdd)] = infer_arith_binary;
}

}  // namespace gf
