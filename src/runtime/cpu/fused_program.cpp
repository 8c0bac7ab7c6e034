#include "runtime/cpu/fused_program.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "codegen/cpu/cpu_emitter.h"
#include "codegen/cpu/jit_compiler.h"
#include "fusion/kernel_ir.h"
#include "fusion/plan.h"
#include "runtime/cpu/anchor_kernel.h"
#include "runtime/cpu/reference_step.h"
#include "runtime/step_lifetimes.h"

namespace gf::cpu {

struct FusedProgram::Step {
  enum class Kind { kKernel, kAnchor, kReference } kind = Kind::kReference;
  NodeId node = kNoNode;               // kAnchor, kReference: the node to run
  int source = -1;                     // kKernel: index into sources_
  std::string kernel_name;             // kKernel
  std::vector<ValueId> buffer_values;  // kKernel: in the kernel's buffer order
  std::vector<bool> buffer_is_output;
  codegen::JitLibrary::KernelFn fn = nullptr;
  std::unique_ptr<AnchorKernel> anchor;  // kAnchor
  int workspace_slot = -1;               // kAnchor: index into memory_.offsets, -1 if none
  // kAnchor with a fused epilogue: the kernel's inputs and outputs (else the node's).
  std::vector<ValueId> anchor_inputs, anchor_outputs;
};

namespace {

bool same_type(const Value& a, const Value& b) {
  return a.type.dtype == b.type.dtype && a.type.shape.static_dims() == b.type.shape.static_dims();
}

}  // namespace

// Arenas of finished runs, kept for the next ones: a fresh allocation per run costs page faults
// over the whole arena (large blocks go back to the OS on free). Each run holds its own arena,
// so concurrent runs never share intermediates.
class FusedProgram::ArenaPool {
 public:
  using Arena = std::unique_ptr<void, decltype(&std::free)>;

  explicit ArenaPool(uint64_t bytes) : bytes_(bytes) {}

  Arena take() {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        Arena a = std::move(idle_.back());
        idle_.pop_back();
        return a;
      }
    }
    Arena a(bytes_ ? std::aligned_alloc(kArenaAlignment, round_up(bytes_)) : nullptr, &std::free);
    if (bytes_ && !a) {
      throw Error(ErrorCode::kOutOfMemory,
                  "cannot allocate the " + std::to_string(bytes_) + "-byte arena");
    }
    return a;
  }

  void give_back(Arena a) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(a));
  }

 private:
  static constexpr size_t kMaxIdle = 2;  // one per core of a small machine; more just holds memory
  static uint64_t round_up(uint64_t n) {
    return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }

  uint64_t bytes_;
  std::mutex mutex_;
  std::vector<Arena> idle_;
};

namespace {

std::vector<int64_t> static_dims(const Graph& g, ValueId v) {
  const Shape& s = g.value(v).type.shape;
  if (!s.is_static()) {
    throw Error(ErrorCode::kInvalidArgument, "the fused CPU backend needs static shapes; value '" +
                                                 g.value(v).name + "' is " + s.to_string());
  }
  return s.static_dims();
}

}  // namespace

FusedProgram::FusedProgram(Graph graph, codegen::JitCompiler& jit) : graph_(std::move(graph)) {
  const fusion::Plan plan = fusion::plan_fusion(graph_, fusion::CostModel::cpu());
  stats_.nodes = static_cast<int>(graph_.num_nodes());
  auto reference_step = [&](NodeId id) {
    Step s;
    s.node = id;
    steps_.push_back(std::move(s));
    ++stats_.reference_steps;
  };
  auto anchor_step = [&](NodeId id) {
    std::unique_ptr<AnchorKernel> anchor = make_anchor_kernel(graph_, id);
    if (!anchor) return reference_step(id);
    Step s;
    s.kind = Step::Kind::kAnchor;
    s.node = id;
    s.anchor = std::move(anchor);
    steps_.push_back(std::move(s));
    ++stats_.anchor_steps;
  };
  // A Conv group whose epilogue is an Add of a residual of the conv's type, a Relu, or the Add
  // then the Relu, with the last of them the group's only output: the conv kernel applies it as
  // it stores (one pass over Y less). False where the group is another shape or the conv does
  // not run on the packed GEMM.
  auto conv_epilogue_step = [&](const fusion::Group& group) {
    const Node& conv = graph_.node(group.anchor);
    if (conv.op != Op::kConv || group.outputs.size() != 1) return false;
    if (graph_.value(conv.outputs[0]).type.dtype != DType::kF32) return false;
    std::vector<NodeId> rest;
    for (NodeId id : group.nodes)
      if (id != group.anchor) rest.push_back(id);
    ValueId current = conv.outputs[0], residual = kNoValue;
    bool relu = false;
    for (NodeId id : rest) {  // in order: Add, then Relu, with Identity anywhere
      const Node& n = graph_.node(id);
      if (n.inputs.empty() || n.outputs.size() != 1) return false;
      if (n.op == Op::kAdd && residual == kNoValue && !relu) {
        if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return false;
        if (n.inputs[0] == current) residual = n.inputs[1];
        if (n.inputs[1] == current) residual = n.inputs[0];
        if (residual == kNoValue || !same_type(graph_.value(residual), graph_.value(current)) ||
            !same_type(graph_.value(n.outputs[0]), graph_.value(current)))
          return false;
      } else if (n.op == Op::kRelu && !relu && n.inputs[0] == current) {
        relu = true;
      } else if (n.op != Op::kIdentity || n.inputs[0] != current) {
        return false;
      }
      current = n.outputs[0];
    }
    if ((residual == kNoValue && !relu) || group.outputs[0] != current) return false;
    std::unique_ptr<AnchorKernel> anchor =
        make_conv_epilogue_kernel(graph_, conv, residual != kNoValue, relu);
    if (!anchor) return false;
    Step s;
    s.kind = Step::Kind::kAnchor;
    s.node = group.anchor;
    s.anchor = std::move(anchor);
    s.anchor_inputs = conv.inputs;
    s.anchor_inputs.resize(3, kNoValue);  // x, w, bias (or none)
    s.anchor_inputs.push_back(residual);
    s.anchor_outputs = {current};
    steps_.push_back(std::move(s));
    ++stats_.anchor_steps;
    return true;
  };
  auto fallback = [&](const std::vector<NodeId>& nodes, const Error& why) {
    for (NodeId id : nodes) anchor_step(id);  // an anchor kernel where one exists (MaxPool)
    stats_.fallback_nodes += static_cast<int>(nodes.size());
    stats_.fallback_reasons.push_back(why.what());
  };
  // Lowering and emission of one group's kernel; on kUnsupported the group's nodes run on the
  // reference kernels instead (counted as a fallback unless `quiet`).
  auto kernel_step = [&](const fusion::Group& group, const std::vector<NodeId>& nodes,
                         bool quiet = false) {
    const std::string name = "gf_kernel_" + std::to_string(group.id);
    try {
      fusion::FusedKernel k = fusion::lower_group(graph_, group, name);
      std::string source = codegen::emit_cpu_kernel(k, graph_);
      Step s;
      s.kind = Step::Kind::kKernel;
      s.source = static_cast<int>(sources_.size());
      s.kernel_name = name;
      for (const fusion::KernelBuffer& b : k.buffers) {
        s.buffer_values.push_back(b.value);
        s.buffer_is_output.push_back(b.is_output);
      }
      sources_.push_back(std::move(source));
      steps_.push_back(std::move(s));
      ++stats_.fused_kernels;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) throw;
      if (!quiet) return fallback(nodes, e);
      for (NodeId id : nodes) reference_step(id);
    }
  };
  for (const fusion::Group& group : plan.groups) {
    if (group.outputs.empty()) continue;  // nothing reads it
    switch (group.kind) {
      case fusion::GroupKind::kPointwise:
      case fusion::GroupKind::kReduction: kernel_step(group, group.nodes); break;
      case fusion::GroupKind::kGemm:
      case fusion::GroupKind::kAttention: {
        // An anchor kernel (BLAS on the buffers) or the reference kernel for the anchor, a
        // generated kernel for the rest; or a conv that takes its epilogue itself.
        if (conv_epilogue_step(group)) break;
        anchor_step(group.anchor);
        std::vector<NodeId> epilogue;
        for (NodeId id : group.nodes)
          if (id != group.anchor) epilogue.push_back(id);
        if (!epilogue.empty()) kernel_step(group, epilogue);
        break;
      }
      case fusion::GroupKind::kView: {
        // The planner keeps these for consumers that read strided views; the anchor kernels here
        // read dense buffers, so the views are materialised, by one generated copy kernel where
        // the group lowers as a pointwise one (a split into heads: 7 reference copies become 1).
        fusion::Group copy = group;
        copy.kind = fusion::GroupKind::kPointwise;
        kernel_step(copy, group.nodes, /*quiet=*/true);
        break;
      }
      case fusion::GroupKind::kOpaque:
        for (NodeId id : group.nodes) anchor_step(id);  // MaxPool has one; the rest: reference
        break;
    }
  }

  libraries_ = jit.compile_all(sources_);
  for (Step& s : steps_) {
    if (s.kind == Step::Kind::kKernel) s.fn = libraries_[static_cast<size_t>(s.source)]->kernel(s.kernel_name);
  }

  // Intermediates live in one arena, placed by their lifetimes over the steps.
  std::vector<StepBuffers> buffers(steps_.size());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    if (s.kind == Step::Kind::kKernel) {
      for (size_t b = 0; b < s.buffer_values.size(); ++b)
        (s.buffer_is_output[b] ? buffers[i].writes : buffers[i].reads).push_back(s.buffer_values[b]);
    } else if (!s.anchor_outputs.empty()) {
      buffers[i].writes = s.anchor_outputs;
      buffers[i].reads = s.anchor_inputs;
    } else {
      buffers[i].writes = graph_.node(s.node).outputs;
      buffers[i].reads = graph_.node(s.node).inputs;
    }
  }
  StepLifetimes lifetimes = step_lifetimes(graph_, buffers);
  arena_slot_ = std::move(lifetimes.slot_of_value);
  // Anchor workspaces live in the arena for their one step, after the values' slots.
  for (int i = 0; i < static_cast<int>(steps_.size()); ++i) {
    Step& s = steps_[static_cast<size_t>(i)];
    if (s.kind != Step::Kind::kAnchor || s.anchor->workspace_bytes() == 0) continue;
    s.workspace_slot = static_cast<int>(lifetimes.buffers.size());
    lifetimes.buffers.push_back({s.anchor->workspace_bytes(), i, i});
  }
  memory_ = plan_memory(lifetimes.buffers);
  stats_.arena_bytes = memory_.arena_bytes;
  stats_.arena_lower_bound = memory_.lower_bound;
  arenas_ = std::make_unique<ArenaPool>(memory_.arena_bytes);
}

FusedProgram::~FusedProgram() = default;

std::vector<Tensor> FusedProgram::run(std::span<const Tensor> inputs) const {
  GF_ASSERT(inputs.size() == graph_.inputs().size());
  std::vector<void*> ptr(graph_.num_values(), nullptr);
  std::vector<Tensor> outputs;
  for (ValueId v : graph_.outputs()) {
    outputs.emplace_back(graph_.value(v).type.dtype, static_dims(graph_, v));
    ptr[static_cast<size_t>(v)] = outputs.back().raw();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId v = graph_.inputs()[i];
    if (ptr[static_cast<size_t>(v)] == nullptr) ptr[static_cast<size_t>(v)] = const_cast<void*>(inputs[i].raw());
  }
  for (size_t v = 0; v < graph_.num_values(); ++v) {
    const Value& val = graph_.value(static_cast<ValueId>(v));
    if (val.is_constant() && ptr[v] == nullptr) ptr[v] = const_cast<void*>(val.constant.raw());
  }
  // An output that is also an input or a constant is copied, never aliased.
  for (size_t o = 0; o < outputs.size(); ++o) {
    const ValueId v = graph_.outputs()[o];
    const Value& val = graph_.value(v);
    const void* src = nullptr;
    if (val.is_constant()) src = val.constant.raw();
    for (size_t i = 0; i < inputs.size(); ++i)
      if (graph_.inputs()[i] == v) src = inputs[i].raw();
    if (src != nullptr && outputs[o].nbytes()) std::memcpy(outputs[o].raw(), src, outputs[o].nbytes());
  }
  // Back to the pool on every path; a run that failed leaves nothing in it that matters.
  struct Lease {
    ArenaPool& pool;
    ArenaPool::Arena arena;
    ~Lease() { pool.give_back(std::move(arena)); }
  } lease{*arenas_, arenas_->take()};
  void* const arena = lease.arena.get();
  for (size_t v = 0; v < graph_.num_values(); ++v) {
    if (arena_slot_[v] >= 0) {
      ptr[v] = static_cast<char*>(arena) + memory_.offsets[static_cast<size_t>(arena_slot_[v])];
    }
  }

  std::vector<void*> args;
  std::vector<const void*> anchor_in;
  std::vector<void*> anchor_out;
  std::vector<Tensor> in_tensors, out_tensors;
  auto wrap = [&](ValueId v) {
    const Value& val = graph_.value(v);
    return Tensor::wrap(val.type.dtype, static_dims(graph_, v), nullptr, ptr[static_cast<size_t>(v)]);
  };
  for (const Step& s : steps_) {
    if (s.kind == Step::Kind::kKernel) {
      args.clear();
      for (ValueId v : s.buffer_values) args.push_back(ptr[static_cast<size_t>(v)]);
      s.fn(args.data());
      continue;
    }
    if (s.kind == Step::Kind::kAnchor) {
      const Node& n = graph_.node(s.node);
      anchor_in.clear();
      anchor_out.clear();
      const bool fused = !s.anchor_outputs.empty();
      for (ValueId v : fused ? s.anchor_inputs : n.inputs)
        anchor_in.push_back(v == kNoValue ? nullptr : ptr[static_cast<size_t>(v)]);
      for (ValueId v : fused ? s.anchor_outputs : n.outputs)
        anchor_out.push_back(ptr[static_cast<size_t>(v)]);
      void* workspace = nullptr;
      if (s.workspace_slot >= 0)
        workspace = static_cast<char*>(arena) + memory_.offsets[static_cast<size_t>(s.workspace_slot)];
      s.anchor->run(anchor_in, anchor_out, workspace);
      continue;
    }
    const Node& n = graph_.node(s.node);
    in_tensors.clear();
    out_tensors.clear();
    for (ValueId v : n.inputs) in_tensors.push_back(v == kNoValue ? Tensor() : wrap(v));
    for (ValueId v : n.outputs) out_tensors.push_back(wrap(v));
    run_reference_step(graph_, n, in_tensors, out_tensors);
  }
  return outputs;
}

}  // namespace gf::cpu
