// split_gemm_scaling: Gemm's alpha, beta and C become elementwise ops after a plain product,
// with the same results as the reference Gemm; a bias-row Gemm is left for the bias epilogue.
#include <random>

#include "passes/split_gemm_scaling.h"
#include "test_util.h"

namespace gf {
namespace {

Tensor random_f32(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kF32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Graph gemm_graph(float alpha, float beta, std::vector<int64_t> c_dims, bool trans_b) {
  GraphBuilder b("gemm");
  const ValueId a = b.input("a", DType::kF32, Shape{3, 5});
  const ValueId w = b.constant("w", random_f32(trans_b ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5, 4}, 1));
  std::vector<ValueId> in{a, w};
  if (!c_dims.empty()) in.push_back(b.constant("c", random_f32(c_dims, 2)));
  Attributes attrs{{"alpha", alpha}, {"beta", beta}, {"transB", int64_t{trans_b ? 1 : 0}}};
  b.output(b.op1(Op::kGemm, in, attrs, "gemm"), "y");
  return b.build();
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

void expect_same_results(const Graph& before, const Graph& after) {
  const Tensor a = random_f32({3, 5}, 3);
  const Tensor want = ref::run_graph(before, std::vector<Tensor>{a})[0];
  const Tensor got = ref::run_graph(after, std::vector<Tensor>{a})[0];
  std::vector<double> expected;
  for (int64_t i = 0; i < want.numel(); ++i) expected.push_back(want.element_as_double(i));
  testing::expect_values(got, want.dims(), expected, 1e-5, 1e-5);
}

TEST(SplitGemmScaling, AlphaBetaAndAFullCBecomeAnEpilogue) {
  for (auto c_dims : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{3, 1}, std::vector<int64_t>{4}}) {
    Graph g = gemm_graph(0.5f, 2.0f, c_dims, true);
    Graph split = g;
    EXPECT_EQ(split_gemm_scaling(split), 1);
    verify_graph(split);
    for (const Node& n : split.nodes()) {
      if (n.op != Op::kGemm) continue;
      EXPECT_EQ(n.inputs.size(), 2u);  // a plain product
      EXPECT_EQ(n.attrs.get_int("transB", 0), 1);
    }
    EXPECT_EQ(count(split, Op::kMul), 2);  // alpha and beta
    EXPECT_EQ(count(split, Op::kAdd), 1);
    EXPECT_EQ(split.value(split.outputs()[0]).name, "y");
    expect_same_results(g, split);
  }
}

TEST(SplitGemmScaling, AlphaAloneIsOneMul) {
  Graph g = gemm_graph(3.0f, 1.0f, {}, false);
  Graph split = g;
  EXPECT_EQ(split_gemm_scaling(split), 1);
  EXPECT_EQ(count(split, Op::kMul), 1);
  EXPECT_EQ(count(split, Op::kAdd), 0);
  expect_same_results(g, split);
}

TEST(SplitGemmScaling, LeavesPlainProductsAndBiasRowsAlone) {
  for (Graph g : {gemm_graph(1.0f, 1.0f, {4}, false), gemm_graph(1.0f, 1.0f, {1, 4}, true),
                  gemm_graph(1.0f, 1.0f, {}, false), gemm_graph(1.0f, 0.0f, {3, 4}, false)}) {
    const size_t nodes = g.num_nodes();
    EXPECT_EQ(split_gemm_scaling(g), 0);
    EXPECT_EQ(g.num_nodes(), nodes);
  }
}

}  // namespace
}  // namespace gf
