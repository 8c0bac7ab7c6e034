// The CUDA backend, eager on one stream: a graph with static shapes compiled into a list of
// steps (generated kernels from the fusion plan, cuBLASLt GEMMs and cuDNN convolutions for the
// anchors with their epilogues generated, hand-written anchor kernels for attention and pooling,
// host steps on the reference kernels where nothing else takes a node) over one device arena
// placed by plan_memory. Weights are uploaded once, when the program is built; a run copies its
// inputs in and its outputs out.
//
// Thread safety: run() may be called from any thread, but calls on one program serialise on a
// mutex: the program has one arena, one stream and one library workspace, and its device
// addresses never change (what a CUDA graph of it will rely on). Programs run concurrently.
//
// This header includes no CUDA header, so the Session can name the type in every build.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "graphfuse/graph.h"

namespace gf::cuda {

struct CudaProgramOptions {
  bool allow_tf32 = false;  // f32 GEMMs and convolutions on the tensor cores in TF32
  // Run the steps as one CUDA graph (cuda_program_graph.h), built and instantiated with the
  // program. A program with host steps runs eagerly whatever this says (stats say which).
  bool use_graph = true;
};

struct CudaProgramStats {
  int nodes = 0;
  int generated_kernels = 0;  // fused kernels from the fusion plan (epilogues included)
  int anchor_kernels = 0;     // hand-written kernels (attention, pooling, ...)
  int library_calls = 0;      // cuBLASLt GEMM and cuDNN convolution steps
  int aliased_views = 0;      // view nodes whose output shares its input's storage
  int host_steps = 0;         // nodes run on the host by the reference kernels
  int fallback_nodes = 0;     // = host_steps: every host step is a node no device path took
  std::vector<std::string> fallback_reasons;
  uint64_t arena_bytes = 0;
  uint64_t arena_lower_bound = 0;
  uint64_t weight_bytes = 0;
  uint64_t workspace_bytes = 0;
  int graph_nodes = 0;  // nodes of the program's CUDA graph; 0 when it runs eagerly
  std::string eager_reason;  // why it runs eagerly ("" in graph mode)
};

struct CudaProgramState;
class ProgramGraph;

class CudaProgram {
 public:
  // `graph` must have static shapes and be shape-inferred (after the session's specialise()).
  // Throws kDeviceError when there is no usable GPU, kCompileError when a generated kernel
  // fails to compile, kOutOfMemory when the arena or the weights do not fit.
  CudaProgram(Graph graph, const CudaProgramOptions& options = {});
  ~CudaProgram();
  CudaProgram(const CudaProgram&) = delete;
  CudaProgram& operator=(const CudaProgram&) = delete;

  // Inputs (host tensors) in the order of graph().inputs(), already checked against their types;
  // outputs are host tensors.
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

  const Graph& graph() const { return graph_; }
  const CudaProgramStats& stats() const { return stats_; }
  // Generated and anchor kernel sources, in step order (for dumps and tests).
  std::vector<std::string> kernel_sources() const;

 private:
  Graph graph_;
  CudaProgramStats stats_;
  std::unique_ptr<CudaProgramState> state_;
  std::unique_ptr<ProgramGraph> cuda_graph_;  // graph mode; destroyed before the state
  mutable std::mutex run_mutex_;
};

}  // namespace gf::cuda
