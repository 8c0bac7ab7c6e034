#include "fusion/op_costs.h"

#include "fusion/cost_model.h"

namespace gf::fusion {

namespace {
double dim_value(const Dim& d) {
  return d.is_static() ? static_cast<double>(d.value()) : static_cast<double>(kAssumedSymbolicDim);
}
}  // namespace

double value_elements(const Graph& g, ValueId v) {
  double n = 1;
  for (const Dim& d : g.value(v).type.shape) n *= dim_value(d);
  return n;
}

double value_bytes(const Graph& g, ValueId v) {
  return value_elements(g, v) * static_cast<double>(dtype_size(g.value(v).type.dtype));
}

double node_flops(const Graph& g, const Node& n) {
  const double out = n.outputs.empty() ? 0 : value_elements(g, n.outputs[0]);
  const double in = n.inputs.empty() || n.inputs[0] == kNoValue ? 0 : value_elements(g, n.inputs[0]);
  switch (op_info(n.op).kind) {
    case OpKind::kElementwise:
    case OpKind::kBroadcast: return out;
    case OpKind::kInjective:
    case OpKind::kOpaque: return 0;
    case OpKind::kReduction: return 2 * in;  // a pass to reduce, one to normalise where needed
    case OpKind::kGemmLike: {
      const Shape& a = g.value(n.inputs[0]).type.shape;
      const Shape& w = g.value(n.inputs[1]).type.shape;
      if (n.op == Op::kConv || n.op == Op::kNhwcConv) {
        // out elements x (Cin / group) x kernel area (W's dims after the first), two flops each.
        double per_out = 1;
        for (size_t i = 1; i < w.rank(); ++i) per_out *= dim_value(w[i]);
        return 2 * out * per_out;
      }
      // MatMul/Gemm: out = M x N (x batch), reduced over K.
      double k = 1;
      if (a.rank() >= 1) k = dim_value(a[a.rank() - 1]);
      if (n.op == Op::kGemm && n.attrs.get_int("transA", 0) && a.rank() == 2) k = dim_value(a[0]);
      return 2 * out * k;
    }
    case OpKind::kAttention: {
      // QK^T and PV: 4 x B x H x S x L x D.
      const Shape& q = g.value(n.inputs[0]).type.shape;
      const Shape& k = g.value(n.inputs[1]).type.shape;
      if (q.rank() != 4 || k.rank() != 4) return 4 * out * 128;
      return 4 * dim_value(q[0]) * dim_value(q[1]) * dim_value(q[2]) * dim_value(k[2]) *
             dim_value(q[3]);
    }
  }
  return out;
}

bool is_metadata_view(Op op) {
  return op == Op::kReshape || op == Op::kSqueeze || op == Op::kUnsqueeze || op == Op::kFlatten ||
         op == Op::kIdentity;
}

bool is_strided_view(Op op) {
  return is_metadata_view(op) || op == Op::kTranspose || op == Op::kSplit || op == Op::kSlice;
}

}  // namespace gf::fusion
