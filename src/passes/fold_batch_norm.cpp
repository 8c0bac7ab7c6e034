#include "passes/fold_batch_norm.h"

#include <cmath>
#include <optional>
#include <vector>

#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF64 || t == DType::kF16 || t == DType::kBF16;
}

void set_element(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kF32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::kF64: t.data<double>()[i] = v; break;
    case DType::kF16: t.data<Half>()[i] = Half(static_cast<float>(v)); break;
    case DType::kBF16: t.data<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
    default: GF_ASSERT(false, "set_element: not a float dtype");
  }
}

// A constant 1-D float tensor of `channels` elements, as doubles.
std::optional<std::vector<double>> channel_vector(const Graph& g, ValueId v, int64_t channels) {
  if (v == kNoValue || !g.value(v).is_constant()) return std::nullopt;
  const Tensor& t = g.value(v).constant;
  if (!is_float(t.dtype()) || t.rank() != 1 || t.numel() != channels) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) out[static_cast<size_t>(i)] = t.element_as_double(i);
  return out;
}

bool fold_one(Graph& g, const ValueUses& uses, NodeId bn_id) {
  const Node& bn = g.node(bn_id);
  if (bn.outputs.size() != 1 || bn.attrs.get_int("training_mode", 0) != 0) return false;
  const NodeId conv_id = producer_id_if(g, bn.inputs[0], Op::kConv);
  if (conv_id == kNoNode || uses.sole_reader(bn.inputs[0]) != bn_id) return false;
  const Node& conv = g.node(conv_id);
  const Value& w = g.value(conv.inputs[1]);
  if (!w.is_constant() || !is_float(w.constant.dtype()) || w.constant.rank() < 1) return false;
  const int64_t channels = w.constant.dims()[0];
  const auto scale = channel_vector(g, bn.inputs[1], channels);
  const auto bias = channel_vector(g, bn.inputs[2], channels);
  const auto mean = channel_vector(g, bn.inputs[3], channels);
  const auto var = channel_vector(g, bn.inputs[4], channels);
  const bool has_conv_bias = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
  const auto conv_bias = has_conv_bias ? channel_vector(g, conv.inputs[2], channels)
                                       : std::vector<double>(static_cast<size_t>(channels), 0.0);
  if (!scale || !bias || !mean || !var || !conv_bias) return false;

  // The reference computes epsilon as a float attribute added in the compute type.
  const double eps = bn.attrs.get_float("epsilon", 1e-5f);
  Tensor new_w = w.constant.clone();
  Tensor new_b(w.constant.dtype(), {channels});
  const int64_t per_channel = channels == 0 ? 0 : w.constant.numel() / channels;
  for (int64_t m = 0; m < channels; ++m) {
    const auto c = static_cast<size_t>(m);
    const double s = (*scale)[c] / std::sqrt((*var)[c] + eps);
    for (int64_t k = 0; k < per_channel; ++k) {
      const int64_t i = m * per_channel + k;
      set_element(new_w, i, w.constant.element_as_double(i) * s);
    }
    set_element(new_b, m, ((*conv_bias)[c] - (*mean)[c]) * s + (*bias)[c]);
  }

  const ValueId x = conv.inputs[0];
  const Attributes attrs = conv.attrs;
  const std::string name = fused_name(g, conv, "/fused_batchnorm");
  const std::string base = g.value(conv.inputs[1]).name;
  const ValueId w_id = g.add_constant(g.unique_value_name(base + "/bn_folded"), new_w);
  const ValueId b_id = g.add_constant(g.unique_value_name(base + "/bn_folded_bias"), new_b);
  const std::vector<ValueId> inputs{x, w_id, b_id};
  const auto types = try_infer(g, Op::kConv, inputs, attrs);
  const ValueId y = g.node(bn_id).outputs[0];
  if (!types || types->front() != g.value(y).type) return false;  // the constants are dropped
  replace_producer(g, y, Op::kConv, name, inputs, attrs);
  return true;
}

}  // namespace

int fold_batch_norms(Graph& g) {
  const ValueUses uses(g);
  int folded = 0;
  const size_t num_nodes = g.num_nodes(), num_values = g.num_values();
  for (size_t i = 0; i < num_nodes; ++i) {
    const auto id = static_cast<NodeId>(i);
    if (g.node(id).op == Op::kBatchNormalization && fold_one(g, uses, id)) ++folded;
  }
  // A fold that failed its final check leaves unread constants behind; compaction drops them.
  if (g.num_values() != num_values) remove_dead_nodes(g);
  return folded;
}

}  // namespace gf
