// The fusion planner: greedy merging of producer and consumer groups by op kind, checked
// against cycles and a size budget, and accepted only when the cost model says it saves time.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "fusion/op_costs.h"
#include "fusion/plan.h"

namespace gf::fusion {

namespace {

struct WorkGroup {
  GroupKind kind = GroupKind::kPointwise;
  NodeId anchor = kNoNode;
  std::vector<NodeId> nodes;
  bool alive = true;
};

GroupKind initial_kind(OpKind kind) {
  switch (kind) {
    case OpKind::kElementwise:
    case OpKind::kBroadcast:
    case OpKind::kInjective: return GroupKind::kPointwise;
    case OpKind::kReduction: return GroupKind::kReduction;
    case OpKind::kGemmLike: return GroupKind::kGemm;
    case OpKind::kAttention: return GroupKind::kAttention;
    case OpKind::kOpaque: return GroupKind::kOpaque;
  }
  return GroupKind::kOpaque;
}

class Planner {
 public:
  Planner(const Graph& g, const CostModel& m) : g_(g), m_(m) {}

  Plan run() {
    index_graph();
    merge_vertically();
    merge_horizontally();
    classify_views();
    return finish();
  }

 private:
  void index_graph() {
    order_ = g_.topological_order();
    consumers_.assign(g_.num_values(), {});
    for (NodeId id : order_) {
      for (ValueId v : g_.node(id).inputs)
        if (v != kNoValue) consumers_[static_cast<size_t>(v)].push_back(id);
    }
    is_output_.assign(g_.num_values(), false);
    for (ValueId v : g_.outputs()) is_output_[static_cast<size_t>(v)] = true;
    group_of_.assign(g_.num_nodes(), -1);
    for (NodeId id : order_) {
      const Node& n = g_.node(id);
      WorkGroup wg;
      wg.kind = initial_kind(op_info(n.op).kind);
      if (wg.kind != GroupKind::kPointwise && wg.kind != GroupKind::kOpaque) wg.anchor = id;
      wg.nodes = {id};
      group_of_[static_cast<size_t>(id)] = static_cast<int>(groups_.size());
      groups_.push_back(std::move(wg));
    }
  }

  const Node& node(NodeId id) const { return g_.node(id); }
  int group_of(NodeId id) const { return group_of_[static_cast<size_t>(id)]; }

  // Groups that read what `gid` produces, or that `gid` reads from.
  std::set<int> successors(int gid) const {
    std::set<int> out;
    for (NodeId id : groups_[static_cast<size_t>(gid)].nodes)
      for (ValueId v : node(id).outputs)
        for (NodeId c : consumers_[static_cast<size_t>(v)])
          if (group_of(c) != gid) out.insert(group_of(c));
    return out;
  }
  std::set<int> predecessors(int gid) const {
    std::set<int> out;
    for (NodeId id : groups_[static_cast<size_t>(gid)].nodes)
      for (ValueId v : node(id).inputs) {
        if (v == kNoValue) continue;
        NodeId p = g_.value(v).producer;
        if (p != kNoNode && group_of(p) != gid) out.insert(group_of(p));
      }
    return out;
  }

  // True if `to` is reachable from `from` through at least one other group: merging the two
  // would then create a cycle.
  bool has_indirect_path(int from, int to) const {
    std::vector<int> stack;
    std::set<int> seen;
    for (int s : successors(from))
      if (s != to) stack.push_back(s);
    while (!stack.empty()) {
      int gid = stack.back();
      stack.pop_back();
      if (!seen.insert(gid).second) continue;
      for (int s : successors(gid)) {
        if (s == to) return true;
        stack.push_back(s);
      }
    }
    return false;
  }

  bool has_path(int from, int to) const {
    return successors(from).count(to) || has_indirect_path(from, to);
  }

  const Shape& out_shape(NodeId id) const { return g_.value(node(id).outputs[0]).type.shape; }
  const Shape& in_shape(NodeId id) const { return g_.value(node(id).inputs[0]).type.shape; }

  double group_flops(int gid) const {
    double f = 0;
    for (NodeId id : groups_[static_cast<size_t>(gid)].nodes) f += node_flops(g_, node(id));
    return f;
  }
  // The iteration space of a pointwise group: the elements of its outputs (lower_group runs the
  // kernel over them), whatever the size of the values inside it (a table it gathers rows from).
  double group_elements(int gid) const {
    auto in_group = [&](NodeId id) { return group_of(id) == gid; };
    return max_elements(boundary(groups_[static_cast<size_t>(gid)].nodes, in_group).second);
  }
  double max_elements(const std::set<ValueId>& values) const {
    double e = 0;
    for (ValueId v : values) e = std::max(e, value_elements(g_, v));
    return e;
  }

  // Values that cross a group boundary, given a hypothetical membership test.
  template <class InGroup>
  std::pair<std::set<ValueId>, std::set<ValueId>> boundary(const std::vector<NodeId>& nodes,
                                                          InGroup in_group) const {
    std::set<ValueId> ins, outs;
    for (NodeId id : nodes) {
      for (ValueId v : node(id).inputs) {
        if (v == kNoValue) continue;
        NodeId p = g_.value(v).producer;
        if (p == kNoNode || !in_group(p)) ins.insert(v);
      }
      for (ValueId v : node(id).outputs) {
        bool outside = is_output_[static_cast<size_t>(v)];
        for (NodeId c : consumers_[static_cast<size_t>(v)]) outside = outside || !in_group(c);
        if (outside) outs.insert(v);
      }
    }
    return {ins, outs};
  }

  // Why producer group p and consumer group c may not merge, or nullopt if they may.
  std::optional<std::string> refuse_vertical(int p, int c, std::string& kind) const {
    const WorkGroup& P = groups_[static_cast<size_t>(p)];
    const WorkGroup& C = groups_[static_cast<size_t>(c)];
    if (P.kind == GroupKind::kOpaque || C.kind == GroupKind::kOpaque) {
      kind = "opaque";
      return std::string("an opaque op (shape producer) does not fuse");
    }
    if (P.anchor != kNoNode && C.anchor != kNoNode) {
      kind = "anchor";
      return std::string("both hold an anchor (") + std::string(op_name(node(P.anchor).op)) +
             ", " + std::string(op_name(node(C.anchor).op)) + "): one per kernel";
    }
    if (P.anchor != kNoNode) {  // C is a pointwise epilogue of P's anchor
      kind = "epilogue";
      const NodeId a = P.anchor;
      for (NodeId id : C.nodes) {
        const OpKind k = op_info(node(id).op).kind;
        const bool elementwise = k == OpKind::kElementwise || k == OpKind::kBroadcast;
        if (P.kind == GroupKind::kReduction) {
          if (!elementwise) return std::string("only elementwise ops follow a reduction");
          if (!(out_shape(id) == out_shape(a)) && !(out_shape(id) == in_shape(a)))
            return "epilogue shape " + out_shape(id).to_string() + " is neither the rows " +
                   in_shape(a).to_string() + " nor the reduced " + out_shape(a).to_string();
        } else if (P.kind == GroupKind::kAttention && !elementwise) {
          if (!is_strided_view(node(id).op) || node(id).op == Op::kSplit)
            return std::string("attention writes through reshapes/transposes only");
        } else {
          // A GEMM epilogue is elementwise over the product's elements; reshapes of the
          // (contiguous) product in between relabel them and cost nothing.
          if (!elementwise && !is_metadata_view(node(id).op))
            return std::string(op_name(node(id).op)) + " is not elementwise: a " +
                   std::string(group_kind_name(P.kind)) + " epilogue is elementwise";
          if (P.kind != GroupKind::kAttention &&
              value_elements(g_, node(id).outputs[0]) != value_elements(g_, node(a).outputs[0]))
            return "epilogue shape " + out_shape(id).to_string() + " differs from the " +
                   std::string(op_name(node(a).op)) + " output " + out_shape(a).to_string();
        }
      }
    } else if (C.anchor != kNoNode) {  // P is a pointwise prologue of C's anchor
      kind = "prologue";
      if (C.kind != GroupKind::kReduction)
        return std::string(group_kind_name(C.kind)) + " reads its operands as stored (views aside)";
      for (NodeId id : P.nodes) {
        const OpKind k = op_info(node(id).op).kind;
        if (k != OpKind::kElementwise && k != OpKind::kBroadcast)
          return std::string(op_name(node(id).op)) + " is not elementwise";
        if (!(out_shape(id) == in_shape(C.anchor)))
          return "prologue shape " + out_shape(id).to_string() + " differs from the rows " +
                 in_shape(C.anchor).to_string();
      }
    } else {
      kind = "pointwise";
    }
    if (has_indirect_path(p, c)) return std::string("merging would create a cycle");
    if (auto why = refuse_partial_outputs(p, c)) return why;
    const size_t ops = P.nodes.size() + C.nodes.size();
    if (ops > static_cast<size_t>(m_.max_ops_per_kernel))
      return "size budget: " + std::to_string(ops) + " ops > " +
             std::to_string(m_.max_ops_per_kernel);
    return std::nullopt;
  }

  // Every value the merged kernel writes must span its iteration space (pointwise: its largest
  // output; a reduction: its rows or its full input); a smaller one would be written again at
  // every point.
  std::optional<std::string> refuse_partial_outputs(int p, int c) const {
    std::vector<NodeId> both = groups_[static_cast<size_t>(p)].nodes;
    const auto& cn = groups_[static_cast<size_t>(c)].nodes;
    both.insert(both.end(), cn.begin(), cn.end());
    NodeId anchor = groups_[static_cast<size_t>(p)].anchor;
    if (anchor == kNoNode) anchor = groups_[static_cast<size_t>(c)].anchor;
    auto in_both = [&](NodeId id) { return group_of(id) == p || group_of(id) == c; };
    const auto outs = boundary(both, in_both).second;
    double space = max_elements(outs);
    double rows = space;
    if (anchor != kNoNode) {
      space = value_elements(g_, node(anchor).inputs[0]);
      rows = value_elements(g_, node(anchor).outputs[0]);
      if (groups_[static_cast<size_t>(p)].kind != GroupKind::kReduction &&
          groups_[static_cast<size_t>(c)].kind != GroupKind::kReduction) {
        space = rows;  // GEMM/attention: the epilogue runs over the anchor's output
      }
    }
    for (ValueId v : outs) {
      const double e = value_elements(g_, v);
      if (e != space && e != rows) {
        return "it would write " + g_.value(v).name + " (" + g_.value(v).type.to_string() +
               ") once per point of a larger iteration space";
      }
    }
    return std::nullopt;
  }

  struct Gain {
    double bytes = 0;
    double time_us = 0;
  };

  Gain vertical_gain(int p, int c) const {
    std::vector<NodeId> both = groups_[static_cast<size_t>(p)].nodes;
    const auto& cn = groups_[static_cast<size_t>(c)].nodes;
    both.insert(both.end(), cn.begin(), cn.end());
    auto in_both = [&](NodeId id) { return group_of(id) == p || group_of(id) == c; };
    Gain gain;
    for (NodeId id : groups_[static_cast<size_t>(p)].nodes) {
      for (ValueId v : node(id).outputs) {
        bool read_by_c = false, read_elsewhere = is_output_[static_cast<size_t>(v)];
        for (NodeId u : consumers_[static_cast<size_t>(v)]) {
          read_by_c = read_by_c || group_of(u) == c;
          read_elsewhere = read_elsewhere || !in_both(u);
        }
        // The consumer no longer reads it; if nothing else does, it is never written either.
        if (read_by_c) gain.bytes += value_bytes(g_, v) * (read_elsewhere ? 1 : 2);
      }
    }
    // Recomputation: a producer whose output is broadcast into a larger consumer runs once per
    // consumer element in a fused kernel.
    const double pe = group_elements(p), ce = group_elements(c);
    const bool pointwise_pair = groups_[static_cast<size_t>(p)].anchor == kNoNode &&
                                groups_[static_cast<size_t>(c)].anchor == kNoNode;
    double extra_flops = 0;
    if (pointwise_pair && ce > pe && pe > 0) extra_flops = group_flops(p) * (ce / pe - 1);
    gain.time_us = gain.bytes / (m_.bandwidth_gb_per_s * 1e3) + m_.launch_us -
                   m_.time_us(0, extra_flops);
    const auto [ins, outs] = boundary(both, in_both);
    if (ins.size() + outs.size() > static_cast<size_t>(m_.max_buffers_per_kernel)) gain.time_us = -1;
    return gain;
  }

  void merge(int into, int from) {
    WorkGroup& a = groups_[static_cast<size_t>(into)];
    WorkGroup& b = groups_[static_cast<size_t>(from)];
    for (NodeId id : b.nodes) group_of_[static_cast<size_t>(id)] = into;
    a.nodes.insert(a.nodes.end(), b.nodes.begin(), b.nodes.end());
    if (a.anchor == kNoNode) {
      a.anchor = b.anchor;
      a.kind = b.kind;
    }
    b.nodes.clear();
    b.alive = false;
  }

  std::string group_label(int gid) const {
    const WorkGroup& wg = groups_[static_cast<size_t>(gid)];
    return node(wg.anchor != kNoNode ? wg.anchor : wg.nodes.front()).name;
  }

  void merge_vertically() {
    std::set<std::pair<int, int>> refused;
    for (bool changed = true; changed;) {
      changed = false;
      for (NodeId id : order_) {
        const int c = group_of(id);
        int best = -1;
        Gain best_gain;
        std::string best_kind;
        for (int p : predecessors(c)) {
          std::string kind;
          auto why_not = refuse_vertical(p, c, kind);
          Gain gain = vertical_gain(p, c);
          if (!why_not && gain.time_us <= 0) why_not = "the cost model sees no gain";
          if (why_not) {
            if (refused.insert({p, c}).second) {
              decisions_.push_back({kind, group_label(p), group_label(c), false, *why_not,
                                    gain.bytes, gain.time_us});
            }
            continue;
          }
          if (best < 0 || gain.time_us > best_gain.time_us) {
            best = p;
            best_gain = gain;
            best_kind = kind;
          }
        }
        if (best >= 0) {
          decisions_.push_back({best_kind, group_label(best), group_label(c), true,
                                "saves " + std::to_string(static_cast<int64_t>(best_gain.bytes)) +
                                    " bytes and a launch",
                                best_gain.bytes, best_gain.time_us});
          merge(best, c);
          changed = true;
        }
      }
    }
  }

  // Pointwise siblings over the same iteration space that read a common input: one kernel
  // reads it once.
  void merge_horizontally() {
    for (ValueId v = 0; v < static_cast<ValueId>(g_.num_values()); ++v) {
      std::vector<int> siblings;
      for (NodeId c : consumers_[static_cast<size_t>(v)]) {
        const int gid = group_of(c);
        if (groups_[static_cast<size_t>(gid)].kind == GroupKind::kPointwise &&
            std::find(siblings.begin(), siblings.end(), gid) == siblings.end())
          siblings.push_back(gid);
      }
      for (size_t i = 1; i < siblings.size(); ++i) {
        const int a = siblings[0], b = siblings[i];
        if (!groups_[static_cast<size_t>(a)].alive || !groups_[static_cast<size_t>(b)].alive) continue;
        std::string reason;
        if (group_elements(a) != group_elements(b)) {
          reason = "different iteration spaces";
        } else if (has_path(a, b) || has_path(b, a)) {
          reason = "one depends on the other";
        } else if (groups_[static_cast<size_t>(a)].nodes.size() +
                       groups_[static_cast<size_t>(b)].nodes.size() >
                   static_cast<size_t>(m_.max_ops_per_kernel)) {
          reason = "size budget";
        }
        const double saved = value_bytes(g_, v);
        decisions_.push_back({"horizontal", group_label(a), group_label(b), reason.empty(),
                              reason.empty() ? "reads " + g_.value(v).name + " once" : reason,
                              reason.empty() ? saved : 0,
                              reason.empty() ? saved / (m_.bandwidth_gb_per_s * 1e3) + m_.launch_us : 0});
        if (reason.empty()) merge(a, b);
      }
    }
  }

  // Groups of pure data relabelling launch nothing: metadata views always; strided views when
  // every reader (or the writer) is a kernel that addresses its operands by strides.
  void classify_views() {
    for (int gid = 0; gid < static_cast<int>(groups_.size()); ++gid) {
      WorkGroup& wg = groups_[static_cast<size_t>(gid)];
      if (!wg.alive || wg.kind != GroupKind::kPointwise) continue;
      bool metadata = true, strided = true, last_two_swap = true;
      for (NodeId id : wg.nodes) {
        const Node& n = node(id);
        metadata = metadata && is_metadata_view(n.op);
        strided = strided && is_strided_view(n.op);
        if (n.op == Op::kTranspose) {
          const auto perm = n.attrs.get_ints("perm");
          const size_t r = perm.size();
          bool swap = r >= 2 && perm[r - 1] == static_cast<int64_t>(r - 2) &&
                      perm[r - 2] == static_cast<int64_t>(r - 1);
          for (size_t i = 0; i + 2 < r; ++i) swap = swap && perm[i] == static_cast<int64_t>(i);
          last_two_swap = last_two_swap && swap;
        } else if (!is_metadata_view(n.op)) {
          last_two_swap = false;
        }
      }
      std::string why;
      if (metadata) {
        why = "only relabels a contiguous buffer";
      } else if (strided) {
        bool readers_take_views = true;
        for (int s : successors(gid)) {
          const GroupKind k = groups_[static_cast<size_t>(s)].kind;
          readers_take_views = readers_take_views &&
                               (k == GroupKind::kAttention || (k == GroupKind::kGemm && last_two_swap));
        }
        bool writer_is_attention = !predecessors(gid).empty();
        for (int p : predecessors(gid))
          writer_is_attention = writer_is_attention && groups_[static_cast<size_t>(p)].kind == GroupKind::kAttention;
        if (readers_take_views && !successors(gid).empty()) why = "read by its consumers as strided views";
        if (writer_is_attention) why = "attention writes its output in this layout";
      }
      if (!why.empty()) {
        wg.kind = GroupKind::kView;
        decisions_.push_back({"view", group_label(gid), "", true, why, 0, m_.launch_us});
      }
    }
  }

  Plan finish() {
    Plan plan;
    plan.model = m_;
    // Order groups by Kahn's algorithm over the group graph (ties by first node position).
    std::map<int, int> pending;
    std::vector<int> alive;
    for (int gid = 0; gid < static_cast<int>(groups_.size()); ++gid) {
      if (!groups_[static_cast<size_t>(gid)].alive) continue;
      alive.push_back(gid);
      pending[gid] = static_cast<int>(predecessors(gid).size());
    }
    std::vector<int> ready, ordered;
    for (int gid : alive)
      if (pending[gid] == 0) ready.push_back(gid);
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), std::greater<>());
      const int gid = ready.back();
      ready.pop_back();
      ordered.push_back(gid);
      for (int s : successors(gid))
        if (--pending[s] == 0) ready.push_back(s);
    }
    GF_ASSERT(ordered.size() == alive.size(), "fusion groups form a cycle");
    std::vector<int> position(g_.num_nodes(), 0);
    for (size_t i = 0; i < order_.size(); ++i) position[static_cast<size_t>(order_[i])] = static_cast<int>(i);
    plan.group_of_node.assign(g_.num_nodes(), -1);
    for (int gid : ordered) {
      WorkGroup& wg = groups_[static_cast<size_t>(gid)];
      std::sort(wg.nodes.begin(), wg.nodes.end(), [&](NodeId a, NodeId b) {
        return position[static_cast<size_t>(a)] < position[static_cast<size_t>(b)];
      });
      Group out;
      out.id = static_cast<int>(plan.groups.size());
      out.kind = wg.kind;
      out.anchor = wg.anchor;
      out.nodes = wg.nodes;
      auto in_group = [&](NodeId id) { return group_of(id) == gid; };
      auto [ins, outs] = boundary(wg.nodes, in_group);
      out.inputs.assign(ins.begin(), ins.end());
      out.outputs.assign(outs.begin(), outs.end());
      for (ValueId v : out.inputs) out.bytes_read += value_bytes(g_, v);
      for (ValueId v : out.outputs) out.bytes_written += value_bytes(g_, v);
      for (NodeId id : out.nodes) {
        const OpKind k = op_info(node(id).op).kind;
        const bool matrix = k == OpKind::kGemmLike || k == OpKind::kAttention;
        (matrix ? out.matrix_flops : out.flops) += node_flops(g_, node(id));
      }
      if (out.kind == GroupKind::kView) {
        out.bytes_read = out.bytes_written = 0;  // consumers read through strides
      } else {
        out.time_us =
            m_.time_us(out.bytes_read + out.bytes_written, out.flops, out.matrix_flops) +
            m_.launch_us;
      }
      for (NodeId id : out.nodes) plan.group_of_node[static_cast<size_t>(id)] = out.id;
      plan.groups.push_back(std::move(out));
    }
    plan.decisions = std::move(decisions_);
    return plan;
  }

  const Graph& g_;
  const CostModel& m_;
  std::vector<NodeId> order_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<bool> is_output_;
  std::vector<WorkGroup> groups_;
  std::vector<int> group_of_;
  std::vector<Decision> decisions_;
};

}  // namespace

std::string_view group_kind_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::kPointwise: return "pointwise";
    case GroupKind::kReduction: return "reduction";
    case GroupKind::kGemm: return "gemm";
    case GroupKind::kAttention: return "attention";
    case GroupKind::kView: return "view";
    case GroupKind::kOpaque: return "opaque";
  }
  return "?";
}

int Plan::kernel_count() const {
  int n = 0;
  for (const Group& gr : groups) n += gr.launches_kernel() ? 1 : 0;
  return n;
}

double Plan::total_time_us() const {
  double t = 0;
  for (const Group& gr : groups) t += gr.time_us;
  return t;
}

Plan plan_fusion(const Graph& g, const CostModel& model) { return Planner(g, model).run(); }

}  // namespace gf::fusion
