// Fusion lowering, checked end to end: a graph is planned, its groups are lowered to the
// fused-kernel IR and evaluated, and the outputs must match the reference interpreter.
#include <random>
#include <set>

#include "fused_eval_runner.h"
#include "random_graph.h"
#include "graphfuse/models.h"

namespace gf {
namespace {

using testing::random_tensor;
using testing::RandomGraph;
using testing::run_fused_with_evaluator;

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double a = got.element_as_double(i), e = want.element_as_double(i);
    if (std::isnan(e)) {
      ASSERT_TRUE(std::isnan(a)) << what << " element " << i;
    } else {
      ASSERT_LE(std::fabs(a - e), atol + rtol * std::fabs(e))
          << what << " element " << i << ": fused " << a << ", reference " << e;
    }
  }
}

int check_against_reference(const Graph& g, const std::vector<Tensor>& inputs, double rtol,
                            double atol, const std::string& what, int min_kernels = 1) {
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  int lowered = 0;
  const std::vector<Tensor> got = run_fused_with_evaluator(g, inputs, &lowered);
  EXPECT_GE(lowered, min_kernels) << what;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) expect_close(got[i], want[i], rtol, atol, what);
  return lowered;
}

TEST(FusionLowering, BroadcastChainTransposeAndSlice) {
  std::mt19937 rng(1);
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{3, 4, 5});
  ValueId bias = b.constant("bias", random_tensor(rng, DType::kF32, {5}));
  ValueId y = b.op1(Op::kTanh, {b.add(x, bias)});
  ValueId t = b.transpose(y, {2, 0, 1});  // [5, 3, 4]
  ValueId s = b.op1(Op::kSlice, {t, b.constant_ints({1, 3}), b.constant_ints({5, 0}),
                                 b.constant_ints({0, 2}), b.constant_ints({2, -1})});
  b.output(b.mul(s, s), "out");
  Graph g = b.build();
  check_against_reference(g, {random_tensor(rng, DType::kF32, {3, 4, 5})}, 1e-6, 1e-6, "chain");
}

TEST(FusionLowering, ConcatPadTileAndTrilu) {
  std::mt19937 rng(2);
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{2, 3});
  ValueId y = b.input("y", DType::kF32, Shape{2, 2});
  ValueId c = b.op1(Op::kConcat, {b.unary(Op::kExp, x), y}, {{"axis", int64_t{1}}});  // [2, 5]
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    ValueId p = b.op1(Op::kPad, {c, b.constant_ints({1, 2, 0, 1}), b.constant_scalar(0.5f, DType::kF32)},
                      {{"mode", std::string(mode)}});
    b.output(b.unary(Op::kNeg, p), std::string("pad_") + mode);
  }
  b.output(b.op1(Op::kTile, {c, b.constant_ints({2, 1})}), "tiled");
  b.output(b.op1(Op::kTrilu, {c, b.constant_ints({1})}, {{"upper", int64_t{0}}}), "lower");
  Graph g = b.build();
  check_against_reference(g, {random_tensor(rng, DType::kF32, {2, 3}), random_tensor(rng, DType::kF32, {2, 2})},
                          1e-6, 1e-6, "layout");
}

TEST(FusionLowering, ReductionsWithPrologueAndEpilogue) {
  std::mt19937 rng(3);
  for (Op op : {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceMin, Op::kReduceProd,
                Op::kReduceL1, Op::kReduceL2, Op::kReduceSumSquare, Op::kReduceLogSumExp}) {
    for (bool keepdims : {true, false}) {
      GraphBuilder b;
      ValueId x = b.input("x", DType::kF32, Shape{3, 4, 5});
      ValueId r = b.reduce(op, b.unary(Op::kSigmoid, x), {0, 2}, keepdims);
      b.output(b.unary(Op::kNeg, r), "out");
      Graph g = b.build();
      check_against_reference(g, {random_tensor(rng, DType::kF32, {3, 4, 5})}, 1e-5, 1e-5,
                              std::string(op_name(op)) + (keepdims ? " keepdims" : ""));
    }
  }
}

TEST(FusionLowering, NormalizationsInEveryFloatType) {
  std::mt19937 rng(4);
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    GraphBuilder b;
    ValueId x = b.input("x", t, Shape{4, 6});
    ValueId r = b.input("r", t, Shape{4, 6});
    ValueId h = b.add(x, r);  // residual add as prologue
    ValueId ln = b.layer_norm(h, b.constant("g", random_tensor(rng, t, {6})),
                              b.constant("b", random_tensor(rng, t, {6})));
    b.output(b.gelu(ln), "ln_gelu");
    b.output(b.softmax(b.mul(x, r), 1), "softmax");
    b.output(b.op1(Op::kLogSoftmax, {x}, {{"axis", int64_t{0}}}), "log_softmax");
    b.output(b.op1(Op::kRMSNormalization, {r, b.constant("s", random_tensor(rng, t, {6}))}), "rms");
    Graph g = b.build();
    const double tol = t == DType::kF16 ? 2e-2 : t == DType::kBF16 ? 6e-2 : 1e-5;
    check_against_reference(g, {random_tensor(rng, t, {4, 6}), random_tensor(rng, t, {4, 6})}, tol, tol,
                            std::string("norms ") + std::string(dtype_name(t)), 3);
  }
}

TEST(FusionLowering, Gpt2StackMatchesTheReference) {
  models::Gpt2Config c;
  c.layers = 2;
  c.d_model = 32;
  c.heads = 4;
  Graph g = models::gpt2_stack(c);
  // Bind the symbolic dims: fused kernels are generated for static shapes.
  g.value(g.inputs()[0]).type.shape = Shape{2, 5, 32};
  infer_shapes(g);
  std::mt19937 rng(5);
  check_against_reference(g, {random_tensor(rng, DType::kF32, {2, 5, 32})}, 1e-4, 1e-4, "gpt2", 5);
}

TEST(FusionLowering, ReshapeChainsLeaveAPlainIndex) {
  // Reshape -> Tanh -> Reshape back: the loads index the input by the output's own linear index,
  // with no division ladder left (what lets the CPU compiler vectorise such epilogues).
  std::mt19937 rng(6);
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{6, 20});
  ValueId y = b.reshape(b.unary(Op::kTanh, b.reshape(x, {2, 3, 4, 5})), {6, 20});
  b.output(b.add(y, b.constant("c", random_tensor(rng, DType::kF32, {20}))), "out");
  Graph g = b.build();
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::cpu());
  int kernels = 0;
  for (const fusion::Group& group : plan.groups) {
    if (group.kind != fusion::GroupKind::kPointwise) continue;
    const fusion::FusedKernel k = fusion::lower_group(g, group, "k");
    ++kernels;
    // Every expr the stores reach (the DAG also keeps exprs that nothing uses).
    std::vector<fusion::ExprId> todo;
    for (const fusion::Store& st : k.stores) todo.insert(todo.end(), {st.index, st.value});
    std::set<fusion::ExprId> seen;
    while (!todo.empty()) {
      const fusion::ExprId id = todo.back();
      todo.pop_back();
      if (!seen.insert(id).second) continue;
      const fusion::Expr& e = k.exprs[static_cast<size_t>(id)];
      EXPECT_FALSE(e.kind == fusion::ExprKind::kIndex &&
                   (e.index_op == fusion::IndexOp::kDiv || e.index_op == fusion::IndexOp::kMod))
          << "an index division is left in";
      todo.insert(todo.end(), e.args.begin(), e.args.end());
    }
  }
  EXPECT_EQ(kernels, 1);
  check_against_reference(g, {random_tensor(rng, DType::kF32, {6, 20})}, 1e-6, 1e-6,
                          "reshape chain");
}

TEST(FusionLowering, RandomGraphsMatchTheReference) {
  constexpr uint32_t kGraphs = 300;
  int kernels = 0;
  for (uint32_t seed = 0; seed < kGraphs; ++seed) {
    std::vector<Tensor> inputs;
    Graph g = RandomGraph(seed).make(inputs);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + print_graph(g));
    kernels += check_against_reference(g, inputs, 1e-4, 1e-5, "random graph", 0);
    if (HasFatalFailure() || HasNonfatalFailure()) return;  // one failing seed is enough to read
  }
  EXPECT_GT(kernels, static_cast<int>(kGraphs));  // the graphs really exercise fused kernels
}

}  // namespace
}  // namespace gf
