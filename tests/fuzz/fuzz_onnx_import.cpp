// libFuzzer target: the ONNX importer on arbitrary bytes, set up as the CLI sets it up (the
// reference interpreter folds constant nodes while reading, so their kernels are fuzzed too).
// External data is refused (no base directory), so the target never touches the file system.
#include <cstdint>
#include <span>
#include <string_view>

#include "fuzz_support.h"
#include "graphfuse/graph.h"
#include "graphfuse/onnx.h"
#include "runtime/cpu/reference/interpreter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  gf::OnnxImportOptions options;
  options.evaluate = [](const gf::Node& n, std::span<const gf::Tensor> in) {
    return gf::ref::run_node(n, in);
  };
  gf::Graph g;
  bool imported = false;
  gf::fuzz::expect_only_gf_errors("import_onnx_bytes", [&] {
    g = gf::import_onnx_bytes(bytes, options);
    imported = true;
  });
  if (!imported) return 0;
  // What the importer accepts must be a well-formed graph: a later check failing on it would
  // mean the importer let a malformed model through.
  try {
    gf::verify_graph(g);
  } catch (const gf::Error& e) {
    std::fprintf(stderr, "the importer accepted a graph that fails verify_graph: %s\n", e.what());
    std::abort();
  }
  gf::fuzz::check(!g.outputs().empty(), "an imported graph has no outputs");
  return 0;
}
