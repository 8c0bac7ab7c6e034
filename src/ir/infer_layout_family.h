// Shared pieces of the layout family's shape inference (infer_layout*.cpp); private to it.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/infer.h"

namespace gf::layout {

// Data-dependent outputs (Range, ConstantOfShape, Expand, Tile, Pad) larger than this are
// refused before anything is allocated: such a size is a corrupt model, not a workload.
inline constexpr int64_t kMaxOutputElements = int64_t{1} << 40;

// The sub-families, registered by register_layout_infer.
void register_indexing_infer(InferTable& table);
void register_shape_producer_infer(InferTable& table);

// Wraps an inference function so that errors raised without the node's context (a wrongly
// typed attribute, say) are re-raised through ctx.fail, naming the node, op and input types.
template <InferFn Fn>
std::vector<TensorType> with_node_context(InferContext& ctx) {
  try {
    return Fn(ctx);
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("node '")) throw;
    ctx.fail(e.what(), e.code());
  }
}

// Checks that input `i` (named `what` in messages) is 1-D with one of the `allowed` dtypes.
void expect_int_vector(const InferContext& ctx, int i, std::initializer_list<DType> allowed,
                       const char* what);
// Checks that input `i` holds one element: a scalar, or 1-D of length 1 as some exporters write.
void expect_scalar(const InferContext& ctx, int i, const char* what);
// The static length of the 1-D input `i`, or nullopt when its one dim is not static.
std::optional<int64_t> vector_length(const InferContext& ctx, int i);
// Like vector_length, but a dynamic length fails with kUnsupported: the output rank would be
// unknown, which a Shape cannot express.
int64_t required_vector_length(const InferContext& ctx, int i, const char* what);
// Axes made non-negative for `rank`; out-of-range and repeated axes fail (kInvalidGraph).
std::vector<int64_t> normalize_axes(const InferContext& ctx, std::vector<int64_t> axes,
                                    int64_t rank, const char* what);
// Target dims read from a shape-like operand; negative entries fail.
std::vector<int64_t> expect_non_negative(const InferContext& ctx, std::vector<int64_t> values,
                                         const char* what);
// Product of dims: static when all are, 0 when any is a static 0, the lone non-static dim when
// every other is 1, unknown otherwise.
Dim dim_product(std::span<const Dim> dims);
// Fails with kInvalidArgument when a static `shape` has more than kMaxOutputElements elements.
void check_output_size(const InferContext& ctx, const Shape& shape);
// "[1,2,3]", for messages about operand values.
std::string ints_to_string(const std::vector<int64_t>& values);

}  // namespace gf::layout
