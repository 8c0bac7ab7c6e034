// What the anchor-kernel emitters (anchor_attention.cpp, anchor_window.cpp) share: the source
// around one embedded .cuh body (header comment, prelude, node constants, element type, entry
// point), launch sizing, and the errors they raise.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/graph.h"

namespace gf::codegen::anchor {

// Throws kUnsupported: "<describe_node>: <why> (no CUDA kernel)".
[[noreturn]] void unsupported(const Node& node, const Graph& g, const std::string& why);

// The static dims of value `v`; kUnsupported when a dim is symbolic or unknown.
std::vector<int64_t> static_dims(const Node& node, const Graph& g, ValueId v);

// kUnsupported unless `t` is f32, f16 or bf16.
void expect_float_storage(const Node& node, const Graph& g, DType t);

// A grid-stride launch of `threads`-wide blocks over `total` items: enough blocks to cover them,
// at most kCudaBlocksPerSm per SM; grid 0 when there is nothing to do.
LaunchConfig grid_stride_launch(int64_t total, int threads, int sm_count);

// One kernel's source: the header, then constants in the order written, then the body.
class AnchorWriter {
 public:
  AnchorWriter(const Node& node, const Graph& g, std::string name, std::string_view kind);

  void constant(const std::string& name, int64_t value);
  void flag(const std::string& name, bool value);
  void constant_f32(const std::string& name, float value);
  // A __device__ constexpr array: constant-folded where indexed by an unrolled loop.
  void array(const std::string& name, const std::vector<int64_t>& values);
  // `typedef <storage> <type>` and, for a float dtype, `<load>(storage) -> float` and
  // `<store>(float) -> storage` with the reference's rounding.
  void element_type(DType t, const std::string& type = "gf_elem", const std::string& load = "gf_load",
                    const std::string& store = "gf_store");
  void typedef_storage(DType t, const std::string& type);

  // The entry point runs in thread-block clusters of `blocks` blocks (__cluster_dims__, sm_90);
  // the grid must be a multiple of it.
  void cluster_blocks(int blocks) { cluster_blocks_ = blocks; }
  // Blocks that must fit on one SM at once (__launch_bounds__' second argument, which caps the
  // registers per thread to make room for them).
  void min_blocks_per_sm(int blocks) { min_blocks_per_sm_ = blocks; }

  // `body` is the embedded .cuh; `function` the device function in it that the entry point
  // calls with `buffers`.
  CudaKernelSource finish(std::string_view body, std::string_view function, LaunchConfig launch);

 private:
  std::string name_;
  std::ostringstream header_, constants_;
  int cluster_blocks_ = 1;
  int min_blocks_per_sm_ = 1;
};

}  // namespace gf::codegen::anchor
