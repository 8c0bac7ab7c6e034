// Grouped-query attention kept grouped: the repeat_kv chains of Llama-style exports in front of
// an Attention node are dropped, and the results stay those of the original graph.
#include "passes/fold_repeated_kv.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;

struct Form {
  int64_t group_k = 2, group_v = 2;  // G of the chain before K / V (0: no chain)
  bool broadcast_batch = false;      // near miss: Expand also repeats the batch
  int64_t unsqueeze_axis = 2;        // near miss: another axis
  bool causal = true;
};

// Q [B, Hkv*G, S, D]; K and V [B, Hkv, S, D] through Unsqueeze -> Expand -> Reshape.
Graph gqa_graph(const Form& f) {
  const int64_t B = 2, Hkv = 2, S = 5, D = 8;
  const int64_t G = f.group_k > 0 ? f.group_k : f.group_v;
  GraphBuilder b;
  const ValueId q = b.input("q", DType::kF32, {B, Hkv * G, S, D});
  const int64_t batch_in = f.broadcast_batch ? 1 : B;
  const auto repeated = [&](const char* name, int64_t group) {
    if (group == 0) return b.input(name, DType::kF32, {B, Hkv * G, S, D});  // all heads as given
    const ValueId x = b.input(name, DType::kF32, {batch_in, Hkv, S, D});
    const ValueId u = b.op1(Op::kUnsqueeze, {x, b.constant_ints({f.unsqueeze_axis})});
    std::vector<int64_t> to = {B, Hkv, S, D};
    to.insert(to.begin() + f.unsqueeze_axis, group);
    const ValueId e = b.op1(Op::kExpand, {u, b.constant_ints(to)});
    return b.reshape(e, {B, Hkv * group, S, D});
  };
  const ValueId k = repeated("k", f.group_k);
  const ValueId v = repeated("v", f.group_v);
  Attributes attrs;
  if (f.causal) attrs.set("is_causal", int64_t{1});
  b.output(b.op1(Op::kAttention, {q, k, v}, std::move(attrs), "attn"));
  return b.build();
}

const Node& attention_node(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.op == Op::kAttention) return n;
  throw Error(ErrorCode::kInvalidGraph, "no Attention node");
}

TEST(PassFoldRepeatedKv, AttentionReadsTheGroupedHeadsAndGivesTheSameResults) {
  for (int64_t group : {2, 4}) {
    SCOPED_TRACE("group " + std::to_string(group));
    Graph g = gqa_graph({.group_k = group, .group_v = group});
    const Graph original = g;
    EXPECT_EQ(fold_repeated_kv(g), 1);
    EXPECT_EQ(count_ops(g, Op::kExpand), 0);
    EXPECT_EQ(count_ops(g, Op::kUnsqueeze), 0);
    EXPECT_EQ(count_ops(g, Op::kReshape), 0);
    const Node& a = attention_node(g);
    EXPECT_EQ(g.value(a.inputs[1]).name, "k");
    EXPECT_EQ(g.value(a.inputs[2]).name, "v");
    testing::expect_same_results(original, g, 1e-6, 1e-7);
  }
}

TEST(PassFoldRepeatedKv, NearMissesAreLeftAlone) {
  for (const Form& f : {Form{.group_k = 2, .group_v = 0},            // V given with every head
                        Form{.broadcast_batch = true},               // Expand repeats the batch too
                        Form{.unsqueeze_axis = 3}}) {                // groups after the positions
    Graph g = gqa_graph(f);
    const Graph original = g;
    EXPECT_EQ(fold_repeated_kv(g), 0);
    EXPECT_EQ(g.num_nodes(), original.num_nodes());
  }
}

}  // namespace
}  // namespace gf
