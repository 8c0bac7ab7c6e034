// The pass pipeline: order, options, dumps and errors.
#include <sstream>

#include "passes/pipeline.h"
#include "test_pass_util.h"

namespace gf {
namespace {

using testing::count_ops;
using testing::expect_error;

// x -> erf GELU, twice (a CSE candidate), plus a dead node.
Graph gelu_twice() {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, {2, 8});
  auto gelu = [&] {
    ValueId e = b.unary(Op::kErf, b.binary(Op::kDiv, x, b.constant_scalar(1.4142135f, DType::kF32)));
    ValueId a = b.add(e, b.constant_scalar(1.0f, DType::kF32));
    return b.mul(b.mul(x, a), b.constant_scalar(0.5f, DType::kF32));
  };
  b.unary(Op::kExp, x);  // dead
  b.output(b.add(gelu(), gelu()));
  return b.build();
}

TEST(PassPipeline, RunsEveryPassInOrderAndReportsChanges) {
  Graph g = gelu_twice();
  const Graph original = g;
  const PassReport r = run_passes(g, PassOptions{.verify_each_pass = true});
  ASSERT_EQ(r.passes.size(), pass_names().size());
  for (size_t i = 0; i < r.passes.size(); ++i) EXPECT_EQ(r.passes[i].name, pass_names()[i]);
  EXPECT_EQ(r.nodes_before, original.num_nodes());
  EXPECT_EQ(r.passes[0].name, "dce");
  EXPECT_EQ(r.passes[0].changes, 1);
  EXPECT_EQ(r.passes[1].name, "cse");
  EXPECT_GE(r.passes[1].changes, 5);  // the second GELU's four nodes and its constants
  EXPECT_EQ(r.passes.back().nodes_after, g.num_nodes());
  EXPECT_EQ(count_ops(g, Op::kGelu), 1);
  EXPECT_EQ(g.num_nodes(), 2u);  // Gelu, Add(g, g)
  testing::expect_same_results(original, g);
}

TEST(PassPipeline, DumpAfterPrintsTheIrOfThatPass) {
  Graph g = gelu_twice();
  std::ostringstream out;
  run_passes(g, PassOptions{.dump_after = "fuse-gelu", .dump_stream = &out});
  const std::string text = out.str();
  EXPECT_NE(text.find("# IR after pass 'fuse-gelu'"), std::string::npos) << text;
  EXPECT_NE(text.find("Gelu("), std::string::npos) << text;
  EXPECT_EQ(text.find("Erf("), std::string::npos) << text;
  EXPECT_EQ(text.find("after pass 'cse'"), std::string::npos);  // only the one asked for
}

TEST(PassPipeline, DisabledPassesDoNotRun) {
  Graph g = gelu_twice();
  const PassReport r = run_passes(g, PassOptions{.disabled = {"fuse-gelu", "cse"}});
  EXPECT_EQ(r.passes.size(), pass_names().size() - 2);
  EXPECT_EQ(count_ops(g, Op::kGelu), 0);
  EXPECT_EQ(count_ops(g, Op::kErf), 2);
}

TEST(PassPipeline, UnknownPassNamesAreRejectedWithTheList) {
  Graph g = gelu_twice();
  expect_error([&] { run_passes(g, PassOptions{.dump_after = "fuse-gleu"}); },
               ErrorCode::kInvalidArgument, {"dump_after", "fuse-gleu", "fuse-gelu", "dce"});
  expect_error([&] { run_passes(g, PassOptions{.disabled = {"nope"}}); },
               ErrorCode::kInvalidArgument, {"disabled", "nope"});
}

TEST(PassPipeline, GraphOutputNamesSurviveRewrites) {
  Graph g = gelu_twice();
  const std::string out_name = g.value(g.outputs()[0]).name;
  run_passes(g);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, out_name);
}

}  // namespace
}  // namespace gf
