// Helpers shared by the rewrite passes: who reads a value, scalar constants matched by value,
// and putting a new node in place of a matched subgraph. Not a pass itself.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graphfuse/graph.h"
#include "passes/compact_graph.h"

namespace gf {

// The readers of every value, computed once per sweep. Rewrites made during the sweep leave
// the matched nodes in place (dead) until the sweep's compaction, so these stay valid.
class ValueUses {
 public:
  explicit ValueUses(const Graph& g);

  const std::vector<NodeId>& readers(ValueId v) const { return readers_[static_cast<size_t>(v)]; }
  bool is_output(ValueId v) const { return is_output_[static_cast<size_t>(v)]; }
  // True when `v` is no graph output and every node that reads it is one of `nodes`: the value
  // disappears with them, so they may be replaced.
  bool only_read_by(ValueId v, std::span<const NodeId> nodes) const;
  // The one node reading `v`, or kNoNode when it has several readers or is a graph output.
  NodeId sole_reader(ValueId v) const;

 private:
  std::vector<std::vector<NodeId>> readers_;
  std::vector<bool> is_output_;
};

// Nodes claimed by the rewrites of one sweep: a later match that overlaps one is skipped.
class ClaimedNodes {
 public:
  // Claims all of `nodes` and returns true, or claims none and returns false.
  bool claim(std::span<const NodeId> nodes);

 private:
  std::vector<bool> claimed_;
};

// One sweep of a rewrite pass: `try_at(g, uses, id, claimed)` at every node the graph had when
// the sweep began whose op `is_anchor` accepts. A rewrite leaves the nodes it replaced (and a
// match rejected late, the helper nodes it had added) dead until the sweep's compaction, which
// runs when the graph changed. Returns the number of rewrites.
template <class IsAnchor, class TryAt>
int rewrite_sweep(Graph& g, IsAnchor is_anchor, TryAt try_at) {
  const ValueUses uses(g);
  const size_t num_nodes = g.num_nodes();
  ClaimedNodes claimed;
  int rewrites = 0;
  for (size_t i = 0; i < num_nodes; ++i) {
    const auto id = static_cast<NodeId>(i);
    if (is_anchor(g.node(id).op) && try_at(g, uses, id, claimed)) ++rewrites;
  }
  if (rewrites > 0 || g.num_nodes() != num_nodes) remove_dead_nodes(g);
  return rewrites;
}

// The sole reader of `v` when it is a node of `op` (and `v` is no graph output); else kNoNode.
NodeId sole_reader_of(const Graph& g, const ValueUses& uses, ValueId v, Op op);

// The producer of `v` when it is a node of `op`; nullptr for inputs, constants and other ops.
const Node* producer_if(const Graph& g, ValueId v, Op op);
NodeId producer_id_if(const Graph& g, ValueId v, Op op);

// The value of a one-element constant of any numeric dtype; nullopt otherwise.
std::optional<double> scalar_constant(const Graph& g, ValueId v);

// True when `v` is a one-element constant within a tolerance suited to its dtype's precision
// (relative, a few units in the last place) of `expected`.
bool is_constant_near(const Graph& g, ValueId v, double expected);

// For a binary node reading `v`: its other input (both when it reads `v` twice); kNoValue when
// `v` is not an input.
ValueId other_input(const Node& n, ValueId v);

// True when `n` reduces `x` (rank r) with ReduceMean over exactly its last axis, keeping dims.
bool is_mean_over_last_axis(const Graph& g, const Node& n);

// The types the op would produce on these inputs, or nullopt when shape inference rejects it.
// Rewrites check the node they are about to add with this instead of trusting the match.
std::optional<std::vector<TensorType>> try_infer(const Graph& g, Op op,
                                                 const std::vector<ValueId>& inputs,
                                                 const Attributes& attrs, size_t num_outputs = 1);

// Adds a node of `op` that produces `result` in place of its current producer: the value keeps
// its id, name and type, so every reader (and a graph output) now reads the new node; the old
// producer is left with a fresh output that nothing reads, for the next compaction to drop.
NodeId replace_producer(Graph& g, ValueId result, Op op, const std::string& name,
                        std::vector<ValueId> inputs, Attributes attrs = {});

// Adds a helper node (one output) for a rewrite; its name and output are derived from `base`.
ValueId add_helper_node(Graph& g, Op op, const std::string& base, std::vector<ValueId> inputs,
                        Attributes attrs = {});

// The name of a fused node: the first matched node's name plus `suffix`, made unique.
std::string fused_name(const Graph& g, const Node& first, const std::string& suffix);

}  // namespace gf
