#include "passes/cse.h"

#include <cstring>
#include <functional>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "passes/compact_graph.h"

namespace gf {

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         (a.raw() == b.raw() || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// A hash of a constant's bytes that reads at most 2 * kSample of them (its head and tail):
// hashing every byte of a model's weights took most of the pass (85 ms for GPT-2 small's 340
// MB), while weights that differ almost always differ there too. Equal hashes are confirmed
// by comparing every byte.
size_t sampled_hash(const Tensor& t) {
  constexpr size_t kSample = 4096;
  const char* bytes = static_cast<const char*>(t.raw());
  const size_t n = t.nbytes();
  if (n <= 2 * kSample) return std::hash<std::string_view>{}(std::string_view(bytes, n));
  const size_t head = std::hash<std::string_view>{}(std::string_view(bytes, kSample));
  const size_t tail = std::hash<std::string_view>{}(std::string_view(bytes + n - kSample, kSample));
  return head ^ (tail + 0x9e3779b97f4a7c15ull + (head << 6) + (head >> 2));
}

// Maps every constant to the first constant holding the same bytes.
int merge_constants(const Graph& g, const std::vector<bool>& is_output,
                    std::vector<ValueId>& rep) {
  using Key = std::tuple<DType, std::vector<int64_t>, size_t>;
  std::map<Key, std::vector<ValueId>> seen;
  int merged = 0;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const auto v = static_cast<ValueId>(i);
    const Value& val = g.value(v);
    if (!val.is_constant() || val.producer != kNoNode) continue;
    const Tensor& t = val.constant;
    auto& candidates = seen[Key{t.dtype(), t.dims(), sampled_hash(t)}];
    ValueId found = kNoValue;
    for (ValueId c : candidates) {
      if (same_bytes(g.value(c).constant, t)) found = c;
    }
    if (found == kNoValue || is_output[i]) {
      candidates.push_back(v);
    } else {
      rep[i] = found;
      ++merged;
    }
  }
  return merged;
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  std::vector<bool> is_output(g.num_values(), false);
  for (ValueId v : g.outputs()) is_output[static_cast<size_t>(v)] = true;
  std::vector<ValueId> rep(g.num_values());
  for (size_t i = 0; i < rep.size(); ++i) rep[i] = static_cast<ValueId>(i);
  int merged = merge_constants(g, is_output, rep);

  // In topological order, so a node's inputs are already mapped to their representatives.
  std::map<std::pair<Op, std::vector<ValueId>>, std::vector<NodeId>> seen;
  for (NodeId id : g.topological_order()) {
    Node& n = g.node(id);
    for (ValueId& v : n.inputs) {
      if (v != kNoValue) v = rep[static_cast<size_t>(v)];
    }
    if (n.op == Op::kDropout) continue;
    auto& candidates = seen[{n.op, n.inputs}];
    NodeId found = kNoNode;
    for (NodeId c : candidates) {
      const Node& m = g.node(c);
      if (m.attrs == n.attrs && m.outputs.size() == n.outputs.size()) found = c;
    }
    bool keeps_output = false;
    for (ValueId v : n.outputs) keeps_output = keeps_output || is_output[static_cast<size_t>(v)];
    if (found == kNoNode || keeps_output) {
      candidates.push_back(id);
      continue;
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      rep[static_cast<size_t>(n.outputs[k])] = g.node(found).outputs[k];
    }
    ++merged;
  }
  remove_dead_nodes(g);
  return merged;
}

}  // namespace gf
