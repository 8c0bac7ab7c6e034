// Private to the linear/NN op family: attribute readers that name the node on failure, the
// sliding-window geometry shared by Conv and the pools (inference and reference kernels both use
// it, so the two can never disagree on an output size or a padding), and the per-file
// registration functions that register_linear_infer calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/infer.h"

namespace gf {

// Attribute reads whose failure (an attribute of the wrong kind) names the node, op and inputs.
int64_t attr_int(const InferContext& ctx, const std::string& name, int64_t fallback);
float attr_float(const InferContext& ctx, const std::string& name, float fallback);
std::string attr_string(const InferContext& ctx, const std::string& name,
                        const std::string& fallback);
std::vector<int64_t> attr_ints(const InferContext& ctx, const std::string& name);
// A 0/1 flag attribute; any other value fails with kInvalidGraph.
bool attr_flag(const InferContext& ctx, const std::string& name, bool fallback);

// The window attributes of Conv, MaxPool and AveragePool, validated.
struct WindowAttrs {
  enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;     // one per spatial axis
  std::vector<int64_t> strides;    // one per spatial axis, >= 1
  std::vector<int64_t> dilations;  // one per spatial axis, >= 1
  std::vector<int64_t> pads;       // [begin_0, begin_1, ..., end_0, end_1, ...], >= 0
  bool ceil_mode = false;

  size_t spatial_rank() const { return kernel.size(); }
  // The span of input positions one window touches along `axis`.
  int64_t extent(size_t axis) const { return dilations[axis] * (kernel[axis] - 1) + 1; }
};

// One spatial axis resolved for a concrete input size: the output size and the padding actually
// applied (explicit pads, or the SAME_* split).
struct AxisWindow {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

// Reads auto_pad, strides, dilations, pads (and ceil_mode when `pool`) for `kernel` (already
// validated by the caller: one entry >= 1 per spatial axis). Throws gf::Error(kInvalidGraph)
// without node context; inference adds it.
WindowAttrs read_window_attrs(const Attributes& attrs, std::vector<int64_t> kernel, bool pool);

// Resolves `axis` for an input of `in` positions; throws gf::Error(kShapeMismatch) when the
// (padded) input is shorter than one window.
AxisWindow resolve_window_axis(const WindowAttrs& w, size_t axis, int64_t in);

// The first output index along `axis` whose window has every tap in the padding (possible with
// pads or dilations as large as the kernel), or -1 when every window touches the input.
int64_t padding_only_window(const WindowAttrs& w, size_t axis, const AxisWindow& a, int64_t in);

// Per-file registration, called by register_linear_infer.
void register_window_infer(InferTable& table);     // Conv, MaxPool, AveragePool, Global*Pool
void register_attention_infer(InferTable& table);  // Attention

}  // namespace gf
