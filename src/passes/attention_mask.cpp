#include "passes/attention_mask.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace gf {

namespace {

// -inf, or the lowest finite value where that absorbs every realistic score (see the header).
bool masks_out(double v, DType t) {
  if (v == -std::numeric_limits<double>::infinity()) return true;
  if (t == DType::kF32) return v == static_cast<double>(std::numeric_limits<float>::lowest());
  return t == DType::kF64 && v == std::numeric_limits<double>::lowest();
}

// The mask broadcasts into the scores without changing them and covers every key: Attention
// pads a shorter last dim with -inf, where the Add would have broadcast it.
bool shape_fits(const Graph& g, ValueId mask, ValueId scores, ValueId masked_scores) {
  const Shape& m = g.value(mask).type.shape;
  const Shape& s = g.value(scores).type.shape;
  if (m.rank() < 1 || m.rank() > 4 || s.rank() != 4) return false;
  if (g.value(masked_scores).type != g.value(scores).type) return false;
  const Dim& last = m[m.rank() - 1];
  return (last.is_static() || last.is_symbolic()) && last == s[3];
}

// Calls `row` with each row (last axis) of `t` as (row index within the second-to-last dim,
// element accessor); stops and returns false when `row` does.
bool for_each_row(const Tensor& t, const std::function<bool(int64_t, int64_t)>& row) {
  if (t.rank() == 0) return false;
  const int64_t len = t.dims().back();
  const int64_t rows_per_block = t.rank() >= 2 ? t.dims()[t.rank() - 2] : 1;
  const int64_t rows = len == 0 ? 0 : t.numel() / len;
  for (int64_t r = 0; r < rows; ++r) {
    if (!row(r % rows_per_block, r * len)) return false;
  }
  return true;
}

// True when `t` is exactly the top-left causal triangle over [q_len, len]: key j is kept
// (`kept`) for query i when j <= i and masked out otherwise.
bool is_causal_triangle(const Tensor& t, const Dim& q_len,
                        const std::function<bool(double)>& kept,
                        const std::function<bool(double)>& masked) {
  if (t.rank() < 2 || !q_len.is_static() || t.dims()[t.rank() - 2] != q_len.value()) return false;
  const int64_t len = t.dims().back();
  return for_each_row(t, [&](int64_t i, int64_t base) {
    for (int64_t j = 0; j < len; ++j) {
      const double v = t.element_as_double(base + j);
      if (j <= i ? !kept(v) : !masked(v)) return false;
    }
    return true;
  });
}

// True when every row of `t` has an element that is not masked out.
bool every_row_keeps_one(const Tensor& t, const std::function<bool(double)>& masked) {
  const int64_t len = t.dims().empty() ? 0 : t.dims().back();
  return for_each_row(t, [&](int64_t, int64_t base) {
    for (int64_t j = 0; j < len; ++j) {
      if (!masked(t.element_as_double(base + j))) return true;
    }
    return false;
  });
}

bool all_elements(const Tensor& t, const std::function<bool(double)>& pred) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!pred(t.element_as_double(i))) return false;
  }
  return true;
}

bool is_finite_scalar(const Graph& g, ValueId v) {
  const std::optional<double> c = scalar_constant(g, v);
  return c && std::isfinite(*c);
}

}  // namespace

std::optional<AttentionMask> mask_from_add(Graph& g, const Node& add, ValueId scores) {
  const ValueId mask = other_input(add, scores);
  if (mask == scores || !shape_fits(g, mask, scores, add.outputs[0])) return std::nullopt;
  const Value& m = g.value(mask);
  if (m.is_constant()) {
    const DType t = m.constant.dtype();
    const auto is_inf = [](double v) { return v == -std::numeric_limits<double>::infinity(); };
    if (is_causal_triangle(
            m.constant, g.value(scores).type.shape[2], [](double v) { return v == 0.0; },
            [t](double v) { return masks_out(v, t); })) {
      return AttentionMask{true, kNoValue};
    }
    if (m.constant.numel() == 0 || !every_row_keeps_one(m.constant, is_inf)) return std::nullopt;
    // Zeros everywhere (the dynamo exporter's mask for unmasked SDPA) change no score: no mask.
    if (all_elements(m.constant, [](double v) { return v == 0.0; })) {
      return AttentionMask{false, kNoValue};
    }
    return AttentionMask{false, mask};
  }
  // A run-time mask: only Where between two finite constants is provably never -inf.
  const Node* where = producer_if(g, mask, Op::kWhere);
  if (where == nullptr || !is_finite_scalar(g, where->inputs[1]) ||
      !is_finite_scalar(g, where->inputs[2])) {
    return std::nullopt;
  }
  return AttentionMask{false, mask};
}

std::optional<AttentionMask> mask_from_where(Graph& g, NodeId where_id, ValueId scores) {
  const Node& where = g.node(where_id);
  const ValueId cond = where.inputs[0];
  const ValueId fill = where.inputs[2];
  const DType dtype = g.value(scores).type.dtype;
  const std::optional<double> fill_value = scalar_constant(g, fill);
  if (where.inputs[1] != scores || !fill_value || !masks_out(*fill_value, dtype) ||
      !shape_fits(g, cond, scores, where.outputs[0])) {
    return std::nullopt;
  }
  const Value& c = g.value(cond);
  if (c.is_constant() && c.constant.numel() > 0) {
    const auto kept = [](double v) { return v != 0.0; };
    const auto masked = [](double v) { return v == 0.0; };
    if (is_causal_triangle(c.constant, g.value(scores).type.shape[2], kept, masked)) {
      return AttentionMask{true, kNoValue};
    }
    if (all_elements(c.constant, kept)) return AttentionMask{false, kNoValue};  // keeps every key
    if (every_row_keeps_one(c.constant, masked)) return AttentionMask{false, cond};
  }
  // A finite fill keeps fully masked rows uniform, as the additive mask Where(cond, 0, fill)
  // does in Attention; -inf would turn them from NaN into zeros.
  if (std::isinf(*fill_value)) return std::nullopt;
  Tensor zero(dtype, {});
  std::memset(zero.raw(), 0, zero.nbytes());
  const std::string base = where.name + "/additive_mask";
  const ValueId zero_id = g.add_constant(g.unique_value_name(base + "/zero"), zero);
  const ValueId mask = add_helper_node(g, Op::kWhere, base, {cond, zero_id, fill});
  return AttentionMask{false, mask};
}

}  // namespace gf
