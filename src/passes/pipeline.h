// The graph-pass pipeline: the passes of src/passes/ in the order the compiler runs them,
// between import (or constant folding) and fusion planning:
//   dce -> cse -> fold-batch-norm -> fold-transposes -> fuse-sibling-matmuls
//       -> fuse-layer-norm -> fuse-rms-norm -> fuse-gelu -> fuse-attention
// Cleanups come first so the pattern matchers see one copy of each value; BatchNorm and
// transposes fold before the rewrites, and LayerNorm before RMSNorm (LayerNorm's tail is an
// RMSNorm of x - mean).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf {

struct PassOptions {
  // verify_graph + infer_shapes after every pass, so a broken rewrite is caught at the pass
  // that made it. On by default in debug builds.
#ifdef NDEBUG
  bool verify_each_pass = false;
#else
  bool verify_each_pass = true;
#endif
  // Prints the IR (print_graph) after the pass of this name to `dump_stream` (std::cerr when
  // null); "" prints nothing. The CLI's --dump-after PASS.
  std::string dump_after{};
  std::ostream* dump_stream = nullptr;
  // Pass names to skip (as in pass_names()).
  std::vector<std::string> disabled{};
};

struct PassRecord {
  std::string name;
  int changes = 0;         // what the pass reports: nodes removed, merged, folded or fused
  size_t nodes_after = 0;  // node count once it ran
  double seconds = 0;      // wall time it took (verification after it left out)
};

struct PassReport {
  size_t nodes_before = 0;
  std::vector<PassRecord> passes;  // the passes that ran, in order
};

// The pass names in run order.
const std::vector<std::string>& pass_names();

// Runs shape inference, then every pass not disabled. Throws kInvalidArgument naming the
// valid passes when dump_after or disabled names an unknown pass; a verification failure
// after a pass throws kInvalidGraph with the pass named.
PassReport run_passes(Graph& g, const PassOptions& options = {});

}  // namespace gf
