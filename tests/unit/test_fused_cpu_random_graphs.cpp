// Property test of the fused CPU backend as users run it: random graphs (tests/random_graph.h)
// through a Session, compiled by the system compiler, against the reference interpreter. The
// lowering test (test_fusion_lowering.cpp) checks the same graphs through the kernel IR's
// evaluator; this one checks the generated C++, the JIT and the program's memory plan too.
#include "graphfuse/session.h"
#include "random_graph.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf {
namespace {

TEST(FusedCpuRandomGraphs, MatchTheReferenceInterpreter) {
  // Each graph compiles a few kernels (cached on disk by their source, so a second run of the
  // suite compiles almost nothing).
  constexpr uint32_t kGraphs = 120;
  int fused_kernels = 0;
  for (uint32_t seed = 0; seed < kGraphs; ++seed) {
    std::vector<Tensor> inputs;
    Graph g = testing::RandomGraph(seed).make(inputs);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (tests/random_graph.h)\n" + print_graph(g));
    const std::vector<Tensor> want = ref::run_graph(g, inputs);
    Session session(g);
    const std::vector<Tensor> got = session.run(inputs);
    fused_kernels += session.stats().fused_kernels;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].dims(), want[i].dims());
      for (int64_t e = 0; e < want[i].numel(); ++e) {
        const double a = got[i].element_as_double(e), w = want[i].element_as_double(e);
        if (std::isnan(w)) {
          ASSERT_TRUE(std::isnan(a)) << "output " << i << " element " << e;
        } else {
          ASSERT_LE(std::fabs(a - w), 1e-5 + 1e-4 * std::fabs(w))
              << "output " << i << " element " << e << ": fused " << a << ", reference " << w;
        }
      }
    }
  }
  EXPECT_GT(fused_kernels, static_cast<int>(kGraphs));  // the graphs really ran fused kernels
}

}  // namespace
}  // namespace gf
