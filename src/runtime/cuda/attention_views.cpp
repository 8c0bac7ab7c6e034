#include "runtime/cuda/attention_views.h"

#include <algorithm>

namespace gf::cuda {

namespace {

bool swaps_heads_and_positions(const Node& n) {
  return n.op == Op::kTranspose && n.attrs.get_ints("perm", {}) == std::vector<int64_t>{0, 2, 1, 3};
}

std::optional<std::vector<int64_t>> static_dims(const Graph& g, ValueId v) {
  const Shape& s = g.value(v).type.shape;
  if (!s.is_static()) return std::nullopt;
  return s.static_dims();
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& g, const Node& n, size_t input) {
  if (input >= n.inputs.size() || n.inputs[input] == kNoValue) return std::nullopt;
  const Value& v = g.value(n.inputs[input]);
  if (!v.is_constant()) return std::nullopt;
  return v.constant.to_int_vector();
}

// Where `part` starts in the last axis of `n`'s input, when `n` is a Split or a Slice (step 1,
// constant bounds) along that axis only; nullopt otherwise.
std::optional<int64_t> last_axis_offset(const Graph& g, const Node& n, ValueId part) {
  const auto whole = static_dims(g, n.inputs[0]);
  if (!whole || whole->empty()) return std::nullopt;
  const auto rank = static_cast<int64_t>(whole->size());
  auto is_last = [&](int64_t axis) { return axis == rank - 1 || axis == -1; };
  if (n.op == Op::kSplit) {
    if (!is_last(n.attrs.get_int("axis", 0))) return std::nullopt;
    int64_t offset = 0;
    for (ValueId out : n.outputs) {  // the parts before this one
      if (out == part) return offset;
      const auto out_dims = static_dims(g, out);
      if (!out_dims) return std::nullopt;
      offset += out_dims->back();
    }
    return std::nullopt;
  }
  if (n.op != Op::kSlice) return std::nullopt;
  const auto starts = constant_ints(g, n, 1), axes = constant_ints(g, n, 3);
  const auto steps = constant_ints(g, n, 4);
  if (!starts || !axes || starts->size() != 1 || axes->size() != 1 || !is_last((*axes)[0]))
    return std::nullopt;
  if (steps && (steps->size() != 1 || (*steps)[0] != 1)) return std::nullopt;
  const int64_t dim = whole->back();
  const int64_t start = (*starts)[0] < 0 ? (*starts)[0] + dim : (*starts)[0];
  return std::clamp<int64_t>(start, 0, dim);
}

}  // namespace

std::optional<HeadView> input_head_view(const Graph& g, ValueId v) {
  const Node* transpose = producer_if(g, v, Op::kTranspose);
  if (transpose == nullptr || !swaps_heads_and_positions(*transpose)) return std::nullopt;
  const Node* reshape = producer_if(g, transpose->inputs[0], Op::kReshape);
  if (reshape == nullptr) return std::nullopt;
  const auto bshd = static_dims(g, transpose->inputs[0]);  // [B, S, H, D]
  const ValueId part = reshape->inputs[0];
  const auto part_dims = static_dims(g, part);
  if (!bshd || bshd->size() != 4 || !part_dims || part_dims->empty()) return std::nullopt;
  const int64_t s = (*bshd)[1], h = (*bshd)[2], d = (*bshd)[3];
  if (part_dims->back() != h * d) return std::nullopt;  // whole rows of H*D, B*S of them

  HeadView view;
  view.through = {g.value(v).producer, g.value(transpose->inputs[0]).producer};
  view.buffer = part;
  int64_t row = h * d, offset = 0;
  const NodeId part_producer = g.value(part).producer;
  if (part_producer != kNoNode) {
    const Node& n = g.node(part_producer);
    if (n.op == Op::kSplit || n.op == Op::kSlice) {
      const std::optional<int64_t> at = last_axis_offset(g, n, part);
      if (!at) return std::nullopt;
      offset = *at;
      view.through.push_back(part_producer);
      view.buffer = n.inputs[0];
      row = static_dims(g, n.inputs[0])->back();
    }
  }
  view.strides = {s * row, d, row, offset};
  return view;
}

std::optional<HeadView> output_head_view(const Graph& g, const ValueUses& uses, ValueId y,
                                         const std::vector<NodeId>& epilogue) {
  const auto bhsd = static_dims(g, y);
  if (!bhsd || bhsd->size() != 4 || epilogue.empty()) return std::nullopt;
  HeadView view;
  ValueId at = y;
  for (size_t i = 0; i < epilogue.size(); ++i) {
    const NodeId next = uses.sole_reader(at);
    if (next == kNoNode) return std::nullopt;  // read twice, or a graph output
    const Node& n = g.node(next);
    if (i == 0 ? !swaps_heads_and_positions(n) : n.op != Op::kReshape) return std::nullopt;
    view.through.push_back(next);
    at = n.outputs[0];
  }
  std::vector<NodeId> walked = view.through, given = epilogue;
  std::sort(walked.begin(), walked.end());
  std::sort(given.begin(), given.end());
  if (walked != given) return std::nullopt;
  const int64_t h = (*bhsd)[1], s = (*bhsd)[2], dv = (*bhsd)[3];
  view.buffer = at;
  view.strides = {s * h * dv, dv, h * dv, 0};
  return view;
}

}  // namespace gf::cuda
