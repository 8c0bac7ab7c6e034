#include "passes/pipeline.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "passes/cse.h"
#include "passes/dead_code.h"
#include "passes/fold_batch_norm.h"
#include "passes/fold_repeated_kv.h"
#include "passes/fold_transpose.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_gelu.h"
#include "passes/fuse_layer_norm.h"
#include "passes/fuse_rms_norm.h"
#include "passes/fuse_sibling_matmuls.h"
#include "passes/remove_no_ops.h"

namespace gf {

namespace {

struct Pass {
  const char* name;
  int (*run)(Graph&);
};

constexpr Pass kPasses[] = {
    {"dce", eliminate_dead_code},
    {"cse", eliminate_common_subexpressions},
    {"remove-no-ops", remove_no_ops},
    {"fold-batch-norm", fold_batch_norms},
    {"fold-transposes", fold_transposes},
    {"fuse-sibling-matmuls", fuse_sibling_matmuls},
    {"fuse-layer-norm", fuse_layer_norms},
    {"fuse-rms-norm", fuse_rms_norms},
    {"fuse-gelu", fuse_gelus},
    {"fuse-attention", fuse_attention},
    {"fold-repeated-kv", fold_repeated_kv},
};

void check_pass_name(const std::string& name, const char* option) {
  const auto& names = pass_names();
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kInvalidArgument,
              std::string(option) + ": unknown pass '" + name + "' (passes: " + list + ")");
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Pass& p : kPasses) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

PassReport run_passes(Graph& g, const PassOptions& options) {
  if (!options.dump_after.empty()) check_pass_name(options.dump_after, "dump_after");
  for (const std::string& name : options.disabled) check_pass_name(name, "disabled");
  infer_shapes(g);
  PassReport report;
  report.nodes_before = g.num_nodes();
  for (const Pass& pass : kPasses) {
    const auto& off = options.disabled;
    if (std::find(off.begin(), off.end(), pass.name) != off.end()) continue;
    const auto start = std::chrono::steady_clock::now();
    const int changes = pass.run(g);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.verify_each_pass) {
      try {
        verify_graph(g);
        infer_shapes(g);
      } catch (const Error& e) {
        throw Error(e.code(), std::string("after pass '") + pass.name + "': " + e.what());
      }
    }
    report.passes.push_back({pass.name, changes, g.num_nodes(), seconds});
    if (options.dump_after == pass.name) {
      std::ostream& out = options.dump_stream != nullptr ? *options.dump_stream : std::cerr;
      out << "# IR after pass '" << pass.name << "' (" << changes << " changes, "
          << g.num_nodes() << " nodes)\n"
          << print_graph(g);
    }
  }
  return report;
}

}  // namespace gf
