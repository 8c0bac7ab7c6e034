// Gather, GatherElements and GatherND with run-time indices on the fused CPU backend: generated
// kernels (no reference fallback), fused with their consumers, against the reference
// interpreter; and out-of-range indices, which the reference rejects and a generated kernel
// clamps into the axis, never reading outside its buffers (guard pages check that: the sanitizer
// builds do not instrument the JIT-compiled kernels).
#include <sys/mman.h>
#include <unistd.h>

#include <limits>
#include <map>

#include "fused_eval_runner.h"
#include "fusion/plan.h"
#include "gather_cases.h"
#include "test_cpu_codegen_util.h"

namespace gf {
namespace {

using testing::GatherCase;

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    testing::expect_values(got[i], want[i].dims(), testing::doubles(want[i]), rtol, atol);
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

// One page of memory between two inaccessible ones: a read past either end faults.
class GuardedPage {
 public:
  GuardedPage() : size_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    void* p = mmap(nullptr, 3 * size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<char*>(p);
    if (mprotect(base_ + size_, size_, PROT_READ | PROT_WRITE) != 0) {
      munmap(base_, 3 * size_);
      base_ = nullptr;
    }
  }
  ~GuardedPage() {
    if (base_) munmap(base_, 3 * size_);
  }
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;
  void* data() const { return base_ ? base_ + size_ : nullptr; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  char* base_ = nullptr;
};

TEST(FusedCpuGather, GeneratedKernelsReadOnlyInsideTheGatheredTensor) {
  // The JIT-compiled kernels are not instrumented by the sanitizer builds; here the gathered
  // tensor fills a page between two guard pages, so a read outside it crashes the test. Indices
  // past both ends of each axis, through every gather.
  GuardedPage page;
  ASSERT_NE(page.data(), nullptr) << "mmap failed";
  const auto n = static_cast<int64_t>(page.size() / sizeof(float));
  ASSERT_EQ(n % 4, 0);
  const int64_t rows = n / 4;  // x: [rows, 4], exactly the page
  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  GraphBuilder b("guarded");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({rows, 4}));
  const ValueId r = b.input("r", DType::kI64, Shape::from_static({6}));
  const ValueId c = b.input("c", DType::kI32, Shape::from_static({3}));
  const ValueId e = b.input("e", DType::kI64, Shape::from_static({2, 4}));
  const ValueId p = b.input("p", DType::kI64, Shape::from_static({2, 2}));
  b.output(b.op1(Op::kGather, {x, r}), "by_rows");
  b.output(b.op1(Op::kGather, {x, c}, testing::axis_attr(1)), "by_cols");
  b.output(b.op1(Op::kGatherElements, {x, e}), "elements");
  b.output(b.op1(Op::kGatherND, {x, p}), "pairs");
  const Graph g = b.build();
  std::map<ValueId, Tensor> values = {
      {r, testing::i64({6}, {rows, -rows - 1, kI64Max, kI64Min, -1, rows - 1})},
      {c, testing::int32s({3}, {4, -5, std::numeric_limits<int32_t>::min()})},
      {e, testing::i64({2, 4}, {-rows - 44, rows, 7, -1, kI64Max, kI64Min, 0, -rows})},
      {p, testing::i64({2, 2}, {rows, 4, -rows - 1, -5})}};
  auto* data = static_cast<float*>(page.data());
  for (int64_t i = 0; i < n; ++i) data[i] = 0.5f * static_cast<float>(i);
  auto x_at = [&](int64_t i, int64_t j) { return static_cast<double>(data[4 * i + j]); };

  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::cpu());
  int kernels = 0;
  for (const fusion::Group& group : plan.groups) {
    ASSERT_EQ(group.kind, fusion::GroupKind::kPointwise);
    const fusion::FusedKernel k = fusion::lower_group(g, group, "guarded_" + std::to_string(group.id));
    std::vector<void*> buffers;
    for (const fusion::KernelBuffer& buf : k.buffers) {
      if (buf.value == x) {
        buffers.push_back(page.data());
        continue;
      }
      if (buf.is_output) values[buf.value] = Tensor(buf.dtype, buf.dims);
      buffers.push_back(values.at(buf.value).raw());
    }
    testing::jit().compile(codegen::emit_cpu_kernel(k, g))->kernel(k.name)(buffers.data());
    ++kernels;
  }
  EXPECT_EQ(kernels, 4);
  std::vector<double> by_rows, by_cols, elements;
  for (int64_t i : {rows - 1, int64_t{0}, rows - 1, int64_t{0}, rows - 1, rows - 1})
    for (int64_t j = 0; j < 4; ++j) by_rows.push_back(x_at(i, j));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j : {3, 0, 0}) by_cols.push_back(x_at(i, j));
  const int64_t element_rows[] = {0, rows - 1, 7, rows - 1, rows - 1, 0, 0, 0};
  for (int64_t k = 0; k < 8; ++k) elements.push_back(x_at(element_rows[k], k % 4));
  testing::expect_values(values.at(g.outputs()[0]), {6, 4}, by_rows, 0, 0);
  testing::expect_values(values.at(g.outputs()[1]), {rows, 3}, by_cols, 0, 0);
  testing::expect_values(values.at(g.outputs()[2]), {2, 4}, elements, 0, 0);
  testing::expect_values(values.at(g.outputs()[3]), {2}, {x_at(rows - 1, 3), x_at(0, 0)}, 0, 0);
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
