// command_dependencies against edges worked out by hand.
#include "runtime/graph_dependencies.h"
#include "test_util.h"

namespace gf {
namespace {

using Deps = std::vector<std::vector<int>>;

TEST(GraphDependencies, ReadAfterWriteWriteAfterReadAndWriteAfterWrite) {
  // 0: x -> a      1: x -> b      2: a, b -> c      3: a -> a' (in place)    4: c -> b (reuses b)
  const std::vector<CommandBuffers> cmds = {
      {{0}, {1}},     // reads x, writes a
      {{0}, {2}},     // reads x, writes b: independent of 0
      {{1, 2}, {3}},  // reads a and b
      {{1}, {1}},     // rewrites a in place: after 0 (WAW) and after 2 (WAR)
      {{3}, {2}},     // writes b again: after 1 (WAW), after 2 (RAW on c, WAR on b)
  };
  EXPECT_EQ(command_dependencies(cmds), (Deps{{}, {}, {0, 1}, {0, 2}, {1, 2}}));
}

TEST(GraphDependencies, IndependentChainsShareNoEdge) {
  std::vector<CommandBuffers> cmds;
  for (int chain = 0; chain < 2; ++chain)
    for (int step = 0; step < 3; ++step) cmds.push_back({{chain * 10 + step}, {chain * 10 + step + 1}});
  EXPECT_EQ(command_dependencies(cmds), (Deps{{}, {0}, {1}, {}, {3}, {4}}));
}

TEST(GraphDependencies, ReadersSinceTheLastWriteAllGuardTheNextWrite) {
  // Three readers of one buffer, then a writer of it: it waits for all three, and for the
  // first writer only through them (no edge 0 -> 4 needed beyond WAW, which is kept).
  const std::vector<CommandBuffers> cmds = {{{}, {7}}, {{7}, {1}}, {{7}, {2}}, {{7}, {3}}, {{}, {7}}};
  EXPECT_EQ(command_dependencies(cmds), (Deps{{}, {0}, {0}, {0}, {0, 1, 2, 3}}));
}

}  // namespace
}  // namespace gf
