// Shape inference for GatherND (ONNX opset 13). With b = batch_dims and k = the last dim of
// indices, each k-tuple of indices picks a slice of data along axes [b, b + k):
//   data [D0..D(r-1)], indices [D0..D(b-1), I(b)..I(q-2), k] -> [D0..D(b-1), I(b)..I(q-2),
//   D(b+k)..]
// The output rank depends on k, so k must be static even at build time.
#include <algorithm>

#include "ir/infer_gather_nd.h"
#include "ir/infer_layout_family.h"

namespace gf::layout {

namespace {

// The batch dim shared by data and indices: the static one wins; nullopt when both are static
// and differ.
std::optional<Dim> merge_batch_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static())
    return a.value() == b.value() ? std::optional(a) : std::nullopt;
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return a.is_symbolic() ? a : b;
}

std::vector<TensorType> infer_gather_nd(InferContext& ctx) {
  ctx.expect_dtype(1, {DType::kI64});
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const auto r = static_cast<int64_t>(data.rank());
  const auto q = static_cast<int64_t>(indices.rank());
  if (r == 0) ctx.fail("cannot gather from a scalar (data must have rank >= 1)");
  if (q == 0) ctx.fail("indices must have rank >= 1 (a tensor of index tuples), got a scalar");
  const int64_t b = ctx.attrs().get_int("batch_dims", 0);
  if (b < 0 || b >= std::min(r, q)) {
    ctx.fail("batch_dims " + std::to_string(b) + " is out of range [0, " +
                 std::to_string(std::min(r, q)) + ") (it must be less than both ranks)",
             ErrorCode::kInvalidGraph);
  }
  const Dim& tuple = indices[static_cast<size_t>(q - 1)];
  if (!tuple.is_static()) {
    ctx.fail("the last dim of indices ('" + tuple.to_string() +
                 "', the index tuple length) is dynamic, so the output rank is unknown",
             ErrorCode::kUnsupported);
  }
  const int64_t k = tuple.value();
  if (k < 1 || k > r - b) {
    ctx.fail("index tuples have " + std::to_string(k) + " entries; with batch_dims " +
             std::to_string(b) + " they must have 1 to " + std::to_string(r - b));
  }

  std::vector<Dim> out;
  for (size_t i = 0; i < static_cast<size_t>(b); ++i) {
    const std::optional<Dim> merged = merge_batch_dim(data[i], indices[i]);
    if (!merged) {
      ctx.fail("batch dim " + std::to_string(i) + " differs: data has " + data[i].to_string() +
               ", indices have " + indices[i].to_string());
    }
    out.push_back(*merged);
  }
  for (int64_t i = b; i < q - 1; ++i) out.push_back(indices[static_cast<size_t>(i)]);
  for (int64_t i = b + k; i < r; ++i) out.push_back(data[static_cast<size_t>(i)]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

}  // namespace

void register_gather_nd_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kGatherND)] = with_node_context<infer_gather_nd>;
}

}  // namespace gf::layout
