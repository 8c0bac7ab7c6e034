// Sliding-window geometry and shape inference for Conv, MaxPool, AveragePool and the global
// pools. Output sizes follow the ONNX spec (opset 22): floor (or ceil with ceil_mode, dropping a
// last window that would start in the end padding) of (in + pads - extent) / stride + 1;
// SAME_* gives ceil(in / stride) with the padding split (odd remainder at the end for
// SAME_UPPER, at the beginning for SAME_LOWER).
#include <algorithm>

#include "ir/infer_linear_family.h"

namespace gf {

namespace {

std::string list_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

[[noreturn]] void bad_attr(const std::string& msg) {
  throw Error(ErrorCode::kInvalidGraph, msg);
}

std::vector<int64_t> per_axis(const Attributes& attrs, const char* name, size_t count,
                              int64_t fallback, int64_t min_value) {
  if (!attrs.has(name)) return std::vector<int64_t>(count, fallback);
  std::vector<int64_t> v = attrs.get_ints(name);
  if (v.size() != count) {
    bad_attr(std::string("attribute '") + name + "' " + list_string(v) + " must have " +
             std::to_string(count) + " entries");
  }
  for (int64_t x : v) {
    if (x < min_value) {
      bad_attr(std::string("attribute '") + name + "' " + list_string(v) + " has an entry below " +
               std::to_string(min_value));
    }
  }
  return v;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

WindowAttrs read_window_attrs(const Attributes& attrs, std::vector<int64_t> kernel, bool pool) {
  WindowAttrs w;
  const size_t r = kernel.size();
  w.kernel = std::move(kernel);
  w.strides = per_axis(attrs, "strides", r, 1, 1);
  w.dilations = per_axis(attrs, "dilations", r, 1, 1);
  w.pads = per_axis(attrs, "pads", 2 * r, 0, 0);
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    w.auto_pad = WindowAttrs::AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    w.auto_pad = WindowAttrs::AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    w.auto_pad = WindowAttrs::AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    w.auto_pad = WindowAttrs::AutoPad::kValid;
  } else {
    bad_attr("attribute 'auto_pad' must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" +
             auto_pad + "'");
  }
  if (w.auto_pad != WindowAttrs::AutoPad::kNotSet &&
      std::any_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p != 0; })) {
    bad_attr("attribute 'pads' " + list_string(w.pads) +
             " cannot be combined with auto_pad=" + auto_pad);
  }
  if (pool) {
    const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
    if (ceil_mode != 0 && ceil_mode != 1) {
      bad_attr("attribute 'ceil_mode' must be 0 or 1, got " + std::to_string(ceil_mode));
    }
    w.ceil_mode = ceil_mode == 1;
  }
  return w;
}

AxisWindow resolve_window_axis(const WindowAttrs& w, size_t axis, int64_t in) {
  const int64_t stride = w.strides[axis];
  const int64_t extent = w.extent(axis);
  AxisWindow r;
  const bool same_upper = w.auto_pad == WindowAttrs::AutoPad::kSameUpper;
  if (same_upper || w.auto_pad == WindowAttrs::AutoPad::kSameLower) {
    r.out = ceil_div(in, stride);
    const int64_t total = std::max<int64_t>(0, (r.out - 1) * stride + extent - in);
    r.pad_begin = same_upper ? total / 2 : total - total / 2;
    r.pad_end = total - r.pad_begin;
    return r;
  }
  if (w.auto_pad == WindowAttrs::AutoPad::kNotSet) {
    r.pad_begin = w.pads[axis];
    r.pad_end = w.pads[axis + w.spatial_rank()];
  }
  const int64_t padded = in + r.pad_begin + r.pad_end;
  if (padded < extent) {
    throw Error(ErrorCode::kShapeMismatch,
                "spatial axis " + std::to_string(axis) + ": padded input size " +
                    std::to_string(padded) + " is smaller than the window extent " +
                    std::to_string(extent) + " (kernel " + std::to_string(w.kernel[axis]) +
                    ", dilation " + std::to_string(w.dilations[axis]) + ")");
  }
  if (!w.ceil_mode) {
    r.out = (padded - extent) / stride + 1;
  } else {
    r.out = ceil_div(padded - extent, stride) + 1;
    // A last window starting inside the end padding is dropped (ONNX / PyTorch rule).
    if ((r.out - 1) * stride >= in + r.pad_begin) --r.out;
  }
  return r;
}

int64_t padding_only_window(const WindowAttrs& w, size_t axis, const AxisWindow& a, int64_t in) {
  for (int64_t o = 0; o < a.out; ++o) {
    bool touches = false;
    for (int64_t t = 0; t < w.kernel[axis] && !touches; ++t) {
      const int64_t at = o * w.strides[axis] - a.pad_begin + t * w.dilations[axis];
      touches = at >= 0 && at < in;
    }
    if (!touches) return o;
  }
  return -1;
}

namespace {

// Output spatial dims of a window op over X (rank >= 3); unknown where the input dim is. With
// `need_input`, a window that covers only padding is an error (it has no max, no average).
std::vector<Dim> window_output_dims(const InferContext& ctx, const WindowAttrs& w,
                                    bool need_input = false) {
  const Shape& x = ctx.shape(0);
  std::vector<Dim> out;
  for (size_t i = 0; i < w.spatial_rank(); ++i) {
    const Dim& in = x[i + 2];
    if (!in.is_static()) {
      out.push_back(Dim::unknown());
      continue;
    }
    AxisWindow a;
    try {
      a = resolve_window_axis(w, i, in.value());
    } catch (const Error& e) {
      ctx.fail(e.what(), e.code());
    }
    const int64_t empty = need_input ? padding_only_window(w, i, a, in.value()) : -1;
    if (empty >= 0) {
      ctx.fail("spatial axis " + std::to_string(i) + ": window " + std::to_string(empty) +
                   " covers only padding (pads " + std::to_string(a.pad_begin) + "/" +
                   std::to_string(a.pad_end) + ", kernel " + std::to_string(w.kernel[i]) +
                   ", dilation " + std::to_string(w.dilations[i]) + ")",
               ErrorCode::kUnsupported);
    }
    out.emplace_back(a.out);
  }
  return out;
}

WindowAttrs window_attrs(const InferContext& ctx, std::vector<int64_t> kernel, bool pool) {
  try {
    return read_window_attrs(ctx.attrs(), std::move(kernel), pool);
  } catch (const Error& e) {
    ctx.fail(e.what(), e.code());
  }
}

void expect_spatial_input(const InferContext& ctx) {
  if (ctx.rank(0) < 3) {
    ctx.fail("X must have rank >= 3 ([N, C, spatial...]), got " + ctx.shape(0).to_string());
  }
}

// kernel_shape of a pool: required, one entry >= 1 per spatial axis.
std::vector<int64_t> pool_kernel(const InferContext& ctx) {
  const size_t r = ctx.rank(0) - 2;
  if (!ctx.attrs().has("kernel_shape")) {
    ctx.fail("attribute 'kernel_shape' is required", ErrorCode::kInvalidGraph);
  }
  std::vector<int64_t> k = attr_ints(ctx, "kernel_shape");
  if (k.size() != r || std::any_of(k.begin(), k.end(), [](int64_t v) { return v < 1; })) {
    ctx.fail("attribute 'kernel_shape' " + list_string(k) + " must have " + std::to_string(r) +
                 " entries >= 1",
             ErrorCode::kInvalidGraph);
  }
  return k;
}

// `need_input`: every window must touch the input (MaxPool; AveragePool without padding counts).
std::vector<TensorType> infer_pool(InferContext& ctx, std::initializer_list<DType> dtypes,
                                   bool need_input) {
  ctx.expect_dtype(0, dtypes);
  expect_spatial_input(ctx);
  const WindowAttrs w = window_attrs(ctx, pool_kernel(ctx), /*pool=*/true);
  std::vector<Dim> out{ctx.shape(0)[0], ctx.shape(0)[1]};
  for (Dim& d : window_output_dims(ctx, w, need_input)) out.push_back(std::move(d));
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_max_pool(InferContext& ctx) {
  // storage_order only shapes the optional Indices output, which the op table does not offer.
  const int64_t order = attr_int(ctx, "storage_order", 0);
  if (order != 0 && order != 1) {
    ctx.fail("attribute 'storage_order' must be 0 or 1, got " + std::to_string(order),
             ErrorCode::kInvalidGraph);
  }
  return infer_pool(ctx,
                    {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8},
                    /*need_input=*/true);
}

std::vector<TensorType> infer_average_pool(InferContext& ctx) {
  const bool count_pad = attr_flag(ctx, "count_include_pad", false);
  return infer_pool(ctx, {DType::kF32, DType::kF16, DType::kBF16, DType::kF64},
                    /*need_input=*/!count_pad);
}

std::vector<TensorType> infer_global_pool(InferContext& ctx) {
  ctx.expect_float(0);
  expect_spatial_input(ctx);
  const Shape& x = ctx.shape(0);
  const bool empty_plane = std::any_of(
      x.begin() + 2, x.end(), [](const Dim& d) { return d.is_static() && d.value() == 0; });
  if (empty_plane && ctx.node().op == Op::kGlobalMaxPool) {
    ctx.fail("the max over an empty spatial extent is undefined");
  }
  std::vector<Dim> out{x[0], x[1]};
  out.resize(x.rank(), Dim(1));
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

std::vector<TensorType> infer_conv(InferContext& ctx) {
  ctx.expect_float(0);
  ctx.expect_same_dtype(0, 1);
  expect_spatial_input(ctx);
  const Shape& x = ctx.shape(0);
  const Shape& wt = ctx.shape(1);
  if (wt.rank() != x.rank()) {
    ctx.fail("W " + wt.to_string() + " must have the rank of X " + x.to_string());
  }
  const size_t r = x.rank() - 2;
  const int64_t group = attr_int(ctx, "group", 1);
  if (group < 1) {
    ctx.fail("attribute 'group' must be >= 1, got " + std::to_string(group),
             ErrorCode::kInvalidGraph);
  }
  const Dim& channels = x[1];
  const Dim& filters = wt[0];
  if (channels.is_static() && wt[1].is_static() && channels.value() != wt[1].value() * group) {
    ctx.fail("X has " + channels.to_string() + " channels but W expects " + wt[1].to_string() +
             " per group x " + std::to_string(group) + " groups");
  }
  if (filters.is_static() && filters.value() % group != 0) {
    ctx.fail("W's " + filters.to_string() + " output channels do not split into " +
             std::to_string(group) + " groups");
  }
  if (ctx.has_input(2)) {
    ctx.expect_same_dtype(0, 2);
    ctx.expect_rank(2, 1);
    const Dim& bias = ctx.shape(2)[0];
    if (bias.is_static() && filters.is_static() && bias.value() != filters.value()) {
      ctx.fail("B has " + bias.to_string() + " entries for " + filters.to_string() +
               " output channels");
    }
  }
  // The kernel comes from W; the optional attribute must agree with it.
  std::vector<int64_t> kernel;
  bool kernel_known = true;
  for (size_t i = 0; i < r; ++i) {
    kernel_known = kernel_known && wt[i + 2].is_static();
    kernel.push_back(wt[i + 2].value());
  }
  if (ctx.attrs().has("kernel_shape")) {
    const std::vector<int64_t> k = attr_ints(ctx, "kernel_shape");
    bool agrees = k.size() == r;
    for (size_t i = 0; agrees && i < r; ++i) {
      agrees = k[i] >= 1 && (!wt[i + 2].is_static() || wt[i + 2].value() == k[i]);
    }
    if (!agrees) {
      ctx.fail("attribute 'kernel_shape' " + list_string(k) + " does not match W " + wt.to_string(),
               ErrorCode::kInvalidGraph);
    }
    kernel = k;
    kernel_known = true;
  }
  std::vector<Dim> out{x[0], filters};
  if (kernel_known) {
    if (std::any_of(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; })) {
      ctx.fail("W " + wt.to_string() + " has an empty kernel");
    }
    const WindowAttrs w = window_attrs(ctx, kernel, /*pool=*/false);
    for (Dim& d : window_output_dims(ctx, w)) out.push_back(std::move(d));
  } else {
    window_attrs(ctx, std::vector<int64_t>(r, 1), /*pool=*/false);  // still validate
    out.resize(x.rank(), Dim::unknown());
  }
  return {TensorType{ctx.dtype(0), Shape(std::move(out))}};
}

// Channels last to channels first: [N, spatial..., C] -> [N, C, spatial...].
Shape channels_first(const Shape& s) {
  std::vector<Dim> d = s.dims();
  if (d.size() >= 3) std::rotate(d.begin() + 1, d.end() - 1, d.end());
  return Shape(std::move(d));
}

// NhwcConv: Conv's rules on the channels-first view of X and W, its output moved back.
std::vector<TensorType> infer_nhwc_conv(InferContext& ctx) {
  std::vector<TensorType> types;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    types.push_back(ctx.has_input(i) ? ctx.input(i) : TensorType{});
    if (i < 2) types.back().shape = channels_first(types.back().shape);
  }
  std::vector<const TensorType*> type_ptrs;
  std::vector<const Tensor*> values(types.size(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    type_ptrs.push_back(ctx.has_input(i) ? &types[static_cast<size_t>(i)] : nullptr);
  InferContext as_conv(ctx.node(), type_ptrs, values);
  std::vector<TensorType> out;
  try {
    out = infer_conv(as_conv);
  } catch (const Error& e) {  // name the node's own shapes too, not only the transposed ones
    ctx.fail(std::string("as Conv on its channels-first view: ") + e.what(), e.code());
  }
  std::vector<Dim> d = out[0].shape.dims();
  if (d.size() >= 3) std::rotate(d.begin() + 1, d.begin() + 2, d.end());
  out[0].shape = Shape(std::move(d));
  return out;
}

}  // namespace

void register_window_infer(InferTable& table) {
  table[static_cast<size_t>(Op::kConv)] = infer_conv;
  table[static_cast<size_t>(Op::kNhwcConv)] = infer_nhwc_conv;
  table[static_cast<size_t>(Op::kMaxPool)] = infer_max_pool;
  table[static_cast<size_t>(Op::kAveragePool)] = infer_average_pool;
  table[static_cast<size_t>(Op::kGlobalAveragePool)] = infer_global_pool;
  table[static_cast<size_t>(Op::kGlobalMaxPool)] = infer_global_pool;
}

}  // namespace gf
