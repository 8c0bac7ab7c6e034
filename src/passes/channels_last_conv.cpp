#include "passes/channels_last_conv.h"

#include <unordered_map>

#include "graphfuse/error.h"
#include "ir/infer_linear_family.h"
#include "ir/tensor_transpose.h"
#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

const std::vector<int64_t> kToLast{0, 2, 3, 1};   // NCHW -> NHWC
const std::vector<int64_t> kToFirst{0, 3, 1, 2};  // NHWC -> NCHW

bool is_16bit_float(DType t) {
  return t == DType::kF16 || t == DType::kBF16;
}

// A Conv that cuDNN takes on channels-last data: 2-D, 16-bit, static, padded alike at both
// ends of each axis (as CudnnConv requires).
bool takes_channels_last(const Graph& g, const Node& n) {
  if (n.op != Op::kConv || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  const TensorType& x = g.value(n.inputs[0]).type;
  const TensorType& w = g.value(n.inputs[1]).type;
  const TensorType& y = g.value(n.outputs[0]).type;
  if (!is_16bit_float(x.dtype) || x.shape.rank() != 4 || !x.shape.is_static() ||
      !w.shape.is_static() || !y.shape.is_static() || w.dtype != x.dtype)
    return false;
  const std::vector<int64_t> xd = x.shape.static_dims(), wd = w.shape.static_dims();
  try {
    const WindowAttrs win = read_window_attrs(n.attrs, {wd[2], wd[3]}, false);
    for (size_t axis = 0; axis < 2; ++axis) {
      const AxisWindow a = resolve_window_axis(win, axis, xd[axis + 2]);
      if (a.pad_begin != a.pad_end) return false;
    }
  } catch (const Error&) {
    return false;  // inference reports it, with the node, when the Conv itself runs
  }
  return true;
}

// An elementwise or broadcast node that can run on channels-last twins: one output of rank 4,
// each input either with a twin of the output's shape or a one-element value (which broadcasts
// the same in any layout). BatchNormalization reads axis 1 as channels, so it stays; an Identity
// would only move the Transpose after it.
bool runs_on_twins(const Graph& g, const Node& n,
                   const std::unordered_map<ValueId, ValueId>& twin) {
  const OpKind kind = op_info(n.op).kind;
  if ((kind != OpKind::kElementwise && kind != OpKind::kBroadcast) ||
      n.op == Op::kBatchNormalization || n.op == Op::kIdentity || n.outputs.size() != 1)
    return false;
  const Shape& out = g.value(n.outputs[0]).type.shape;
  if (out.rank() != 4) return false;
  bool any_twin = false;
  for (ValueId v : n.inputs) {
    if (v == kNoValue) continue;
    if (twin.count(v) && g.value(v).type.shape == out) {
      any_twin = true;
    } else if (g.value(v).type.shape.numel() != 1) {
      return false;
    }
  }
  return any_twin;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}

  int run() {
    int converted = 0;
    for (NodeId id : g_.topological_order()) {
      const Node n = g_.node(id);  // a copy: adding nodes may move the node vector
      if (takes_channels_last(g_, n)) {
        convert_conv(n);
        ++converted;
      } else if (runs_on_twins(g_, n, twin_)) {
        std::vector<ValueId> inputs;
        for (ValueId v : n.inputs)
          inputs.push_back(v != kNoValue && twin_.count(v) ? twin_.at(v) : v);
        become_transpose_of(n.outputs[0],
                            add_helper_node(g_, n.op, n.name + "/nhwc", inputs, n.attrs));
      }
    }
    if (converted > 0) remove_dead_nodes(g_);
    return converted;
  }

 private:
  void convert_conv(const Node& n) {
    const ValueId x = nhwc(n.inputs[0], n.name + "/x_nhwc");
    const ValueId w_in = n.inputs[1];
    ValueId w;
    if (g_.value(w_in).is_constant()) {
      // [M, C, R, S] -> [M, R, S, C] as M matrices [C, R*S] transposed: transpose_tensor's
      // tiled path (a ResNet-50's 25M weights in milliseconds, not an element at a time).
      const Tensor& t = g_.value(w_in).constant;
      const std::vector<int64_t> d = t.dims();
      const Tensor moved = transpose_tensor(t.reshaped({d[0], d[1], d[2] * d[3]}), {0, 2, 1});
      w = g_.add_constant(g_.unique_value_name(g_.value(w_in).name + "/nhwc"),
                          moved.reshaped({d[0], d[2], d[3], d[1]}));
    } else {
      w = add_helper_node(g_, Op::kTranspose, n.name + "/w_nhwc", {w_in}, {{"perm", kToLast}});
    }
    ValueId y = add_helper_node(g_, Op::kNhwcConv, n.name + "/nhwc", {x, w}, n.attrs);
    // B [M] broadcasts over the last axis: an Add the planner fuses into the epilogue kernel.
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue)
      y = add_helper_node(g_, Op::kAdd, n.name + "/bias", {y, n.inputs[2]});
    become_transpose_of(n.outputs[0], y);
  }

  // `nchw` (keeping its id, readers and graph-output role) becomes the channels-first
  // Transpose of `nhwc_twin`; the old producer is left dead.
  void become_transpose_of(ValueId nchw, ValueId nhwc_twin) {
    const NodeId old = g_.value(nchw).producer;
    replace_producer(g_, nchw, Op::kTranspose, g_.unique_node_name(g_.node(old).name + "/nchw"),
                     {nhwc_twin}, {{"perm", kToFirst}});
    twin_[nchw] = nhwc_twin;
  }

  // The channels-last twin of `v`: the one made before, or a new Transpose (shared by every
  // later reader, so a block input read by two Convs is transposed once).
  ValueId nhwc(ValueId v, const std::string& base) {
    if (const auto it = twin_.find(v); it != twin_.end()) return it->second;
    const ValueId t = add_helper_node(g_, Op::kTranspose, base, {v}, {{"perm", kToLast}});
    twin_[v] = t;
    return t;
  }

  Graph& g_;
  std::unordered_map<ValueId, ValueId> twin_;  // a channels-first value -> its channels-last twin
};

}  // namespace

int channels_last_convs(Graph& g) {
  return Rewriter(g).run();
}

}  // namespace gf
