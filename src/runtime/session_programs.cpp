#include "runtime/session_programs.h"

#include "codegen/cpu/jit_compiler.h"
#include "passes/convert_precision.h"
#include "passes/fold_constants.h"
#include "passes/pipeline.h"
#include "runtime/cpu/fused_program.h"
#include "runtime/cpu/reference/interpreter.h"
#ifdef GF_HAVE_CUDA
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/session_device_memory.h"
#endif

namespace gf {

namespace {

// One JIT for the process: its in-memory cache then serves every session. Never destroyed:
// at exit, unloading compiled libraries would race with other static destructors.
codegen::JitCompiler& process_jit() {
  static codegen::JitCompiler* jit = new codegen::JitCompiler();
  return *jit;
}

}  // namespace

SessionResources::SessionResources(const SessionOptions& options) {
#ifdef GF_HAVE_CUDA
  if (options.device == Device::kCuda) {
    device_memory = std::make_shared<cuda::SessionDeviceMemory>(options.device_memory_limit_bytes);
  }
#endif
}

uint64_t SessionResources::device_bytes_in_use() const {
#ifdef GF_HAVE_CUDA
  if (device_memory) return device_memory->budget()->used();
#endif
  return 0;
}

uint64_t SessionResources::shared_arena_bytes() const {
#ifdef GF_HAVE_CUDA
  if (device_memory) return device_memory->arena_backed_bytes();
#endif
  return 0;
}

Graph specialise(const Graph& g, const std::vector<Tensor>& inputs, const SessionOptions& options) {
  std::vector<std::vector<int64_t>> dims;
  for (const Tensor& t : inputs) dims.push_back(t.dims());
  return specialise(g, dims, options);
}

Graph specialise(const Graph& g, const std::vector<std::vector<int64_t>>& input_dims,
                 const SessionOptions& options, SessionResources* resources) {
  Graph bound = g;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    bound.value(bound.inputs()[i]).type.shape = Shape::from_static(input_dims[i]);
  }
  fold_constants(bound, [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); });
  PassOptions passes;
  passes.disabled = options.disabled_passes;
  passes.dump_after = options.dump_after_pass;
  run_passes(bound, passes);
  ConvertedConstants* memo = resources ? &resources->converted : nullptr;
  if (options.device == Device::kCuda && options.precision == Precision::kFp16) convert_precision(bound, DType::kF16, memo);
  if (options.device == Device::kCuda && options.precision == Precision::kBf16) convert_precision(bound, DType::kBF16, memo);
  return bound;
}

CompiledProgram compile_program(Graph specialised, const SessionOptions& options,
                                SessionResources* resources) {
  CompiledProgram p;
  if (options.device == Device::kCpu) {
    p.cpu = std::make_shared<const cpu::FusedProgram>(std::move(specialised), process_jit());
    return p;
  }
#ifdef GF_HAVE_CUDA
  cuda::CudaProgramOptions cuda_options;
  cuda_options.allow_tf32 = options.precision == Precision::kTf32;
  cuda_options.use_graph = options.mode == ExecutionMode::kGraph;
  cuda_options.programmatic_launch = options.programmatic_launch;
  if (resources) cuda_options.device_memory = resources->device_memory;
  cuda_options.shared_arena = options.share_device_arena;
  cuda_options.skinny_gemm = options.skinny_gemm;
  cuda_options.skinny_prefetch_distance = options.skinny_prefetch_distance;
  cuda_options.attention = options.attention;
  cuda_options.gemm_library = options.gemm_library;
  cuda_options.round_16bit_intermediates = options.round_16bit_intermediates;
  p.cuda = std::make_shared<const cuda::CudaProgram>(std::move(specialised), cuda_options);
  return p;
#else
  throw Error(ErrorCode::kDeviceError, "cannot run on cuda: graphfuse was built without CUDA");
#endif
}

const Graph& CompiledProgram::graph() const {
#ifdef GF_HAVE_CUDA
  if (cuda) return cuda->graph();
#endif
  return cpu->graph();
}

std::vector<Tensor> CompiledProgram::run(std::span<const Tensor> inputs) const {
#ifdef GF_HAVE_CUDA
  if (cuda) return cuda->run(inputs);
#endif
  return cpu->run(inputs);
}

uint64_t CompiledProgram::host_arena_bytes() const { return cpu ? cpu->stats().arena_bytes : 0; }

// Kernel modules and pointer tables are left out: a few KiB per program. So are the weights:
// the session's programs share them.
uint64_t CompiledProgram::own_bytes() const {
#ifdef GF_HAVE_CUDA
  if (cuda) {
    const cuda::CudaProgramStats& s = cuda->stats();
    return s.private_bytes + (s.shared_arena ? 0 : s.arena_lease_bytes);
  }
#endif
  return host_arena_bytes();
}

uint64_t CompiledProgram::shared_bytes() const {
#ifdef GF_HAVE_CUDA
  if (cuda && cuda->stats().shared_arena) return cuda->stats().arena_lease_bytes;
#endif
  return 0;
}

bool CompiledProgram::runs_as_cuda_graph() const {
#ifdef GF_HAVE_CUDA
  if (cuda) return cuda->stats().eager_reason.empty();
#endif
  return false;
}

void CompiledProgram::record(SessionStats& stats) const {
  if (cpu) {
    const cpu::FusedProgramStats& s = cpu->stats();
    stats.fused_kernels = s.fused_kernels;
    stats.reference_steps = s.reference_steps;
    stats.fallback_nodes = s.fallback_nodes;
    stats.fallback_reasons = s.fallback_reasons;
    stats.arena_bytes = s.arena_bytes;
    stats.arena_lower_bound = s.arena_lower_bound;
    stats.compile_seconds = {};
    stats.compile_seconds.passes = passes_seconds;
    stats.compile_seconds.total = total_seconds;
    return;
  }
#ifdef GF_HAVE_CUDA
  const cuda::CudaProgramStats& s = cuda->stats();
  stats.fused_kernels = s.generated_kernels + s.anchor_kernels;
  stats.library_calls = s.library_calls;
  stats.tuned_gemms = s.tuned_gemms;
  stats.skinny_gemm_steps = s.skinny_gemm_steps;
  stats.cudnn_attention_steps = s.cudnn_attention_steps;
  stats.cudnn_gemm_steps = s.cudnn_gemm_steps;
  stats.tensor_core_gemm_steps = s.tensor_core_gemm_steps;
  stats.reference_steps = s.host_steps;
  stats.fallback_nodes = s.fallback_nodes;
  stats.fallback_reasons = s.fallback_reasons;
  stats.arena_bytes = s.arena_bytes;
  stats.arena_lower_bound = s.arena_lower_bound;
  stats.graph_nodes = s.graph_nodes;
  stats.programmatic_edges = s.programmatic_edges;
  stats.direct_bindings = s.direct_bindings;
  stats.compile_seconds = s.compile_seconds;
  stats.compile_seconds.passes = passes_seconds;
  stats.compile_seconds.total = total_seconds;
#endif
}

}  // namespace gf
