// Shape inference for the layout family's indexing ops: Slice, Gather, GatherElements, Expand,
// Tile, Pad, Trilu.
#include <limits>

#include "ir/infer_layout_family.h"
#include "ir/layout_rules.h"

namespace gf::layout {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// A slice of a dynamic dim whose size is still known: the whole dim, forwards or backwards,
// written with the sentinels exporters use for "to the end".
bool slices_whole_dim(int64_t start, int64_t end, int64_t step) {
  if (step == 1) return start == 0 && end == kInt64Max;
  if (step == -1) return (start == -1 || start == kInt64Max) && end == kInt64Min;
  return false;
}

std::vector<TensorType> infer_slice(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int64_t r = static_cast<int64_t>(in.rank());
  const char* names[] = {"data", "starts", "ends", "axes", "steps"};
  for (int i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    expect_int_vector(ctx, i, {DType::kI32, DType::kI64}, names[i]);
    ctx.expect_same_dtype(1, i);
  }
  // Every operand present must have the same length.
  std::optional<int64_t> len;
  for (int i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    const std::optional<int64_t> n = vector_length(ctx, i);
    if (n && len && *n != *len) {
      ctx.fail(std::string(names[i]) + " has " + std::to_string(*n) + " entries, starts has " +
               std::to_string(*len));
    }
    if (n && !len) len = n;
  }
  Shape out = in;
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(3)) {
    axes = ctx.int_values(3);
    if (!axes) return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(in.rank())}};
    axes = normalize_axes(ctx, *axes, r, "axes");
  } else {
    if (len && *len > r) {
      ctx.fail("starts has " + std::to_string(*len) + " entries for rank " + std::to_string(r));
    }
    if (!len) return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(in.rank())}};
    axes.emplace();
    for (int64_t a = 0; a < *len; ++a) axes->push_back(a);
  }
  const std::optional<std::vector<int64_t>> starts = ctx.int_values(1);
  const std::optional<std::vector<int64_t>> ends = ctx.int_values(2);
  std::optional<std::vector<int64_t>> steps =
      ctx.has_input(4) ? ctx.int_values(4) : std::vector<int64_t>(axes->size(), 1);
  if (steps) {
    for (int64_t s : *steps)
      if (s == 0) ctx.fail("steps " + ints_to_string(*steps) + " contain 0");
  }
  for (size_t i = 0; i < axes->size(); ++i) {
    Dim& d = out[static_cast<size_t>((*axes)[i])];
    if (!starts || !ends || !steps) {
      d = Dim::unknown();
    } else if (d.is_static()) {
      d = Dim(resolve_slice_axis(d.value(), (*starts)[i], (*ends)[i], (*steps)[i]).count);
    } else if (!slices_whole_dim((*starts)[i], (*ends)[i], (*steps)[i])) {
      d = Dim::unknown();
    }
  }
  return {TensorType{ctx.dtype(0), std::move(out)}};
}

std::vector<TensorType> infer_gather(InferContext& ctx) {
  ctx.expect_dtype(1, {DType::kI32, DType::kI64});
  const Shape& data = ctx.shape(0);
  if (data.rank() == 0) ctx.fail("cannot gather from a scalar");
  const size_t axis = static_cast<size_t>(
      ctx.normalize_axis(ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.rank())));
  std::vector<Dim> out(data.dims().begin(), data.dims().begin() + static_cast<ptrdiff_t>(axis));
  for (const Dim& d : ctx.shape(1)) out.push_back(d);
  for (size_t i = axis + 1; i < data.rank(); ++i) out.push_back(data[i]);
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_gather_elements(InferContext& ctx) {
  ctx.expect_dtype(1, {DType::kI32, DType::kI64});
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  if (data.rank() == 0) ctx.fail("cannot gather from a scalar");
  if (indices.rank() != data.rank()) {
    ctx.fail("indices must have the rank of data (" + std::to_string(data.rank()) + ")");
  }
  const size_t axis = static_cast<size_t>(
      ctx.normalize_axis(ctx.attrs().get_int("axis", 0), static_cast<int64_t>(data.rank())));
  for (size_t d = 0; d < data.rank(); ++d) {
    if (d == axis || !data[d].is_static() || !indices[d].is_static()) continue;
    if (indices[d].value() > data[d].value()) {
      ctx.fail("indices dim " + std::to_string(d) + " (" + std::to_string(indices[d].value()) +
               ") exceeds the data dim (" + std::to_string(data[d].value()) + ")");
    }
  }
  return {TensorType{ctx.dtype(0), indices}};
}

std::vector<TensorType> infer_expand(InferContext& ctx) {
  expect_int_vector(ctx, 1, {DType::kI64}, "shape");
  const Shape& in = ctx.shape(0);
  const std::optional<std::vector<int64_t>> target = ctx.int_values(1);
  if (!target) {
    // Rank is known from the operand's length; only dims fixed by the input survive.
    const size_t n = static_cast<size_t>(required_vector_length(ctx, 1, "shape"));
    const size_t r = std::max(n, in.rank());
    std::vector<Dim> out(r);
    for (size_t i = 0; i < in.rank(); ++i) {
      const Dim& d = in[i];
      if (d.is_static() && d.value() != 1) out[r - in.rank() + i] = d;
    }
    return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
  }
  const Shape to = Shape::from_static(expect_non_negative(ctx, *target, "shape"));
  Shape out = ctx.broadcast(in, to);
  check_output_size(ctx, out);
  return {TensorType{ctx.dtype(0), std::move(out)}};
}

std::vector<TensorType> infer_tile(InferContext& ctx) {
  expect_int_vector(ctx, 1, {DType::kI64}, "repeats");
  const Shape& in = ctx.shape(0);
  const std::optional<int64_t> len = vector_length(ctx, 1);
  if (len && *len != static_cast<int64_t>(in.rank())) {
    ctx.fail("repeats has " + std::to_string(*len) + " entries for rank " +
             std::to_string(in.rank()));
  }
  const std::optional<std::vector<int64_t>> repeats = ctx.int_values(1);
  if (!repeats) return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(in.rank())}};
  expect_non_negative(ctx, *repeats, "repeats");
  Shape out = in;
  for (size_t i = 0; i < in.rank(); ++i) {
    const int64_t rep = (*repeats)[i];
    if (in[i].is_static()) {
      int64_t v = 0;
      if (__builtin_mul_overflow(in[i].value(), rep, &v)) {
        ctx.fail("repeats " + ints_to_string(*repeats) + " overflow dim " + std::to_string(i),
                 ErrorCode::kInvalidArgument);
      }
      out[i] = Dim(v);
    } else if (rep != 1) {
      out[i] = rep == 0 ? Dim(0) : Dim::unknown();
    }
  }
  check_output_size(ctx, out);
  return {TensorType{ctx.dtype(0), std::move(out)}};
}

// One padded axis of a static size, checked; `mode` decides whether an empty axis may grow.
int64_t padded_dim(const InferContext& ctx, const std::string& mode, size_t axis, int64_t dim,
                   int64_t begin, int64_t end) {
  int64_t out = 0;
  if (__builtin_add_overflow(dim, begin, &out) || __builtin_add_overflow(out, end, &out)) {
    ctx.fail("pads " + std::to_string(begin) + ", " + std::to_string(end) + " overflow dim " +
                 std::to_string(axis),
             ErrorCode::kInvalidArgument);
  }
  // Negative pads crop first; the other modes then read what is left.
  const int64_t kept = dim - std::max<int64_t>(-begin, 0) - std::max<int64_t>(-end, 0);
  if (kept < 0 || out < 0) {
    ctx.fail("pads " + std::to_string(begin) + ", " + std::to_string(end) + " crop more than dim " +
             std::to_string(axis) + " of size " + std::to_string(dim));
  }
  if (mode != "constant" && kept == 0 && (begin > 0 || end > 0)) {
    ctx.fail("mode '" + mode + "' cannot pad axis " + std::to_string(axis) +
             ", which is empty after cropping");
  }
  return out;
}

std::vector<TensorType> infer_pad(InferContext& ctx) {
  expect_int_vector(ctx, 1, {DType::kI64}, "pads");
  const Shape& in = ctx.shape(0);
  const int64_t r = static_cast<int64_t>(in.rank());
  const std::string mode = ctx.attrs().get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    ctx.fail("unknown mode '" + mode + "' (expected constant, reflect, edge or wrap)",
             ErrorCode::kInvalidGraph);
  }
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    expect_scalar(ctx, 2, "constant_value");
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    expect_int_vector(ctx, 3, {DType::kI32, DType::kI64}, "axes");
    const std::optional<std::vector<int64_t>> given = ctx.int_values(3);
    if (!given) return {TensorType{ctx.dtype(0), Shape::unknown_of_rank(in.rank())}};
    axes = normalize_axes(ctx, *given, r, "axes");
  } else {
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  }
  const std::optional<int64_t> len = vector_length(ctx, 1);
  if (len && *len != 2 * static_cast<int64_t>(axes.size())) {
    ctx.fail("pads has " + std::to_string(*len) + " entries; expected " +
             std::to_string(2 * axes.size()) + " (begin and end for each of " +
             std::to_string(axes.size()) + " axes)");
  }
  const std::optional<std::vector<int64_t>> pads = ctx.int_values(1);
  Shape out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    if (!pads) {
      out[a] = Dim::unknown();
      continue;
    }
    const int64_t begin = (*pads)[i], end = (*pads)[axes.size() + i];
    if (in[a].is_static()) {
      out[a] = Dim(padded_dim(ctx, mode, a, in[a].value(), begin, end));
    } else if (begin != 0 || end != 0) {
      out[a] = Dim::unknown();
    }
  }
  check_output_size(ctx, out);
  return {TensorType{ctx.dtype(0), std::move(out)}};
}

std::vector<TensorType> infer_trilu(InferContext& ctx) {
  if (ctx.rank(0) < 2) ctx.fail("input must have rank >= 2 (matrices in the last two dims)");
  if (ctx.has_input(1)) {
    ctx.expect_dtype(1, {DType::kI64});
    expect_scalar(ctx, 1, "k");
  }
  return {ctx.input(0)};
}

}  // namespace

void register_indexing_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kSlice)] = with_node_context<infer_slice>;
  table[static_cast<size_t>(Op::kGather)] = with_node_context<infer_gather>;
  table[static_cast<size_t>(Op::kGatherElements)] = with_node_context<infer_gather_elements>;
  table[static_cast<size_t>(Op::kExpand)] = with_node_context<infer_expand>;
  table[static_cast<size_t>(Op::kTile)] = with_node_context<infer_tile>;
  table[static_cast<size_t>(Op::kPad)] = with_node_context<infer_pad>;
  table[static_cast<size_t>(Op::kTrilu)] = with_node_context<infer_trilu>;
}

}  // namespace gf::layout
