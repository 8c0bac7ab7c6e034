// From a fusion plan to CUDA steps. Each group takes the first path that accepts it:
//   pointwise/reduction  one generated kernel;
//   GEMM/attention       a decode-shaped product as a skinny GEMM kernel with the head of its
//                        epilogue fused (skinny_gemm_step.h; a norm alone in its group before
//                        the product goes into that kernel too, and its group is left out),
//                        else the anchor through cuBLASLt, cuDNN's fused matmul or our
//                        tensor-core GEMM (with a bias row and Relu/GELU of its epilogue:
//                        gemm_steps.h), cuDNN or a hand-written kernel; then
//                        the rest of the epilogue as one generated kernel;
//   view                 metadata views alias their input; strided views one generated kernel,
//                        unless the attention kernel after them reads them in place (and
//                        writes its output's transposed view in place: attention_views.h);
//   opaque               node by node.
// A group that no path takes as a whole is taken node by node: a metadata view aliases, an
// anchor tries its libraries and kernels, any other node its own generated kernel, and what is
// left runs on the host (counted, with the reason, in the stats).
#include <algorithm>
#include <map>
#include <set>

#include "codegen/cuda/anchor_kernels.h"
#include "fusion/kernel_ir.h"
#include "fusion/op_costs.h"
#include "fusion/plan.h"
#include "runtime/cuda/attention_views.h"
#include "runtime/cuda/cuda_attention_step.h"
#include "runtime/cuda/cuda_steps.h"
#include "runtime/cuda/gemm_steps.h"
#include "runtime/cuda/skinny_gemm_step.h"
#include "runtime/cuda/step_build_util.h"

namespace gf::cuda {

StepBuffers CudaStep::reads_and_writes(const Graph& g) const {
  StepBuffers b;
  switch (kind) {
    case Kind::kKernel:
    case Kind::kAttention:
      for (size_t i = 0; i < buffers.size(); ++i) {
        if (buffers[i] == kStepPrivateBuffer) continue;  // not a value: no lifetime, no edges
        (is_output[i] ? b.writes : b.reads).push_back(buffers[i]);
      }
      break;
    case Kind::kGemm:
      b.reads = {gemm_plan->a, gemm_plan->b, gemm_plan->bias};
      b.writes = {gemm_plan->c};
      break;
    case Kind::kConv:
    case Kind::kHost:
      b.reads = g.node(node).inputs;
      b.writes = g.node(node).outputs;
      break;
  }
  return b;
}

namespace {

class StepBuilder {
 public:
  StepBuilder(const Graph& g, CudaProgramState& state, CudaProgramStats& stats, int sm_count,
              int compute_capability, const CudaProgramOptions& options)
      : g_(g),
        state_(state),
        stats_(stats),
        skinny_gemm_(options.skinny_gemm),
        skinny_prefetch_distance_(
            static_cast<size_t>(std::max(options.skinny_prefetch_distance, 0))),
        attention_(options.attention),
        gemm_steps_(g, state, stats, options.gemm_library, sm_count, compute_capability) {
    emit_options_.sm_count = sm_count;
    emit_options_.compute_capability = compute_capability;
    emit_options_.round_16bit_intermediates = options.round_16bit_intermediates;
  }

  void build() {
    state_.storage_of.resize(g_.num_values());
    for (size_t v = 0; v < g_.num_values(); ++v) state_.storage_of[v] = static_cast<ValueId>(v);
    const fusion::Plan plan = fusion::plan_fusion(g_, fusion::CostModel::h200());
    stats_.nodes = static_cast<int>(g_.num_nodes());
    plan_skinny_gemms(plan);
    plan_attention_views(plan);
    for (const fusion::Group& group : plan.groups) {
      if (group.outputs.empty()) continue;           // nothing reads it
      if (folded_groups_.count(group.id)) continue;  // a skinny GEMM kernel applies its norm
      add_group(group);
    }
  }

 private:
  void add_group(const fusion::Group& group) {
    std::vector<NodeId> rest;  // what the group's own path did not take
    switch (group.kind) {
      case fusion::GroupKind::kPointwise:
      case fusion::GroupKind::kReduction:
        if (!try_group_kernel(group, "gf_kernel_" + std::to_string(group.id))) rest = group.nodes;
        break;
      case fusion::GroupKind::kGemm:
      case fusion::GroupKind::kAttention: {
        std::vector<NodeId> done{group.anchor};  // what the anchor's step computes
        const bool gemm = group.kind == fusion::GroupKind::kGemm;
        const bool taken =
            gemm ? try_skinny_gemm(group, done) || gemm_steps_.add_with_epilogue(group, done)
                 : try_attention_in_place(group, done);
        if (!taken) add_node(group.anchor);
        const fusion::Group after = epilogue_after(group, done);
        std::vector<NodeId> epilogue;
        for (NodeId id : after.nodes)
          if (id != group.anchor) epilogue.push_back(id);
        const std::string name = "gf_epilogue_" + std::to_string(group.id);
        if (!epilogue.empty() && !try_group_kernel(after, name)) rest = epilogue;
        break;
      }
      case fusion::GroupKind::kView: {
        if (in_place_views_.count(group.id)) {  // the attention kernel reads these in place
          for (NodeId id : group.nodes)
            if (fusion::is_metadata_view(g_.node(id).op)) add_node(id);
          break;
        }
        bool metadata = true;
        for (NodeId id : group.nodes)
          metadata = metadata && fusion::is_metadata_view(g_.node(id).op);
        if (metadata) {
          rest = group.nodes;  // add_node aliases each
          break;
        }
        fusion::Group as_kernel = group;
        as_kernel.kind = fusion::GroupKind::kPointwise;
        if (!try_group_kernel(as_kernel, "gf_view_" + std::to_string(group.id))) rest = group.nodes;
        break;
      }
      case fusion::GroupKind::kOpaque:
        rest = group.nodes;
        break;
    }
    for (NodeId id : rest) add_node(id);
  }

  // One node alone, by the first path that takes it.
  void add_node(NodeId id) {
    const Node& n = g_.node(id);
    if (fusion::is_metadata_view(n.op) && n.inputs[0] != kNoValue) {
      state_.storage_of[static_cast<size_t>(n.outputs[0])] =
          state_.storage_of[static_cast<size_t>(n.inputs[0])];
      ++stats_.aliased_views;
      return;
    }
    std::string why;
    if ((n.op == Op::kMatMul || n.op == Op::kGemm) && gemm_steps_.add_node(id, why)) return;
    if ((n.op == Op::kConv || n.op == Op::kNhwcConv) && try_conv(id, why)) return;
    const OpKind kind = op_info(n.op).kind;
    if (kind == OpKind::kElementwise || kind == OpKind::kBroadcast || kind == OpKind::kInjective ||
        kind == OpKind::kReduction) {
      if (try_group_kernel(single_node_group(id), "gf_node_" + std::to_string(id), &why)) return;
    }
    if (codegen::has_cuda_anchor_kernel(n.op) && try_anchor_kernel(id, why)) return;
    if (why.empty()) why = describe_node(g_, n) + ": no CUDA path for this op";
    CudaStep s;
    s.kind = CudaStep::Kind::kHost;
    s.node = id;
    s.label = "host step for " + describe_node(g_, n);
    state_.steps.push_back(std::move(s));
    ++stats_.host_steps;
    ++stats_.fallback_nodes;
    stats_.fallback_reasons.push_back(why);
  }

  fusion::Group single_node_group(NodeId id) const {
    const Node& n = g_.node(id);
    fusion::Group s;
    s.id = 0;
    s.nodes = {id};
    if (op_info(n.op).kind == OpKind::kReduction) {
      s.kind = fusion::GroupKind::kReduction;
      s.anchor = id;
    }
    for (ValueId v : n.inputs)
      if (v != kNoValue && std::find(s.inputs.begin(), s.inputs.end(), v) == s.inputs.end())
        s.inputs.push_back(v);
    s.outputs = n.outputs;
    return s;
  }

  bool try_group_kernel(const fusion::Group& group, const std::string& name,
                        std::string* why = nullptr) {
    // A pointwise kernel iterates over its first output: outputs of other sizes (a Split into
    // unequal parts) would be partly unwritten.
    if (group.kind == fusion::GroupKind::kPointwise) {
      for (ValueId v : group.outputs) {
        if (g_.value(v).type.shape.numel() != g_.value(group.outputs.front()).type.shape.numel()) {
          if (why)
            *why = describe_node(g_, g_.node(group.nodes.front())) + ": outputs of different sizes";
          return false;
        }
      }
    }
    try {
      const fusion::FusedKernel k = fusion::lower_group(g_, group, name);
      CudaStep s;
      s.kind = CudaStep::Kind::kKernel;
      s.kernel = codegen::emit_cuda_kernel(k, g_, emit_options_);
      s.label = "kernel " + name + " (" + k.comment + ")";
      for (const fusion::KernelBuffer& b : k.buffers) {
        s.buffers.push_back(b.value);
        s.is_output.push_back(b.is_output);
      }
      state_.steps.push_back(std::move(s));
      ++stats_.generated_kernels;
      return true;
    } catch (const Error& e) {
      if (!is_unsupported(e)) throw;
      if (why) *why = e.what();
      return false;
    }
  }

  bool try_anchor_kernel(NodeId id, std::string& why) {
    const Node& n = g_.node(id);
    const std::string name = "gf_anchor_" + std::to_string(id);
    try {
      CudaStep s;
      s.kind = CudaStep::Kind::kKernel;
      s.kernel = codegen::emit_anchor_kernel(n, g_, name, emit_options_);
      s.label = "anchor kernel " + name + " for " + describe_node(g_, n);
      s.buffers = codegen::anchor_kernel_buffers(n);
      for (ValueId v : s.buffers)
        s.is_output.push_back(std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end());
      if (n.op == Op::kAttention) {
        add_attention_step(id, codegen::read_attention_node(n, g_), std::move(s));
        return true;
      }
      state_.steps.push_back(std::move(s));
      ++stats_.anchor_kernels;
      return true;
    } catch (const Error& e) {
      if (!is_unsupported(e)) throw;
      why = e.what();
      return false;
    }
  }

  // The skinny GEMM steps, ahead of the groups: a norm that one of them applies to its A is
  // left out where it is alone in its group (which comes first), so that choice is made here.
  void plan_skinny_gemms(const fusion::Plan& plan) {
    if (skinny_gemm_ == SkinnyGemm::kOff) return;
    std::map<NodeId, const fusion::Group*> group_of;
    for (const fusion::Group& group : plan.groups)
      for (NodeId id : group.nodes) group_of[id] = &group;
    const std::vector<int> reads = value_reads(g_);
    std::vector<int> in_order;  // the steps' group ids, in the order they run
    for (const fusion::Group& group : plan.groups) {
      if (group.kind != fusion::GroupKind::kGemm || group.outputs.empty()) continue;
      const std::string name = "gf_skinny_" + std::to_string(group.id);
      std::optional<SkinnyGemmStep> s =
          skinny_gemm_step(g_, group, name, emit_options_.sm_count, skinny_gemm_, &reads);
      if (s && s->folded_norm != kNoNode) {
        const fusion::Group* norm_group = group_of.at(s->folded_norm);
        if (norm_group->nodes.size() == 1 && !folded_groups_.count(norm_group->id)) {
          folded_groups_.insert(norm_group->id);
        } else {  // the norm's group computes more: A is read as that group stores it
          s = skinny_gemm_step(g_, group, name, emit_options_.sm_count, skinny_gemm_);
        }
      }
      if (s) {
        skinny_steps_.emplace(group.id, std::move(*s));
        in_order.push_back(group.id);
      }
    }
    // Each kernel starts the weight reads of a product after it (prefetch_next_weights).
    const size_t distance = skinny_prefetch_distance_;
    for (size_t i = 0; distance > 0 && i + distance < in_order.size(); ++i) {
      prefetch_next_weights(skinny_steps_.at(in_order[i]), skinny_steps_.at(in_order[i + distance]),
                            emit_options_.sm_count);
    }
  }

  // Attention kernels that read their operands where views of other values put them, and write
  // their output where its transposed view goes, ahead of the groups: the view groups they
  // replace come first. A view group is replaced only when all it makes is operands read here.
  void plan_attention_views(const fusion::Plan& plan) {
    std::map<ValueId, const fusion::Group*> view_group_of;
    for (const fusion::Group& group : plan.groups) {
      if (group.kind != fusion::GroupKind::kView) continue;
      for (NodeId id : group.nodes)
        for (ValueId v : g_.node(id).outputs) view_group_of[v] = &group;
    }
    const ValueUses uses(g_);
    for (const fusion::Group& group : plan.groups) {
      if (group.kind != fusion::GroupKind::kAttention || group.anchor == kNoNode) continue;
      const Node& n = g_.node(group.anchor);
      if (n.op != Op::kAttention || n.inputs.size() < 3 ||
          g_.value(n.inputs[0]).type.shape.rank() != 4)
        continue;
      try {
        codegen::AttentionNode a = codegen::read_attention_node(n, g_);
        std::vector<ValueId> buffers = codegen::anchor_kernel_buffers(n);
        std::set<const fusion::Group*> views;
        std::set<ValueId> operands;
        codegen::HeadStrides* strides[3] = {&a.q, &a.k, &a.v};
        for (size_t i = 0; i < 3; ++i) {
          const auto group_it = view_group_of.find(n.inputs[i]);
          if (group_it == view_group_of.end()) continue;
          const std::optional<HeadView> view = input_head_view(g_, n.inputs[i]);
          if (!view || !outside_views(view->buffer, view_group_of)) continue;
          buffers[i] = view->buffer;
          *strides[i] = view->strides;
          views.insert(group_it->second);
          operands.insert(n.inputs[i]);
        }
        bool views_only_feed_this = true;  // else the view group's kernel must still run
        for (const fusion::Group* view : views)
          for (ValueId out : view->outputs)
            views_only_feed_this = views_only_feed_this && operands.count(out) &&
                                   uses.only_read_by(out, std::span(&group.anchor, 1));
        if (!views_only_feed_this) continue;
        std::vector<NodeId> epilogue;
        for (NodeId id : group.nodes)
          if (id != group.anchor) epilogue.push_back(id);
        const std::optional<HeadView> out = output_head_view(g_, uses, n.outputs[0], epilogue);
        if (out) {
          buffers.back() = out->buffer;
          a.y = out->strides;
        }
        if (views.empty() && !out) continue;
        const std::string name = "gf_anchor_" + std::to_string(group.anchor);
        InPlaceAttention step;
        step.step.kind = CudaStep::Kind::kKernel;
        step.step.kernel = codegen::emit_attention_kernel_for(n, g_, a, name, emit_options_);
        step.step.label = "anchor kernel " + name + " for " + describe_node(g_, n) +
                          (views.empty() ? "" : ", reading its operands' views in place") +
                          (out ? ", writing its output's transposed view in place" : "");
        step.step.buffers = buffers;
        step.step.is_output.assign(buffers.size(), false);
        step.step.is_output.back() = true;
        if (out) step.done = epilogue;
        step.node = a;
        for (const fusion::Group* view : views) in_place_views_.insert(view->id);
        in_place_attention_.emplace(group.id, std::move(step));
      } catch (const Error& e) {
        if (!is_unsupported(e)) throw;  // the group takes its usual path
      }
    }
  }

  // Whether `v` is made outside every view group (or is a metadata view of such a value), so
  // that it has a buffer of its own whatever becomes of the view groups.
  bool outside_views(ValueId v,
                     const std::map<ValueId, const fusion::Group*>& view_group_of) const {
    while (view_group_of.count(v)) {
      const Node& n = g_.node(g_.value(v).producer);
      if (!fusion::is_metadata_view(n.op) || n.inputs[0] == kNoValue) return false;
      v = n.inputs[0];
    }
    return true;
  }

  bool try_attention_in_place(const fusion::Group& group, std::vector<NodeId>& done) {
    const auto it = in_place_attention_.find(group.id);
    if (it == in_place_attention_.end()) return false;
    done.insert(done.end(), it->second.done.begin(), it->second.done.end());
    add_attention_step(group.anchor, it->second.node, std::move(it->second.step));
    in_place_attention_.erase(it);
    return true;
  }

  // The attention step: our kernel `generated`, or cuDNN's on the same operands where
  // SessionOptions::attention picks it.
  void add_attention_step(NodeId id, const codegen::AttentionNode& a, CudaStep generated) {
    std::optional<CudaStep> cudnn;
    {
      const ScopeClock clock(stats_.compile_seconds.libraries);
      cudnn = cudnn_attention_step(g_, id, a, generated, attention_, state_.libraries);
    }
    if (cudnn) {
      state_.steps.push_back(std::move(*cudnn));
      ++stats_.library_calls;
      ++stats_.cudnn_attention_steps;
      return;
    }
    state_.steps.push_back(std::move(generated));
    ++stats_.anchor_kernels;
  }

  bool try_skinny_gemm(const fusion::Group& group, std::vector<NodeId>& done) {
    const auto it = skinny_steps_.find(group.id);
    if (it == skinny_steps_.end()) return false;
    std::optional<SkinnyGemmStep> s = std::move(it->second);
    skinny_steps_.erase(it);
    done = std::move(s->nodes);
    state_.steps.push_back(std::move(s->step));
    ++stats_.generated_kernels;
    ++stats_.skinny_gemm_steps;
    return true;
  }

  // `group` without the epilogue nodes in `done` (the anchor stays: lowering skips it); the
  // values they computed are read as inputs.
  fusion::Group epilogue_after(const fusion::Group& group, const std::vector<NodeId>& done) const {
    fusion::Group after = group;
    auto is_done = [&](NodeId id) {
      return id != group.anchor && std::find(done.begin(), done.end(), id) != done.end();
    };
    auto made_by_done = [&](ValueId v) { return is_done(g_.value(v).producer); };
    std::erase_if(after.nodes, is_done);
    std::erase_if(after.outputs, made_by_done);
    for (NodeId id : after.nodes) {
      for (ValueId v : g_.node(id).inputs) {
        const auto& ins = after.inputs;
        const bool known = std::find(ins.begin(), ins.end(), v) != ins.end();
        if (v != kNoValue && made_by_done(v) && !known) after.inputs.push_back(v);
      }
    }
    return after;
  }

  bool try_conv(NodeId id, std::string& why) {
    const ScopeClock clock(stats_.compile_seconds.libraries);
    CudaLibraries& lib = state_.libraries;
    const Node& n = g_.node(id);
    try {
      if (lib.cudnn_refused) throw Error(ErrorCode::kUnsupported, cudnn_reason_);
      if (!lib.cudnn) lib.cudnn = std::make_unique<CudnnHandle>();
      CudaStep s;
      s.kind = CudaStep::Kind::kConv;
      s.node = id;
      s.conv = std::make_unique<CudnnConv>(*lib.cudnn, n, g_, lib.allow_tf32);
      s.label = "cuDNN convolution for " + describe_node(g_, n);
      state_.steps.push_back(std::move(s));
      ++stats_.library_calls;
      return true;
    } catch (const Error& e) {
      if (!is_unsupported(e)) throw;
      if (!lib.cudnn) {
        lib.cudnn_refused = true;
        cudnn_reason_ = e.what();
      }
      why = describe_node(g_, n) + ": " + e.what();
      return false;
    }
  }

  const Graph& g_;
  CudaProgramState& state_;
  CudaProgramStats& stats_;
  SkinnyGemm skinny_gemm_;
  size_t skinny_prefetch_distance_;
  AttentionPath attention_;
  GemmSteps gemm_steps_;
  std::map<int, SkinnyGemmStep> skinny_steps_;  // by GEMM group id (plan_skinny_gemms)
  std::set<int> folded_groups_;                 // norm groups a skinny GEMM kernel applies
  struct InPlaceAttention {
    CudaStep step;
    codegen::AttentionNode node;  // the strides and offsets `step` reads and writes
    std::vector<NodeId> done;     // the epilogue it writes through, when it does
  };
  std::map<int, InPlaceAttention> in_place_attention_;  // by attention group id
  std::set<int> in_place_views_;                        // view groups those kernels read in place
  codegen::CudaEmitOptions emit_options_;
  std::string cudnn_reason_;
};

}  // namespace

void build_cuda_steps(const Graph& g, CudaProgramState& state, CudaProgramStats& stats,
                      int sm_count, int compute_capability, const CudaProgramOptions& options) {
  StepBuilder(g, state, stats, sm_count, compute_capability, options).build();
}

}  // namespace gf::cuda
