#include "graphfuse/session.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "runtime/cpu/reference/interpreter.h"
#include "runtime/program_cache.h"
#include "runtime/session_programs.h"
#include "runtime/shape_buckets.h"

namespace gf {

namespace {

void check_input_count(const Graph& g, size_t given) {
  if (given != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "the model takes " +
                                                 std::to_string(g.inputs().size()) +
                                                 " inputs, got " + std::to_string(given));
  }
}

// Checks the types of user inputs against the declared input types; symbolic dims must agree
// across inputs.
void check_input_types(const Graph& g, const std::vector<TensorType>& given) {
  check_input_count(g, given.size());
  std::unordered_map<std::string, int64_t> bound;
  for (size_t i = 0; i < given.size(); ++i) {
    const Value& decl = g.value(g.inputs()[i]);
    const TensorType& t = given[i];
    const std::vector<int64_t> dims = t.shape.static_dims();
    const std::string what = "input '" + decl.name + "' (declared " + decl.type.to_string() + ")";
    if (t.dtype != decl.type.dtype || dims.size() != decl.type.shape.rank()) {
      throw Error(ErrorCode::kShapeMismatch, what + " got " + t.to_string());
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      const Dim& want = decl.type.shape[d];
      if (want.is_static() && want.value() != dims[d]) {
        throw Error(ErrorCode::kShapeMismatch, what + " got " + t.to_string());
      }
      if (want.is_symbolic()) {
        auto [it, inserted] = bound.emplace(want.symbol(), dims[d]);
        if (!inserted && it->second != dims[d]) {
          throw Error(ErrorCode::kShapeMismatch, what + " got " + t.to_string() + ", but dim '" +
                                                     want.symbol() + "' is already " +
                                                     std::to_string(it->second));
        }
      }
    }
  }
}

void check_inputs(const Graph& g, const std::vector<Tensor>& inputs) {
  check_input_count(g, inputs.size());
  std::vector<TensorType> given;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      const Value& decl = g.value(g.inputs()[i]);
      throw Error(ErrorCode::kInvalidArgument, "input '" + decl.name + "' (declared " +
                                                   decl.type.to_string() + ") was not given");
    }
    given.push_back({inputs[i].dtype(), Shape::from_static(inputs[i].dims())});
  }
  check_input_types(g, given);
}

}  // namespace

namespace {
uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return UINT64_MAX;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

bool all_shapes_static(const Graph& g) {
  for (size_t v = 0; v < g.num_values(); ++v)
    if (!g.value(static_cast<ValueId>(v)).type.shape.is_static()) return false;
  return true;
}

}  // namespace

struct Session::Programs {
  Programs(const Graph& g, const SessionOptions& o)
      : cache(static_cast<size_t>(o.max_cached_programs), o.max_cached_program_bytes),
        buckets(g, o.shape_buckets),
        resources(o) {}

  std::mutex mutex;  // guards cache and stats
  ProgramCache cache;
  SessionStats stats;
  const ShapeBuckets buckets;
  SessionResources resources;  // thread-safe itself
};

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)),
      options_(options),
      budget_(std::make_shared<ref::HostMemoryBudget>(options.host_memory_limit_bytes
                                                          ? options.host_memory_limit_bytes
                                                          : physical_memory_bytes())) {
  if (options_.max_cached_programs < 1) {
    throw Error(ErrorCode::kInvalidArgument, "max_cached_programs must be at least 1");
  }
  if (options_.skinny_prefetch_distance < 0) {
    throw Error(ErrorCode::kInvalidArgument, "skinny_prefetch_distance must be at least 0, not " +
                                                 std::to_string(options_.skinny_prefetch_distance));
  }
  infer_shapes(graph_);
  if (options_.device == Device::kCpu &&
      (options_.precision == Precision::kFp16 || options_.precision == Precision::kBf16)) {
    throw Error(ErrorCode::kInvalidArgument, "precision " +
                                                 std::string(precision_name(options_.precision)) +
                                                 " needs device cuda (the CPU computes f32)");
  }
  // After shape inference: buckets cut outputs along the dims inferred for them.
  programs_ = std::make_shared<Programs>(graph_, options_);
  if (options_.device == Device::kCuda) {
    CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) {
      throw Error(ErrorCode::kDeviceError, "cannot run on cuda: " + probe.reason);
    }
  }
}

std::shared_ptr<const CompiledProgram> Session::program_for(
    const std::vector<Tensor>& inputs) const {
  ProgramCache::Key dims;
  for (const Tensor& t : inputs) dims.push_back(t.dims());
  return program_for_dims(dims);
}

std::shared_ptr<const CompiledProgram> Session::program_for_dims(
    const std::vector<std::vector<int64_t>>& dims) const {
  const ProgramCache::Key& key = dims;
  Programs& programs = *programs_;
  {
    std::lock_guard lock(programs.mutex);
    if (std::optional<ProgramCache::ProgramPtr> hit = programs.cache.find(key)) return *hit;
  }
  // Compiled outside the lock: other shapes keep running meanwhile. Two threads that miss on the
  // same shape both compile (the JIT's cache makes the second one cheap); one program is kept.
  const auto compile_start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&compile_start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  };
  Graph bound = specialise(graph_, dims, options_, &programs.resources);
  const double passes_seconds = seconds_since_start();
  auto timed = [&](CompiledProgram compiled) {
    compiled.passes_seconds = passes_seconds;
    compiled.total_seconds = seconds_since_start();
    return std::make_shared<const CompiledProgram>(std::move(compiled));
  };
  std::shared_ptr<const CompiledProgram> program;
  if (all_shapes_static(bound)) {
    try {
      program = timed(compile_program(bound, options_, &programs.resources));
    } catch (const Error& e) {
      // Out of device memory (or past the session's cap): a second try once the cached
      // programs are dropped (their memory goes when no run holds them any more).
      if (e.code() != ErrorCode::kOutOfMemory) throw;
      {
        std::vector<ProgramCache::ProgramPtr> cached;
        {
          std::lock_guard lock(programs.mutex);
          if (programs.cache.programs() == 0) throw;
          programs.cache.drop_all(cached);
        }
      }
      program = timed(compile_program(std::move(bound), options_, &programs.resources));
    }
  }
  // Declared before the lock, so dropped programs are freed after it is released.
  std::vector<ProgramCache::ProgramPtr> dropped;
  std::lock_guard lock(programs.mutex);
  // A null entry remembers that this shape's graph has data-dependent shapes: such graphs run on
  // the interpreter, which infers as it goes.
  const uint64_t own_bytes = program ? program->own_bytes() : 0;
  const uint64_t shared_bytes = program ? program->shared_bytes() : 0;
  if (program) {
    ++programs.stats.programs_compiled;
    if (program->runs_as_cuda_graph()) ++programs.stats.cuda_graph_programs;
    program->record(programs.stats);
  }
  return programs.cache.insert(key, std::move(program), own_bytes, shared_bytes, dropped);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) const {
  check_inputs(graph_, inputs);
  if (options_.cpu_backend == CpuBackend::kReference) {
    return ref::run_graph(graph_, inputs, budget_.get());
  }
  const ShapeBuckets& buckets = programs_->buckets;
  if (buckets.empty()) return run_unbucketed(inputs);
  std::vector<Tensor> padded = inputs;
  const std::vector<int64_t> actual = buckets.pad(padded);
  if (actual.empty()) return run_unbucketed(inputs);
  {
    std::lock_guard lock(programs_->mutex);
    ++programs_->stats.padded_runs;
  }
  std::vector<Tensor> outputs = run_unbucketed(padded);
  buckets.cut(outputs, actual);
  return outputs;
}

std::vector<Tensor> Session::run_unbucketed(const std::vector<Tensor>& inputs) const {
  std::shared_ptr<const CompiledProgram> program = program_for(inputs);
  if (!program) {
    {
      std::lock_guard lock(programs_->mutex);
      ++programs_->stats.data_dependent_shape_runs;
    }
    return ref::run_graph(graph_, inputs, budget_.get());
  }
  // The host arena and the outputs count against the host memory cap for the length of the run.
  uint64_t bytes = program->host_arena_bytes();
  for (ValueId v : program->graph().outputs()) {
    const Value& val = program->graph().value(v);
    bytes += static_cast<uint64_t>(val.type.shape.numel()) * dtype_size(val.type.dtype);
  }
  budget_->reserve_bytes(bytes, program->cpu
                                    ? "a run of the fused CPU program (arena and outputs)"
                                    : "a run of the CUDA program (its outputs on the host)");
  struct Release {
    ref::HostMemoryBudget& budget;
    uint64_t bytes;
    ~Release() { budget.release(bytes); }
  } release{*budget_, bytes};
  return program->run(inputs);
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
  }
  return "fp32";
}

std::string_view skinny_gemm_name(SkinnyGemm s) {
  switch (s) {
    case SkinnyGemm::kAuto:
      return "auto";
    case SkinnyGemm::kAlways:
      return "always";
    case SkinnyGemm::kOff:
      return "off";
  }
  return "auto";
}

std::optional<SkinnyGemm> skinny_gemm_from_name(std::string_view name) {
  for (SkinnyGemm s : {SkinnyGemm::kAuto, SkinnyGemm::kAlways, SkinnyGemm::kOff})
    if (name == skinny_gemm_name(s)) return s;
  return std::nullopt;
}

std::string_view attention_path_name(AttentionPath a) {
  switch (a) {
    case AttentionPath::kAuto:
      return "auto";
    case AttentionPath::kGenerated:
      return "generated";
    case AttentionPath::kCudnn:
      return "cudnn";
  }
  return "auto";
}

std::optional<AttentionPath> attention_path_from_name(std::string_view name) {
  for (AttentionPath a : {AttentionPath::kAuto, AttentionPath::kGenerated, AttentionPath::kCudnn})
    if (name == attention_path_name(a)) return a;
  return std::nullopt;
}

std::string_view gemm_library_name(GemmLibrary l) {
  switch (l) {
    case GemmLibrary::kAuto:
      return "auto";
    case GemmLibrary::kCublasLt:
      return "cublaslt";
    case GemmLibrary::kCudnn:
      return "cudnn";
    case GemmLibrary::kTimed:
      return "timed";
    case GemmLibrary::kGenerated:
      return "generated";
  }
  return "auto";
}

std::optional<GemmLibrary> gemm_library_from_name(std::string_view name) {
  for (GemmLibrary l : {GemmLibrary::kAuto, GemmLibrary::kCublasLt, GemmLibrary::kCudnn,
                        GemmLibrary::kTimed, GemmLibrary::kGenerated})
    if (name == gemm_library_name(l)) return l;
  return std::nullopt;
}

SessionStats Session::stats() const {
  std::lock_guard lock(programs_->mutex);
  SessionStats st = programs_->stats;
  const ProgramCache& cache = programs_->cache;
  st.program_cache_hits = cache.hits();
  st.program_cache_misses = cache.misses();
  st.program_evictions = cache.evictions();
  st.cached_programs = cache.programs();
  st.cached_program_bytes = cache.bytes();
  st.shared_arena_bytes = programs_->resources.shared_arena_bytes();
  return st;
}

std::shared_ptr<const CompiledProgram> Session::program_for_types(
    const std::vector<TensorType>& inputs) const {
  check_input_types(graph_, inputs);
  std::vector<std::vector<int64_t>> dims;
  for (const TensorType& t : inputs) dims.push_back(t.shape.static_dims());
  return program_for_dims(dims);
}

uint64_t Session::host_bytes_in_use() const {
  return budget_->in_use();
}
uint64_t Session::device_bytes_in_use() const {
  return programs_->resources.device_bytes_in_use();
}
uint64_t Session::host_bytes_peak() const {
  return budget_->peak();
}

std::map<std::string, Tensor> Session::run_named(
    const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> ordered;
  for (ValueId v : graph_.inputs()) {
    auto it = inputs.find(graph_.value(v).name);
    if (it == inputs.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "input '" + graph_.value(v).name + "' was not given");
    }
    ordered.push_back(it->second);
  }
  if (inputs.size() != ordered.size()) {
    for (const auto& [name, t] : inputs) {
      if (graph_.find_value(name) == kNoValue) {
        throw Error(ErrorCode::kInvalidArgument, "the model has no input named '" + name + "'");
      }
    }
  }
  std::vector<Tensor> outs = run(ordered);
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    result.emplace(graph_.value(graph_.outputs()[i]).name, std::move(outs[i]));
  }
  return result;
}

}  // namespace gf
