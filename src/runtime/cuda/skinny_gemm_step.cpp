#include "runtime/cuda/skinny_gemm_step.h"

#include <algorithm>
#include <cmath>

#include "codegen/common/kernel_exprs.h"
#include "fusion/op_costs.h"
#include "graphfuse/error.h"
#include "runtime/cuda/gemm_plan.h"

namespace gf::cuda {

// A product of M rows does 2M flops per element of W it reads: at M <= 16 at most 16 per byte
// (8 in f32), a tenth of the ~180 an H200 needs to be compute-bound (790 TFLOP/s over 4.3 TB/s).
// Its time is W's bytes over the bandwidth reached reading them. bench_skinny_gemm measures both
// paths: on an H200 the skinny kernel streams Llama-size weights at 3.3 TB/s (cuBLASLt 3.1) and
// beats cuBLASLt on GPT-2's [n, k] weights at one row, but loses on GPT-2's [k, n] weights and
// at eight rows, where its small matrices leave it short of bandwidth: kAuto keeps to what won
// (kSkinnyGemmAutoMaxRows). The cost model should make this choice in the end.
bool prefers_skinny_gemm(SkinnyGemm choice, int64_t rows, bool w_transposed) {
  if (rows < 1 || rows > codegen::kSkinnyGemmMaxRows) return false;
  switch (choice) {
    case SkinnyGemm::kAlways: return true;
    case SkinnyGemm::kOff: return false;
    case SkinnyGemm::kAuto: return w_transposed && rows <= kSkinnyGemmAutoMaxRows;
  }
  return false;
}

namespace {

using codegen::SkinnyActivation;
using codegen::SkinnyRowNorm;

// What the kernel can still add to the product, in the order it adds them.
enum class Stage { kBias, kActivation, kResidual, kDone };

struct Match {
  codegen::SkinnyGemmSpec spec;
  ValueId a = kNoValue, w = kNoValue, bias = kNoValue, residual = kNoValue, c = kNoValue;
  ValueId norm_scale = kNoValue, norm_bias = kNoValue;
  NodeId norm = kNoNode;
  std::vector<NodeId> nodes;
};

std::vector<int64_t> dims_of(const Graph& g, ValueId v) {
  return g.value(v).type.shape.static_dims();
}
DType dtype_of(const Graph& g, ValueId v) {
  return g.value(v).type.dtype;
}

bool contains(const std::vector<NodeId>& ids, NodeId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// The product alone, or nullopt when the anchor is not a decode-shaped product.
std::optional<Match> match_product(const Graph& g, NodeId anchor, SkinnyGemm choice) {
  const Node& n = g.node(anchor);
  if (n.op != Op::kMatMul && n.op != Op::kGemm) return std::nullopt;
  GemmPlan p;
  try {
    p = plan_gemm(g, n, false);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    return std::nullopt;
  }
  const GemmSpec& s = p.spec;
  if (p.calls.size() != 1 || s.batch != 1 || s.trans_a ||
      !prefers_skinny_gemm(choice, s.m, s.trans_b))
    return std::nullopt;
  if (dtype_of(g, p.b) != s.dtype || dtype_of(g, p.c) != s.dtype) return std::nullopt;
  Match m;
  m.spec.dtype = s.dtype;
  m.spec.m = s.m;
  m.spec.n = s.n;
  m.spec.k = s.k;
  m.spec.w_transposed = s.trans_b;  // transB, or a constant stored [n, k] (weight_layout.h)
  m.spec.has_bias = p.bias != kNoValue;
  m.a = p.a;
  m.w = p.b;
  m.bias = p.bias;
  m.c = p.c;
  m.nodes = {anchor};
  return m;
}

// The one node of `group` that reads `v`, reading it once; kNoNode when `v` is read outside the
// group (or is a graph output), twice, or not at all.
NodeId sole_reader(const Graph& g, const fusion::Group& group, ValueId v) {
  if (std::find(group.outputs.begin(), group.outputs.end(), v) != group.outputs.end())
    return kNoNode;
  NodeId reader = kNoNode;
  int reads = 0;
  for (NodeId id : group.nodes) {
    for (ValueId in : g.node(id).inputs) {
      if (in != v) continue;
      reader = id;
      ++reads;
    }
  }
  return reads == 1 ? reader : kNoNode;
}

std::optional<SkinnyActivation> activation_of(const Node& n) {
  if (n.op == Op::kRelu) return SkinnyActivation::kRelu;
  if (n.op != Op::kGelu) return std::nullopt;
  const std::string approximate = n.attrs.get_string("approximate", "none");
  if (approximate == "none") return SkinnyActivation::kGeluErf;
  if (approximate == "tanh") return SkinnyActivation::kGeluTanh;
  return std::nullopt;
}

// Extends `m` along the group's epilogue while each next node is what the kernel adds next.
void match_epilogue(const Graph& g, const fusion::Group& group, Match& m) {
  const DType dtype = m.spec.dtype;
  Stage stage = m.spec.has_bias ? Stage::kActivation : Stage::kBias;
  ValueId x = m.c;
  for (NodeId id = sole_reader(g, group, x); id != kNoNode; id = sole_reader(g, group, x)) {
    const Node& n = g.node(id);
    if (n.outputs.size() != 1 || dtype_of(g, n.outputs[0]) != dtype) break;
    const std::vector<int64_t> x_dims = dims_of(g, x);
    const std::optional<SkinnyActivation> activation = activation_of(n);
    if (fusion::is_metadata_view(n.op) && n.inputs[0] == x) {
      // Relabels the product's elements, in their order.
    } else if (activation && stage <= Stage::kActivation) {
      m.spec.activation = *activation;
      stage = Stage::kResidual;
    } else if (n.op == Op::kAdd && dims_of(g, n.outputs[0]) == x_dims) {
      const ValueId other = n.inputs[0] == x ? n.inputs[1] : n.inputs[0];
      const NodeId producer = g.value(other).producer;
      // The kernel reads `other` as stored: nothing of the group may compute it.
      if (dtype_of(g, other) != dtype || (producer != kNoNode && contains(group.nodes, producer)))
        break;
      const std::vector<int64_t> other_dims = dims_of(g, other);
      if (stage == Stage::kBias && is_bias_row(other_dims, x_dims, m.spec.n)) {
        m.spec.has_bias = true;
        m.bias = other;
        stage = Stage::kActivation;
      } else if (stage <= Stage::kResidual && other_dims == x_dims) {
        m.spec.has_residual = true;
        m.residual = other;
        stage = Stage::kDone;
      } else {
        break;
      }
    } else {
      break;
    }
    m.nodes.push_back(id);
    x = n.outputs[0];
  }
  m.c = x;
}

// Columns per SM up to which a skinny kernel applies the norm before its product (8 warps, one
// column each: four blocks per SM).
constexpr int64_t kRowNormMaxColumnsPerSm = 32;

// The norm that makes A, read into the kernel (see the header); `m` unchanged when there is none
// it can take.
void match_row_norm(const Graph& g, const std::vector<int>& reads, int sm_count, Match& m) {
  // Every block of the kernel computes the rows' statistics again: past a few blocks per SM
  // (GPT-2's LM head: 6283) that costs more than the norm's own kernel.
  if (!m.spec.w_transposed || m.spec.n > kRowNormMaxColumnsPerSm * sm_count) return;
  const auto read_once = [&](ValueId v) { return reads[static_cast<size_t>(v)] == 1; };
  ValueId v = m.a;
  NodeId producer = g.value(v).producer;
  while (producer != kNoNode && fusion::is_metadata_view(g.node(producer).op)) {
    if (!read_once(v)) return;
    v = g.node(producer).inputs[0];
    producer = g.value(v).producer;
  }
  if (producer == kNoNode || !read_once(v)) return;
  const Node& n = g.node(producer);
  const bool layer_norm = n.op == Op::kLayerNormalization;
  if (!layer_norm && n.op != Op::kRMSNormalization) return;
  if (n.outputs[0] != v) return;
  for (size_t i = 1; i < n.outputs.size(); ++i)  // LayerNorm's mean and 1/stddev: unused
    if (n.outputs[i] != kNoValue && reads[static_cast<size_t>(n.outputs[i])] > 0) return;
  const ValueId x = n.inputs[0];
  const ValueId scale = n.inputs.size() > 1 ? n.inputs[1] : kNoValue;
  const ValueId bias = layer_norm && n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  const std::vector<int64_t> x_dims = dims_of(g, x);
  const int64_t rank = static_cast<int64_t>(x_dims.size());
  int64_t axis = n.attrs.get_int("axis", -1);
  if (axis < 0) axis += rank;
  const DType dtype = m.spec.dtype;
  const auto is_row = [&](ValueId p) {
    return p != kNoValue && dtype_of(g, p) == dtype &&
           dims_of(g, p) == std::vector<int64_t>{m.spec.k};
  };
  if (rank < 1 || axis != rank - 1 || x_dims.back() != m.spec.k || dtype_of(g, x) != dtype ||
      g.value(x).type.shape.numel() != m.spec.m * m.spec.k || !is_row(scale) ||
      (bias != kNoValue && !is_row(bias)))
    return;
  const float epsilon = n.attrs.get_float("epsilon", 1e-5f);
  if (!(epsilon >= 0.0f) || !std::isfinite(epsilon)) return;
  m.spec.row_norm = layer_norm ? SkinnyRowNorm::kLayerNorm : SkinnyRowNorm::kRmsNorm;
  m.spec.row_norm_bias = bias != kNoValue;
  m.spec.row_norm_epsilon = epsilon;
  m.a = x;
  m.norm_scale = scale;
  m.norm_bias = bias;
  m.norm = producer;
}

// Per value, whether it may share storage with a graph input or output, following views of
// every kind both ways (a superset of the executor's aliases, CudaProgramState::storage_of).
// Only such a value's pointer-table entries can be repointed during a run: gf_bind_in points
// those of values bound to the caller's buffers (program_bindings.h).
std::vector<bool> values_sharing_a_binding(const Graph& g) {
  std::vector<ValueId> parent(g.num_values());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<ValueId>(i);
  const auto find = [&](ValueId x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  };
  for (const Node& n : g.nodes()) {
    if (!fusion::is_strided_view(n.op) || n.inputs.empty() || n.inputs[0] == kNoValue) continue;
    for (ValueId out : n.outputs)
      if (out != kNoValue) parent[static_cast<size_t>(find(out))] = find(n.inputs[0]);
  }
  std::vector<bool> bound_root(g.num_values(), false);
  for (const std::vector<ValueId>* list : {&g.inputs(), &g.outputs()})
    for (ValueId v : *list) bound_root[static_cast<size_t>(find(v))] = true;
  std::vector<bool> out(g.num_values());
  for (size_t v = 0; v < out.size(); ++v)
    out[v] = bound_root[static_cast<size_t>(find(static_cast<ValueId>(v)))];
  return out;
}

// The step's kernel source headed by the nodes it computes (`fused`), and its label.
void label_kernel(CudaStep& s, const codegen::SkinnyGemmSpec& spec, const std::string& fused) {
  s.kernel.source = "// fused: " + codegen::comment_safe(fused) + "\n" + s.kernel.source;
  s.label = "skinny GEMM " + s.kernel.name + " (" + spec.to_string() + "; " + fused + ")";
}

std::string describe_nodes(const Graph& g, const std::vector<NodeId>& nodes) {
  std::string out;
  for (NodeId id : nodes) {
    const Node& n = g.node(id);
    out += (out.empty() ? "" : ", ") + std::string(op_name(n.op)) + " (" + n.name + ")";
  }
  return out;
}

}  // namespace

std::vector<int> value_reads(const Graph& g) {
  std::vector<int> reads(g.num_values(), 0);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++reads[static_cast<size_t>(v)];
  for (ValueId v : g.outputs()) ++reads[static_cast<size_t>(v)];
  return reads;
}

std::optional<SkinnyGemmStep> skinny_gemm_step(const Graph& g, const fusion::Group& group,
                                               const std::string& name, int sm_count,
                                               SkinnyGemm choice, const std::vector<int>* reads) {
  GF_ASSERT(group.kind == fusion::GroupKind::kGemm && group.anchor != kNoNode,
            "skinny_gemm_step takes a GEMM group");
  std::optional<Match> m = match_product(g, group.anchor, choice);
  if (!m) return std::nullopt;
  match_epilogue(g, group, *m);
  if (reads != nullptr) match_row_norm(g, *reads, sm_count, *m);
  m->spec.prefetch_weights = g.value(m->w).is_constant();
  const auto constant_or_none = [&](ValueId v) {
    return v == kNoValue || g.value(v).is_constant();
  };
  m->spec.constant_epilogue = constant_or_none(m->bias) && constant_or_none(m->norm_scale) &&
                              constant_or_none(m->norm_bias);
  const std::vector<bool> shares_a_binding = values_sharing_a_binding(g);
  m->spec.stable_input_addresses =
      !shares_a_binding[static_cast<size_t>(m->a)] &&
      (m->residual == kNoValue || !shares_a_binding[static_cast<size_t>(m->residual)]);
  SkinnyGemmStep out;
  out.spec = m->spec;
  out.nodes = m->nodes;
  out.folded_norm = m->norm;
  out.w = m->w;
  CudaStep& s = out.step;
  s.kind = CudaStep::Kind::kKernel;
  try {
    s.kernel = codegen::emit_skinny_gemm_kernel(m->spec, name, sm_count);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    return std::nullopt;  // sizes past the kernel's index range: cuBLASLt takes them
  }
  std::vector<NodeId> described = m->nodes;
  if (m->norm != kNoNode) described.insert(described.begin(), m->norm);
  out.fused = describe_nodes(g, described);
  label_kernel(s, m->spec, out.fused);
  using codegen::SkinnyBuffer;
  for (SkinnyBuffer role : codegen::skinny_gemm_buffers(m->spec, sm_count)) {
    GF_ASSERT(role != SkinnyBuffer::kWUp, "a single product has no up-projection");
    s.buffers.push_back(role == SkinnyBuffer::kA           ? m->a
                        : role == SkinnyBuffer::kNormScale ? m->norm_scale
                        : role == SkinnyBuffer::kNormBias  ? m->norm_bias
                        : role == SkinnyBuffer::kW         ? m->w
                        : role == SkinnyBuffer::kBias      ? m->bias
                        : role == SkinnyBuffer::kResidual  ? m->residual
                        : role == SkinnyBuffer::kC         ? m->c
                                                           : kStepPrivateBuffer);
    s.is_output.push_back(role == SkinnyBuffer::kC);
  }
  s.private_bytes = codegen::skinny_gemm_workspace_bytes(m->spec, sm_count);
  return out;
}

void prefetch_next_weights(SkinnyGemmStep& step, const SkinnyGemmStep& next, int sm_count) {
  // A step is one product (no W_up), so the next weight is next.w alone.
  if (!step.spec.prefetch_weights || !next.spec.prefetch_weights || next.w == kNoValue ||
      next.spec.gated)
    return;
  using codegen::SkinnyBuffer;
  const std::vector<SkinnyBuffer> before = codegen::skinny_gemm_buffers(step.spec, sm_count);
  codegen::SkinnyGemmSpec spec = step.spec;
  const uint64_t next_bytes = codegen::skinny_gemm_weight_bytes(next.spec);
  if (!codegen::skinny_gemm_prefetches_next(codegen::skinny_gemm_weight_bytes(step.spec),
                                            next_bytes))
    return;
  spec.next_w_bytes = next_bytes;
  CudaStep& s = step.step;
  s.kernel = codegen::emit_skinny_gemm_kernel(spec, s.kernel.name, sm_count);
  const std::vector<SkinnyBuffer> after = codegen::skinny_gemm_buffers(spec, sm_count);
  GF_ASSERT(after.size() == before.size() + 1 && after.back() == SkinnyBuffer::kNextW &&
                std::equal(before.begin(), before.end(), after.begin()),
            "the next weight's entry follows the step's buffers");
  label_kernel(s, spec, step.fused);
  s.buffers.push_back(next.w);
  s.is_output.push_back(false);
  step.spec = spec;
}

}  // namespace gf::cuda
