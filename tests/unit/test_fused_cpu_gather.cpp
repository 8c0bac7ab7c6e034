// Gather and GatherElements with run-time indices on the fused CPU backend: generated kernels
// (no reference fallback), fused with their consumers, against the reference interpreter; and
// out-of-range indices, which the reference rejects and a generated kernel clamps into the axis
// (never reading outside its buffers: the AddressSanitizer build checks that).
#include "fused_eval_runner.h"
#include "gather_cases.h"

namespace gf {
namespace {

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

using testing::GatherCase;

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    testing::expect_values(got[i], want[i].dims(), doubles(want[i]), rtol, atol);
  }
}

std::string reasons(const SessionStats& st) {
  std::string s;
  for (const std::string& r : st.fallback_reasons) s += "\n  " + r;
  return s;
}

class FusedCpuGather : public ::testing::TestWithParam<size_t> {};

TEST_P(FusedCpuGather, FusesWithItsConsumerAndMatchesTheReference) {
  const GatherCase c = testing::gather_cases().at(GetParam());
  const std::vector<Tensor> want = ref::run_graph(c.graph, c.inputs);
  Session session(c.graph);
  expect_same(session.run(c.inputs), want, c.rtol, c.atol);
  const SessionStats st = session.stats();
  EXPECT_EQ(st.fallback_nodes, 0) << reasons(st);
  EXPECT_EQ(st.reference_steps, 0);
  // One kernel per output: each gather, its consumer and whatever computes its operands.
  EXPECT_EQ(st.fused_kernels, static_cast<int>(c.graph.outputs().size()));
  // The lowered IR, evaluated apart from any code generator.
  expect_same(testing::run_fused_with_evaluator(c.graph, c.inputs), want, c.rtol, c.atol);
}

INSTANTIATE_TEST_SUITE_P(Cases, FusedCpuGather,
                         ::testing::Range<size_t>(0, testing::gather_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::gather_cases().at(info.param).name;
                         });

TEST(FusedCpuGather, OutOfRangeIndicesReadTheNearestElement) {
  const testing::OutOfRangeCase c = testing::out_of_range_case();
  const Graph& g = c.gather.graph;
  testing::expect_error([&] { ref::run_graph(g, c.gather.inputs); }, ErrorCode::kInvalidArgument,
                        {"index"});
  Session session(g);
  const std::vector<Tensor> got = session.run(c.gather.inputs);
  EXPECT_EQ(session.stats().fallback_nodes, 0) << reasons(session.stats());
  // The evaluator fails the test on any load outside its buffer.
  const std::vector<Tensor> evaluated = testing::run_fused_with_evaluator(g, c.gather.inputs);
  ASSERT_EQ(got.size(), c.values.size());
  ASSERT_EQ(evaluated.size(), c.values.size());
  for (size_t i = 0; i < c.values.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    testing::expect_values(got[i], c.dims[i], c.values[i], 0, 0);
    testing::expect_values(evaluated[i], c.dims[i], c.values[i], 0, 0);
  }
}

TEST(FusedCpuGather, AnEmptyAxisFallsBackToTheReferenceWhichRejectsTheIndex) {
  // No element to clamp into: the gather runs on the reference kernel, which reports.
  GraphBuilder b("empty_axis");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({0, 3}));
  const ValueId idx = b.input("idx", DType::kI64, Shape::from_static({2}));
  b.output(b.unary(Op::kNeg, b.op1(Op::kGather, {x, idx})), "y");
  Session session(b.build());
  testing::expect_error([&] { session.run({Tensor(DType::kF32, {0, 3}), testing::i64({2}, {0, 1})}); },
                        ErrorCode::kInvalidArgument, {"Gather", "index"});
}

}  // namespace
}  // namespace gf
