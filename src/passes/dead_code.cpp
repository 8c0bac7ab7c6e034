#include "passes/dead_code.h"

#include "passes/compact_graph.h"

namespace gf {

int eliminate_dead_code(Graph& g) {
  const size_t before = g.num_nodes();
  remove_dead_nodes(g);
  return static_cast<int>(before - g.num_nodes());
}

}  // namespace gf
