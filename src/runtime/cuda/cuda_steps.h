// The steps of a CudaProgram and the device resources they run on (internal to
// cuda_program*.cpp). Built by build_cuda_steps (cuda_program_builder.cpp), run by
// CudaProgram::run (cuda_program.cpp).
#pragma once

#include <cuda.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "graphfuse/graph.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/cudnn_matmul.h"
#include "runtime/cuda/cudnn_sdpa.h"
#include "runtime/cuda/device_buffer.h"
#include "runtime/cuda/device_weights.h"
#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/program_bindings.h"
#include "runtime/cuda/session_arena.h"
#include "runtime/cuda/session_device_memory.h"
#include "runtime/memory_plan.h"
#include "runtime/step_lifetimes.h"

namespace gf::cuda {

// A kernel step's table entry for its private buffer (CudaStep::private_buffer); never a value.
inline constexpr ValueId kStepPrivateBuffer = -2;

struct CudaStep {
  enum class Kind { kKernel, kGemm, kConv, kAttention, kHost };
  Kind kind = Kind::kHost;
  std::string label;  // what the step runs, for errors

  // kKernel: a generated or anchor kernel; `buffers` in its table order. An entry
  // kStepPrivateBuffer stands for `private_buffer`: `private_bytes` of device memory that only
  // this step uses (a k-split GEMM's counters and partial sums, the tensor-core GEMM's tensor
  // maps), set once when the program is built (to `private_init`, else zeros) and kept as long
  // as it lives. No value lives there, so it is in no lifetime, arena piece or graph edge; the
  // kernel leaves it as it found it, or in a state any later launch accepts.
  codegen::CudaKernelSource kernel;
  std::vector<ValueId> buffers;
  std::vector<bool> is_output;
  uint64_t private_bytes = 0;
  std::vector<uint8_t> private_init;  // empty, or private_bytes long; freed once uploaded
  DeviceBuffer private_buffer;
  CUfunction fn = nullptr;
  size_t table_index = 0;  // its first entry in the program's pointer table

  // kGemm: `gemm_plan` through cuBLASLt (`gemm`), or through cuDNN's fused matmul
  // (`cudnn_gemm`, when set: one call; GemmLibrary).
  std::optional<GemmPlan> gemm_plan;
  std::unique_ptr<CublasLtGemm> gemm;
  std::unique_ptr<CudnnMatmul> cudnn_gemm;

  // kConv and kHost: the node.
  NodeId node = kNoNode;
  std::unique_ptr<CudnnConv> conv;

  // kAttention: cuDNN's fused attention reading Q, K, V and writing Y, `buffers` in that order
  // (views of other values where the node's operands are read in place), each from its buffer's
  // start plus `sdpa_offsets` elements.
  std::unique_ptr<CudnnSdpa> sdpa;
  std::array<int64_t, 4> sdpa_offsets{};

  StepBuffers reads_and_writes(const Graph& g) const;
};

// Library handles, created when a step first needs them.
struct CudaLibraries {
  std::unique_ptr<CublasLtHandle> cublaslt;
  std::unique_ptr<CudnnHandle> cudnn;
  bool cudnn_refused = false;  // CudnnHandle threw kUnsupported once: no cuDNN in this build
  bool allow_tf32 = false;
};

struct CudaProgramState {
  // The session's weights and budget; outlives every buffer below that is charged to it.
  std::shared_ptr<SessionDeviceMemory> device_memory;
  // Declared first, destroyed last: the steps' GEMM and convolution objects hold references.
  CudaLibraries libraries;
  std::vector<CudaStep> steps;
  std::vector<ValueId> storage_of;  // per value: the value whose storage it uses (views alias)
  std::vector<std::unique_ptr<CudaModule>> modules;
  MemoryPlan memory;
  std::vector<int> slot_of_value;
  // Per arena slot, the pieces of the arena it covers (arena_pieces in memory_plan.h): a graph's
  // edges order the uses of each piece.
  std::vector<std::pair<int, int>> slot_pieces;
  int arena_pieces = 0;
  // Whose turns the program takes, and its lease on it: the memory plan's bytes, then the
  // library workspace (runs take turns, so one workspace serves the session's programs).
  std::shared_ptr<SessionArena> arena;
  std::unique_ptr<SessionArena::Lease> arena_lease;
  CUdeviceptr workspace = 0;
  DeviceWeights weights;
  DeviceBuffer tables;  // the kernels' pointer tables, one after another
  std::unique_ptr<ProgramBindings> bindings;
  // The edges of the program's graph segment (segment_dependencies, cuda_program_graph.h); empty
  // for a program with host steps, which no graph holds.
  std::vector<std::vector<int>> segment_dependencies;
  // Device state of the loops populated into callers' graphs (program_control.h); they may run
  // as long as the program lives.
  mutable std::vector<DeviceBuffer> control_buffers;
  std::unique_ptr<CudaStream> stream;
  CUevent ready = nullptr;  // the caller's stream reached a run (eager runs on caller buffers)
  // Kernel-to-kernel edges are programmatic where the later kernel syncs (graph mode), and such
  // a kernel right after one of ours starts early in eager mode
  // (CudaProgramOptions::programmatic_launch; cuda_program_graph.h).
  bool programmatic_edges = false;

  CudaProgramState() = default;
  ~CudaProgramState();
  CudaProgramState(const CudaProgramState&) = delete;
  CudaProgramState& operator=(const CudaProgramState&) = delete;

  // The device address of `v`'s storage: the arena slot, or the uploaded weight.
  CUdeviceptr device_ptr(const Graph& g, ValueId v) const;
  // The same during a run bound by `bound` (program_bindings.h): the caller's buffer where `v`
  // is bound directly. Null: device_ptr.
  CUdeviceptr bound_ptr(const Graph& g, ValueId v, const BoundAddresses* bound) const;
  void* workspace_address() const {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(workspace));
  }
};

// Turns the fusion plan of `g` into steps (kernels not yet compiled) and fills the step counts
// of `stats`. Needs a current context for the library objects. `sm_count` and
// `compute_capability` are the device's (grid sizes; which instructions the kernels may use).
// Of `options`, the choices of paths are read: skinny_gemm (which decode-shaped products run as
// skinny GEMM kernels, skinny_gemm_step.h, instead of cuBLASLt), skinny_prefetch_distance,
// round_16bit_intermediates, attention (cuda_attention_step.h) and gemm_library
// (gemm_library_choice.h).
void build_cuda_steps(const Graph& g, CudaProgramState& state, CudaProgramStats& stats,
                      int sm_count, int compute_capability, const CudaProgramOptions& options);

// A kAttention step's operands at their addresses in the program's arena.
SdpaBuffers attention_buffers(const Graph& g, const CudaProgramState& state, const CudaStep& step);

// Enqueues a library step (kGemm, kConv, kAttention) on `stream`, on the buffers of a run bound
// by `bound` (null: the arena's).
void run_library_step(const Graph& g, const CudaProgramState& state, const CudaStep& step,
                      CUstream stream, const BoundAddresses* bound = nullptr);

// Runs a host step: copies the node's inputs from the device, runs its reference kernel, copies
// its outputs back. Synchronises the stream first and last.
void run_host_step(const Graph& g, const CudaProgramState& state, const CudaStep& step);

}  // namespace gf::cuda
