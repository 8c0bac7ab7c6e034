// The fusion planner on hand-built graphs: which ops share a kernel, and why.
#include "fusion/plan.h"
#include "graphfuse/models.h"
#include "test_util.h"

namespace gf {
namespace {

using fusion::CostModel;
using fusion::GroupKind;
using fusion::Plan;

// Builds graphs with explicit types, so the planner is tested on its own.
class GraphMaker {
 public:
  ValueId input(const std::string& name, std::vector<int64_t> dims) {
    return g.add_input(name, TensorType{DType::kF32, Shape::from_static(dims)});
  }
  ValueId weight(const std::string& name, std::vector<int64_t> dims) {
    return g.add_constant(name, Tensor(DType::kF32, std::move(dims)));
  }
  ValueId node(Op op, const std::string& name, std::vector<ValueId> ins, std::vector<int64_t> out,
               Attributes attrs = {}) {
    NodeId id = g.add_node(op, name, std::move(ins), {name + ":0"}, std::move(attrs),
                           {TensorType{DType::kF32, Shape::from_static(out)}});
    return g.node(id).outputs[0];
  }
  Graph g;
};

int group_of(const Graph& g, const Plan& p, const std::string& node_name) {
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (g.node(static_cast<NodeId>(i)).name == node_name) return p.group_of_node[i];
  ADD_FAILURE() << "no node " << node_name;
  return -1;
}

bool has_decision(const Plan& p, const std::string& kind, bool accepted, const std::string& reason_part) {
  for (const auto& d : p.decisions)
    if (d.kind == kind && d.accepted == accepted && d.reason.find(reason_part) != std::string::npos)
      return true;
  return false;
}

TEST(FusionPlanner, GemmTakesBiasAndActivationAsEpilogue) {
  GraphMaker m;
  ValueId x = m.input("x", {8, 64});
  ValueId mm = m.node(Op::kMatMul, "mm", {x, m.weight("w", {64, 32})}, {8, 32});
  ValueId b = m.node(Op::kAdd, "bias", {mm, m.weight("b", {32})}, {8, 32});
  m.g.add_output(m.node(Op::kGelu, "act", {b}, {8, 32}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 1);
  EXPECT_EQ(group_of(m.g, p, "act"), group_of(m.g, p, "mm"));
  EXPECT_EQ(p.groups[0].kind, GroupKind::kGemm);
  EXPECT_TRUE(has_decision(p, "epilogue", true, "saves"));
}

TEST(FusionPlanner, TwoAnchorsNeverShareAKernel) {
  GraphMaker m;
  ValueId x = m.input("x", {8, 64});
  ValueId mm = m.node(Op::kMatMul, "mm", {x, m.weight("w", {64, 64})}, {8, 64});
  m.g.add_output(m.node(Op::kSoftmax, "sm", {mm}, {8, 64}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 2);
  EXPECT_TRUE(has_decision(p, "anchor", false, "one per kernel"));
}

TEST(FusionPlanner, RefusesAMergeThatWouldCreateACycle) {
  // e = Exp(x); m = MatMul(e, W); y = Add(e, m). Add can join the MatMul (epilogue) but not
  // the Exp group: Exp -> MatMul -> Add would then loop through the MatMul.
  GraphMaker m;
  ValueId x = m.input("x", {16, 16});
  ValueId e = m.node(Op::kExp, "exp", {x}, {16, 16});
  ValueId mm = m.node(Op::kMatMul, "mm", {e, m.weight("w", {16, 16})}, {16, 16});
  m.g.add_output(m.node(Op::kAdd, "add", {e, mm}, {16, 16}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 2);
  EXPECT_EQ(group_of(m.g, p, "add"), group_of(m.g, p, "mm"));
  EXPECT_NE(group_of(m.g, p, "exp"), group_of(m.g, p, "mm"));
  EXPECT_TRUE(has_decision(p, "pointwise", false, "cycle"));
}

TEST(FusionPlanner, ReductionTakesPointwisePrologueAndRowEpilogue) {
  // y = LayerNorm(a + b) * s: residual add before, scale after, one kernel.
  GraphMaker m;
  ValueId a = m.input("a", {4, 128});
  ValueId r = m.node(Op::kAdd, "residual", {a, m.input("b", {4, 128})}, {4, 128});
  ValueId ln = m.node(Op::kLayerNormalization, "ln", {r, m.weight("g", {128})}, {4, 128});
  m.g.add_output(m.node(Op::kMul, "scale", {ln, m.weight("s", {128})}, {4, 128}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 1);
  EXPECT_TRUE(has_decision(p, "prologue", true, "saves"));
  EXPECT_TRUE(has_decision(p, "epilogue", true, "saves"));
}

TEST(FusionPlanner, GemmDoesNotTakeAPrologue) {
  GraphMaker m;
  ValueId x = m.input("x", {8, 64});
  ValueId r = m.node(Op::kRelu, "relu", {x}, {8, 64});
  m.g.add_output(m.node(Op::kMatMul, "mm", {r, m.weight("w", {64, 64})}, {8, 64}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 2);
  EXPECT_TRUE(has_decision(p, "prologue", false, "reads its operands as stored"));
}

TEST(FusionPlanner, SiblingsReadingOneInputFuseHorizontally) {
  GraphMaker m;
  ValueId x = m.input("x", {1024});
  m.g.add_output(m.node(Op::kExp, "exp", {x}, {1024}));
  m.g.add_output(m.node(Op::kNeg, "neg", {x}, {1024}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 1);
  EXPECT_TRUE(has_decision(p, "horizontal", true, "reads x once"));
}

TEST(FusionPlanner, CostModelRefusesExpensiveRecomputation) {
  // A long chain on a small vector, broadcast into a huge tensor: fusing would recompute the
  // chain for every row, far more work than writing the vector once.
  GraphMaker m;
  ValueId v = m.input("v", {1024});
  for (int i = 0; i < 10; ++i) v = m.node(Op::kTanh, "t" + std::to_string(i), {v}, {1024});
  m.g.add_output(m.node(Op::kAdd, "wide", {m.input("x", {65536, 1024}), v}, {65536, 1024}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_NE(group_of(m.g, p, "t9"), group_of(m.g, p, "wide"));
  EXPECT_EQ(group_of(m.g, p, "t0"), group_of(m.g, p, "t9"));  // the chain itself fuses
  EXPECT_TRUE(has_decision(p, "pointwise", false, "no gain"));
}

TEST(FusionPlanner, NeverWritesASmallValueFromALargerIterationSpace) {
  // e = Exp(v) is both a model output and broadcast into x + e: a kernel over x's shape would
  // store e once per row.
  GraphMaker m;
  ValueId e = m.node(Op::kExp, "exp", {m.input("v", {1024})}, {1024});
  m.g.add_output(e);
  m.g.add_output(m.node(Op::kAdd, "add", {m.input("x", {64, 1024}), e}, {64, 1024}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_NE(group_of(m.g, p, "exp"), group_of(m.g, p, "add"));
  EXPECT_TRUE(has_decision(p, "pointwise", false, "once per point"));
}

TEST(FusionPlanner, AGatherRunsOverItsOutputNotTheTableItReads) {
  // Exp of a [100, 8] table, rows gathered by 3 ids, then an Add: one kernel over the [3, 8]
  // output, which computes Exp only for the rows it reads. Where the table is an output too,
  // it is written by a kernel over its own space.
  for (bool table_is_output : {false, true}) {
    SCOPED_TRACE(table_is_output ? "table is an output" : "table is internal");
    GraphMaker m;
    const ValueId ids = m.g.add_input("ids", TensorType{DType::kI64, Shape::from_static({3})});
    const ValueId table = m.node(Op::kExp, "exp", {m.input("w", {100, 8})}, {100, 8});
    const ValueId rows = m.node(Op::kGather, "gather", {table, ids}, {3, 8});
    m.g.add_output(m.node(Op::kAdd, "add", {rows, m.input("pos", {3, 8})}, {3, 8}));
    if (table_is_output) m.g.add_output(table);
    Plan p = fusion::plan_fusion(m.g, CostModel::h200());
    EXPECT_EQ(group_of(m.g, p, "gather"), group_of(m.g, p, "add"));
    EXPECT_EQ(group_of(m.g, p, "exp") == group_of(m.g, p, "gather"), !table_is_output);
    EXPECT_EQ(p.kernel_count(), table_is_output ? 2 : 1);
  }
}

TEST(FusionPlanner, ViewsLaunchNothing) {
  // Reshape is metadata; the head split feeding attention is read through strides.
  GraphMaker m;
  ValueId x = m.input("x", {2, 16, 64});
  ValueId q = m.node(Op::kTranspose, "qt",
                     {m.node(Op::kReshape, "qr", {x, m.weight("shape", {4})}, {2, 16, 4, 16})},
                     {2, 4, 16, 16}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  ValueId att = m.node(Op::kAttention, "attn", {q, q, q}, {2, 4, 16, 16});
  ValueId back = m.node(Op::kTranspose, "ot", {att}, {2, 16, 4, 16},
                        {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  m.g.add_output(m.node(Op::kReshape, "or", {back, m.weight("shape2", {3})}, {2, 16, 64}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 1) << fusion::plan_to_text(m.g, p, true);
  EXPECT_TRUE(has_decision(p, "view", true, "strided views"));
}

TEST(FusionPlanner, ReportsListGroupsAndKernelCount) {
  GraphMaker m;
  ValueId x = m.input("x", {8, 64});
  ValueId mm = m.node(Op::kMatMul, "mm", {x, m.weight("w", {64, 32})}, {8, 32});
  m.g.add_output(m.node(Op::kRelu, "act", {mm}, {8, 32}));
  Plan p = fusion::plan_fusion(m.g, CostModel::h200());
  const std::string json = fusion::plan_to_json(m.g, p);
  EXPECT_NE(json.find("\"kernel_count\": 1"), std::string::npos) << json;
  const std::string text = fusion::plan_to_text(m.g, p, true);
  EXPECT_NE(text.find("2 nodes -> 1 kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("mm act"), std::string::npos) << text;
  const std::string dot = fusion::plan_to_dot(m.g, p);
  EXPECT_NE(dot.find("n0 -> n1"), std::string::npos) << dot;
}

}  // namespace
}  // namespace gf

namespace gf {
namespace {

TEST(FusionPlanner, Gpt2StackRunsInSevenKernelsPerLayer) {
  // Per layer: LayerNorm, QKV GEMM+bias, attention (head split/merge read as views), output
  // GEMM+bias+residual, LayerNorm, MLP GEMM+bias+GELU, GEMM+bias+residual; then the final
  // LayerNorm.
  models::Gpt2Config config;
  config.layers = 3;
  Graph g = models::gpt2_stack(config);
  infer_shapes(g);
  Plan p = fusion::plan_fusion(g, CostModel::h200());
  EXPECT_EQ(p.kernel_count(), 7 * 3 + 1) << fusion::plan_to_text(g, p, true);
}

}  // namespace
}  // namespace gf
