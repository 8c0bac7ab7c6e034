#include "runtime/cuda/gemm_plan.h"

#include <algorithm>
#include <optional>

#include "fusion/op_costs.h"
#include "graphfuse/error.h"
#include "runtime/cuda/weight_layout.h"

namespace gf::cuda {

namespace {

[[noreturn]] void refuse(const Graph& g, const Node& n, const std::string& why) {
  throw Error(ErrorCode::kUnsupported, describe_node(g, n) + ": no cuBLASLt GEMM: " + why);
}

std::vector<int64_t> dims_of(const Graph& g, ValueId v) {
  return g.value(v).type.shape.static_dims();
}

int64_t product(const std::vector<int64_t>& d) {
  int64_t p = 1;
  for (int64_t x : d) p *= x;
  return p;
}

void plan_matmul(const Graph& g, const Node& n, GemmPlan& p) {
  std::vector<int64_t> a = dims_of(g, n.inputs[0]), b = dims_of(g, n.inputs[1]);
  if (a.size() == 1) a.insert(a.begin(), 1);  // numpy: a vector is a row of A ...
  if (b.size() == 1) b.push_back(1);          // ... and a column of B
  const int64_t m = a[a.size() - 2], k = a.back(), n_cols = b.back();
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), rank - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), rank - b_batch.size(), 1);
  std::vector<int64_t> out_batch(rank);
  for (size_t i = 0; i < rank; ++i) out_batch[i] = std::max(a_batch[i], b_batch[i]);
  const int64_t batch = product(out_batch);
  GemmSpec& s = p.spec;
  s.m = m;
  s.n = n_cols;
  s.k = k;
  if (product(b_batch) == 1) {
    // One B for all: the batch folds into A's rows, which are contiguous. A constant weight is
    // on the device as [n, k] when weight_layout.h says so.
    s.m = m * batch;
    s.trans_b = stores_transposed(g, n.inputs[1]);
    p.calls.push_back({});
  } else if (a_batch == out_batch && b_batch == out_batch) {
    s.batch = batch;
    p.calls.push_back({});
  } else {
    // Broadcast batch dims: one call per output entry, each operand at its broadcast index.
    for (int64_t o = 0; o < batch; ++o) {
      int64_t rest = o, ai = 0, bi = 0, a_stride = 1, b_stride = 1;
      for (size_t d = rank; d-- > 0;) {
        const int64_t idx = rest % out_batch[d];
        rest /= out_batch[d];
        if (a_batch[d] != 1) ai += idx * a_stride;
        if (b_batch[d] != 1) bi += idx * b_stride;
        a_stride *= a_batch[d];
        b_stride *= b_batch[d];
      }
      p.calls.push_back({ai * m * k, bi * k * n_cols, o * m * n_cols});
    }
  }
}

void plan_gemm_node(const Graph& g, const Node& n, GemmPlan& p) {
  const float alpha = n.attrs.get_float("alpha", 1.0f), beta = n.attrs.get_float("beta", 1.0f);
  const bool trans_a = n.attrs.get_int("transA", 0) != 0,
             trans_b = n.attrs.get_int("transB", 0) != 0;
  // A constant weight may be on the device as [n, k] (weight_layout.h): B^T then.
  const bool stored_transposed = !trans_b && stores_transposed(g, n.inputs[1]);
  const std::vector<int64_t> a = dims_of(g, n.inputs[0]), b = dims_of(g, n.inputs[1]);
  GemmSpec& s = p.spec;
  s.trans_a = trans_a;
  s.trans_b = trans_b || stored_transposed;
  s.m = trans_a ? a[1] : a[0];
  s.k = trans_a ? a[0] : a[1];
  s.n = trans_b ? b[0] : b[1];
  if (alpha != 1.0f) refuse(g, n, "alpha " + std::to_string(alpha) + " is not 1");
  const ValueId c = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  if (c != kNoValue && beta != 0.0f) {
    const std::vector<int64_t> cd = dims_of(g, c);
    const bool row =
        (cd.size() == 1 && cd[0] == s.n) || (cd.size() == 2 && cd[0] == 1 && cd[1] == s.n);
    if (!row || beta != 1.0f) refuse(g, n, "C is not a bias of [N] with beta 1");
    if (g.value(c).type.dtype != s.dtype) refuse(g, n, "the bias has another dtype");
    s.epilogue = GemmEpilogue::kBias;
    p.bias = c;
  }
  p.calls.push_back({});
}

bool contains(const std::vector<NodeId>& ids, NodeId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The node that reads `v` when it is the only reader in the whole graph, reads `v` once, is in
// `group`, and `v` is no graph output; else kNoNode. Only then may the call skip storing `v`.
NodeId sole_reader_in(const Graph& g, const fusion::Group& group, ValueId v) {
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return kNoNode;
  NodeId reader = kNoNode;
  int64_t reads = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const std::vector<ValueId>& ins = g.node(static_cast<NodeId>(i)).inputs;
    const auto count = std::count(ins.begin(), ins.end(), v);
    if (count == 0) continue;
    reads += count;
    reader = static_cast<NodeId>(i);
  }
  return reads == 1 && contains(group.nodes, reader) ? reader : kNoNode;
}

// `n` has one output of `x`'s dtype and shape: the call writes it where it would write `x`.
bool keeps_type(const Graph& g, const Node& n, ValueId x) {
  if (n.outputs.size() != 1) return false;
  const TensorType &out = g.value(n.outputs[0]).type, &in = g.value(x).type;
  return out.dtype == in.dtype && out.shape.static_dims() == in.shape.static_dims();
}

// The bias row that `add` adds to `x`, or kNoValue. The call reads it before any node of the
// group runs, so none of them may compute it.
ValueId bias_row_of(const Graph& g, const fusion::Group& group, const Node& add, ValueId x,
                    const GemmSpec& spec) {
  if (add.op != Op::kAdd || add.inputs.size() != 2) return kNoValue;
  const ValueId other = add.inputs[0] == x ? add.inputs[1] : add.inputs[0];
  const Value& v = g.value(other);
  if (v.type.dtype != spec.dtype) return kNoValue;
  if (v.producer != kNoNode && contains(group.nodes, v.producer)) return kNoValue;
  return is_bias_row(dims_of(g, other), dims_of(g, x), spec.n) ? other : kNoValue;
}

// The activation `n` applies; an erf Gelu only when the call may take it (`exact_gelu`).
std::optional<GemmActivation> node_activation(const Node& n, bool exact_gelu) {
  if (n.op == Op::kRelu) return GemmActivation::kRelu;
  if (n.op != Op::kGelu) return std::nullopt;
  const std::string approximate = n.attrs.get_string("approximate", "none");
  if (approximate == "tanh") return GemmActivation::kGeluTanh;
  if (approximate == "none" && exact_gelu) return GemmActivation::kGeluErf;
  return std::nullopt;
}

// `n` is a metadata view of `x` (a Reshape, an output's Identity): the same elements in the same
// order, so the call may write them under the view's name.
bool relabels(const Graph& g, const Node& n, ValueId x) {
  if (!fusion::is_metadata_view(n.op) || n.inputs.empty() || n.inputs[0] != x ||
      n.outputs.size() != 1) {
    return false;
  }
  const TensorType &out = g.value(n.outputs[0]).type, &in = g.value(x).type;
  return out.dtype == in.dtype &&
         product(out.shape.static_dims()) == product(in.shape.static_dims());
}

// What the call can still apply, in cuBLASLt's order.
enum class Stage { kBias, kActivation, kDone };

// Takes `n`, the sole reader of the call's output so far, into the call when it is what cuBLASLt
// applies next (a view at any stage); false where the match ends.
bool take_next(const Graph& g, const fusion::Group& group, const Node& n, bool exact_gelu,
               Stage& stage, GemmActivation& activation, GemmPlan& p) {
  if (relabels(g, n, p.c)) return true;
  if (!keeps_type(g, n, p.c)) return false;
  if (const std::optional<GemmActivation> act = node_activation(n, exact_gelu);
      act && stage != Stage::kDone) {
    activation = *act;
    stage = Stage::kDone;
    return true;
  }
  if (stage != Stage::kBias) return false;
  p.bias = bias_row_of(g, group, n, p.c, p.spec);
  if (p.bias == kNoValue) return false;
  stage = Stage::kActivation;
  return true;
}

}  // namespace

bool is_bias_row(const std::vector<int64_t>& other, const std::vector<int64_t>& x, int64_t n) {
  if (other.size() > x.size()) return false;
  for (size_t d = 0; d + 1 < other.size(); ++d)
    if (other[d] != 1) return false;
  const int64_t count = other.empty() ? 1 : other.back();
  return count == n && (n == 1 || x.back() == n);
}

GemmPlan plan_gemm(const Graph& g, const Node& node, bool allow_tf32) {
  GF_ASSERT(node.op == Op::kMatMul || node.op == Op::kGemm, "plan_gemm takes MatMul or Gemm");
  GemmPlan p;
  p.a = node.inputs[0];
  p.b = node.inputs[1];
  p.c = node.outputs[0];
  const DType dtype = g.value(p.a).type.dtype;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    refuse(g, node, "dtype " + std::string(dtype_name(dtype)) + " (cuBLASLt takes f32, f16, bf16)");
  }
  p.spec.dtype = dtype;
  p.spec.allow_tf32 = allow_tf32;
  if (node.op == Op::kMatMul) {
    plan_matmul(g, node, p);
  } else {
    plan_gemm_node(g, node, p);
  }
  if (p.spec.m <= 0 || p.spec.n <= 0 || p.spec.k <= 0) refuse(g, node, "an empty dimension");
  // cuBLASLt's heuristic assumes operands aligned as allocations are (kGemmOperandAlignment);
  // per-entry offsets of a broadcast batch may not be.
  const auto es = static_cast<int64_t>(dtype_size(dtype));
  for (const GemmCall& c : p.calls) {
    for (int64_t offset : {c.a_offset, c.b_offset, c.c_offset}) {
      if (offset * es % kGemmOperandAlignment != 0) {
        refuse(g, node,
               "a broadcast batch entry at byte offset " + std::to_string(offset * es) +
                   " is not " + std::to_string(kGemmOperandAlignment) + "-byte aligned");
      }
    }
  }
  return p;
}

GemmWithEpilogue plan_gemm_with_epilogue(const Graph& g, const fusion::Group& group,
                                         bool allow_tf32, bool exact_gelu) {
  GF_ASSERT(group.anchor != kNoNode, "plan_gemm_with_epilogue takes a group with an anchor");
  GemmWithEpilogue out{plan_gemm(g, g.node(group.anchor), allow_tf32), {group.anchor}};
  GemmPlan& p = out.plan;
  // A bias row (unless Gemm's C is one), then an activation, then nothing but views: cuBLASLt's
  // order. The bias applies to every row of every call and batch entry, as an [N] row
  // broadcasts.
  Stage stage = p.bias == kNoValue ? Stage::kBias : Stage::kActivation;
  GemmActivation activation = GemmActivation::kNone;
  for (NodeId id = sole_reader_in(g, group, p.c); id != kNoNode;
       id = sole_reader_in(g, group, p.c)) {
    const Node& n = g.node(id);
    if (!take_next(g, group, n, exact_gelu, stage, activation, p)) break;
    out.nodes.push_back(id);
    p.c = n.outputs[0];
  }
  p.spec.epilogue = gemm_epilogue(p.bias != kNoValue, activation);
  return out;
}

}  // namespace gf::cuda
