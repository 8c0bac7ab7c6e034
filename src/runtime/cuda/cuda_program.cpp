// CudaProgram: compiling the steps' kernels, placing memory, uploading weights and pointer
// tables (all once), and running the steps eagerly on the program's stream.
#include "runtime/cuda/cuda_program.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <system_error>

#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "passes/channels_last_conv.h"
#include "passes/split_gemm_scaling.h"
#include "runtime/cuda/cuda_program_graph.h"
#include "runtime/cuda/cuda_steps.h"
#include "runtime/cuda/library_warmup.h"
#include "runtime/cuda/program_control.h"

namespace gf::cuda {

namespace {

// Compiles the steps' kernels and the binding kernels in one parallel batch; returns the
// binding kernels' cubin.
std::string load_kernels(const Graph& g, CudaProgramState& state, const CudaContext& ctx) {
  std::vector<std::string> sources;
  std::vector<codegen::ArchTarget> targets;
  for (const CudaStep& s : state.steps) {
    if (s.kind != CudaStep::Kind::kKernel) continue;
    sources.push_back(s.kernel.source);
    targets.push_back(codegen::arch_target_of(s.kernel));
  }
  sources.push_back(ProgramBindings::source_for(g));
  targets.push_back(codegen::ArchTarget::kPortable);
  const std::vector<codegen::CubinPtr> cubins =
      process_nvrtc().compile_all(sources, ctx.compute_capability(), targets);
  // Steps of one source (the same kernel in every layer) share one cubin and load it once.
  std::map<const std::string*, const CudaModule*> loaded;
  size_t next = 0;
  for (CudaStep& s : state.steps) {
    if (s.kind != CudaStep::Kind::kKernel) continue;
    const std::string* cubin = cubins[next++].get();
    const CudaModule*& module = loaded[cubin];
    if (!module) {
      state.modules.push_back(CudaModule::load(*cubin, s.kernel.name));
      module = state.modules.back().get();
    }
    s.fn = module->function(s.kernel.name);
    allow_dynamic_shared_memory(s.fn, s.kernel.launch.dynamic_shared_bytes, s.label);
    allow_cluster_blocks(s.fn, s.kernel.launch.cluster_blocks, s.label);
  }
  return *cubins[next];
}

void launch_kernel(CUfunction fn, uint32_t grid, uint32_t block, uint32_t shared, CUstream stream,
                   void** params, const std::string& what) {
  check_cu(
      cuda_driver().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, stream, params, nullptr),
      "cuLaunchKernel (" + what + ")");
}

// A launch that may start while the kernel before it on `stream` finishes (programmatic stream
// serialization): for a kernel that waits for its inputs inside, after a kernel of ours. Stream
// capture turns it into the programmatic edge the graph form adds.
void launch_kernel_early(CUfunction fn, uint32_t grid, uint32_t block, uint32_t shared,
                         CUstream stream, void** params, const std::string& what) {
  CUlaunchAttribute early{};
  early.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  early.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = grid;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = block;
  config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = shared;
  config.hStream = stream;
  config.attrs = &early;
  config.numAttrs = 1;
  check_cu(cuda_driver().cuLaunchKernelEx(&config, fn, params, nullptr),
           "cuLaunchKernelEx (" + what + ")");
}

}  // namespace

CUdeviceptr CudaProgramState::device_ptr(const Graph& g, ValueId v) const {
  const ValueId root = storage_of[static_cast<size_t>(v)];
  if (g.value(root).is_constant()) {
    const CUdeviceptr p = weights.ptr(root);
    GF_ASSERT(p != 0, "a device step reads a weight that was not uploaded");
    return p;
  }
  const int slot = slot_of_value[static_cast<size_t>(v)];
  GF_ASSERT(slot >= 0, "a device step uses a value with no arena slot");
  return arena_lease->ptr() + memory.offsets[static_cast<size_t>(slot)];
}

CUdeviceptr CudaProgramState::bound_ptr(const Graph& g, ValueId v,
                                        const BoundAddresses* bound) const {
  return bound == nullptr ? device_ptr(g, v) : bindings->address_of(g, *this, v, bound);
}

SdpaBuffers attention_buffers(const Graph& g, const CudaProgramState& st, const CudaStep& s) {
  const uint64_t es = dtype_size(s.sdpa->dims().dtype);
  void* at[4];
  for (size_t i = 0; i < 4; ++i) {
    at[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(
        st.device_ptr(g, s.buffers[i]) + static_cast<uint64_t>(s.sdpa_offsets[i]) * es));
  }
  return {at[0], at[1], at[2], at[3], st.workspace_address()};
}

void run_library_step(const Graph& g, const CudaProgramState& st, const CudaStep& s,
                      CUstream stream, const BoundAddresses* bound) {
  if (s.kind == CudaStep::Kind::kGemm) {
    // The only library step that may touch a buffer bound directly (program_bindings.h).
    const GemmPlan& p = *s.gemm_plan;
    const uint64_t es = dtype_size(p.spec.dtype);
    const CUdeviceptr a = st.bound_ptr(g, p.a, bound), b = st.bound_ptr(g, p.b, bound);
    const CUdeviceptr c = st.bound_ptr(g, p.c, bound);
    const CUdeviceptr bias = p.bias == kNoValue ? 0 : st.bound_ptr(g, p.bias, bound);
    auto address = [](CUdeviceptr base, int64_t offset, uint64_t size) {
      return reinterpret_cast<void*>(
          static_cast<uintptr_t>(base + static_cast<uint64_t>(offset) * size));
    };
    if (s.cudnn_gemm) {
      const GemmCall& call = p.calls.front();
      s.cudnn_gemm->run(
          {address(a, call.a_offset, es), address(b, call.b_offset, es), address(bias, 0, 1),
           address(c, call.c_offset, es), st.workspace_address()},
          stream);
      return;
    }
    for (const GemmCall& call : p.calls) {
      s.gemm->run(address(a, call.a_offset, es), address(b, call.b_offset, es), address(bias, 0, 1),
                  address(c, call.c_offset, es), st.workspace_address(), stream);
    }
    return;
  }
  if (s.kind == CudaStep::Kind::kAttention) {
    s.sdpa->run(attention_buffers(g, st, s), stream);
    return;
  }
  if (s.kind == CudaStep::Kind::kConv) {
    const Node& n = g.node(s.node);
    const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
    auto address = [&](ValueId v) {
      return reinterpret_cast<void*>(static_cast<uintptr_t>(st.device_ptr(g, v)));
    };
    s.conv->run(address(n.inputs[0]), address(n.inputs[1]),
                has_bias ? address(n.inputs[2]) : nullptr, address(n.outputs[0]),
                st.workspace_address(), stream);
    return;
  }
  GF_ASSERT(false, "run_library_step: not a library step");
}

CudaProgram::CudaProgram(Graph graph, const CudaProgramOptions& options)
    : graph_(std::move(graph)), state_(std::make_unique<CudaProgramState>()) {
  const CudaContext& ctx = CudaContext::get();
  split_gemm_scaling(graph_);
  if (options.channels_last_convs && cudnn_available()) channels_last_convs(graph_);
  CudaProgramState& st = *state_;
  st.device_memory =
      options.device_memory ? options.device_memory : std::make_shared<SessionDeviceMemory>();
  st.libraries.allow_tf32 = options.allow_tf32;
  st.programmatic_edges = options.programmatic_launch && ctx.compute_capability() >= 90;
  using Clock = std::chrono::steady_clock;
  auto phase_start = Clock::now();
  auto lap = [&phase_start](double& into) {
    const auto now = Clock::now();
    into = std::chrono::duration<double>(now - phase_start).count();
    phase_start = now;
  };
  CompileSeconds& seconds = stats_.compile_seconds;
  build_cuda_steps(graph_, st, stats_, ctx.sm_count(), ctx.compute_capability(), options);
  lap(seconds.steps);

  // Weights the device steps read (through views too), once; and the library workspace.
  std::vector<StepBuffers> uses;
  for (const CudaStep& s : st.steps) uses.push_back(s.reads_and_writes(graph_));
  std::vector<ValueId> weights;
  size_t workspace = 0;
  for (size_t i = 0; i < st.steps.size(); ++i) {
    const CudaStep& s = st.steps[i];
    if (s.kind == CudaStep::Kind::kHost) continue;
    for (ValueId v : uses[i].reads) {
      if (v == kNoValue) continue;
      const ValueId root = st.storage_of[static_cast<size_t>(v)];
      if (graph_.value(root).is_constant()) weights.push_back(root);
    }
    if (s.kind == CudaStep::Kind::kGemm) workspace = std::max(workspace, kGemmWorkspaceBytes);
    if (s.cudnn_gemm) workspace = std::max(workspace, s.cudnn_gemm->workspace_bytes());
    if (s.kind == CudaStep::Kind::kConv) workspace = std::max(workspace, s.conv->workspace_bytes());
    if (s.kind == CudaStep::Kind::kAttention)
      workspace = std::max(workspace, s.sdpa->workspace_bytes());
  }
  // An output that is a weight (or a view of one) is copied from the device to caller buffers.
  for (ValueId v : graph_.outputs()) {
    const ValueId root = st.storage_of[static_cast<size_t>(v)];
    if (graph_.value(root).is_constant()) weights.push_back(root);
  }
  SessionDeviceMemory& device = *st.device_memory;
  // The upload (host copies, DMA, device transposes) runs on a thread of its own while the
  // kernels load and the memory is planned; and cuBLASLt's first calls in the process on another
  // (library_warmup.h).
  auto upload = [this, &weights, &device, &seconds] {
    const auto start = Clock::now();
    DeviceWeights uploaded(graph_, weights, device);
    seconds.weights = std::chrono::duration<double>(Clock::now() - start).count();
    return uploaded;
  };
  std::future<DeviceWeights> uploading;
  try {
    uploading = std::async(std::launch::async, [&upload] {
      CudaContext::get().make_current();
      return upload();
    });
  } catch (const std::system_error&) {
    uploading = std::async(std::launch::deferred, upload);  // no thread to spare: below, inline
  }
  std::vector<CublasLtGemm*> gemms;
  for (CudaStep& s : st.steps)
    if (s.kind == CudaStep::Kind::kGemm && s.gemm) gemms.push_back(s.gemm.get());
  // cuBLASLt's one-time set-up in the process (graphfuse/device.h), if nobody started it, now
  // that the program is known to call it: also where the warm-up below is skipped.
  if (!gemms.empty()) start_cuda_setup();
  LibraryWarmup warmup(std::move(gemms), st.device_memory);
  const std::string binding_cubin = load_kernels(graph_, st, ctx);
  lap(seconds.kernels);

  // Inputs, outputs and intermediates share one arena, placed by their lifetimes over the steps.
  // Inputs keep their slots to the end: a loop writes them again for its next iteration.
  StepLifetimes lifetimes =
      step_lifetimes(graph_, uses, LifetimeOptions{true, true, true, st.storage_of});
  st.memory = plan_memory(lifetimes.buffers);
  st.slot_of_value = std::move(lifetimes.slot_of_value);
  ArenaPieces pieces = arena_pieces(st.memory, lifetimes.buffers);
  st.slot_pieces = std::move(pieces.of_buffer);
  st.arena_pieces = pieces.count;
  const std::string what = "'" + graph_.name + "'";
  st.weights = uploading.get();
  // The arena: the memory plan's bytes, then the workspace (aligned for the libraries).
  const uint64_t workspace_offset = (st.memory.arena_bytes + 255) / 256 * 256;
  st.arena = options.shared_arena ? device.arena() : SessionArena::create(device.budget());
  st.arena_lease = st.arena->lease(
      workspace_offset + workspace,
      "the arena of " + what + " (" + std::to_string(st.memory.arena_bytes) + " bytes of values, " +
          std::to_string(workspace) + " of library workspace)");
  st.workspace = workspace > 0 ? st.arena_lease->ptr() + workspace_offset : 0;

  // Every kernel's pointer table, filled once: no address changes between runs. Private
  // buffers start as their steps say (zeros unless private_init).
  std::vector<CUdeviceptr> table;
  uint64_t private_bytes = 0;
  for (CudaStep& s : st.steps) {
    if (s.kind != CudaStep::Kind::kKernel) continue;
    if (s.private_bytes > 0) {
      s.private_buffer = device.allocate(s.private_bytes, "the private buffer of " + s.label);
      if (s.private_init.empty()) {
        check_cu(cuda_driver().cuMemsetD8(s.private_buffer.ptr(), 0, s.private_bytes),
                 "cuMemsetD8 (the private buffer of " + s.label + ")");
      } else {
        check_cu(cuda_driver().cuMemcpyHtoD(s.private_buffer.ptr(), s.private_init.data(),
                                            s.private_bytes),
                 "cuMemcpyHtoD (the private buffer of " + s.label + ")");
        std::vector<uint8_t>().swap(s.private_init);  // on the device now; nothing reads it again
      }
      private_bytes += s.private_bytes;
    }
    s.table_index = table.size();
    for (ValueId v : s.buffers)
      table.push_back(v == kStepPrivateBuffer ? s.private_buffer.ptr() : st.device_ptr(graph_, v));
  }
  st.tables = device.allocate(table.size() * sizeof(CUdeviceptr), "the kernel tables of " + what);
  if (!table.empty()) {
    check_cu(cuda_driver().cuMemcpyHtoD(st.tables.ptr(), table.data(), st.tables.bytes()),
             "cuMemcpyHtoD (kernel pointer tables)");
  }
  st.stream = std::make_unique<CudaStream>();
  st.bindings = std::make_unique<ProgramBindings>(graph_, st, binding_cubin, ctx.sm_count());
  graph_addresses_ = st.bindings->defaults();
  tables_ = std::make_unique<KernelTableState>();
  stats_.direct_bindings = st.bindings->direct_capable();
  check_cu(cuda_driver().cuEventCreate(&st.ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate");

  if (stats_.host_steps == 0) st.segment_dependencies = segment_dependencies(graph_, st);
  lap(seconds.memory);
  warmup.join();  // before the graph records the GEMMs (or a run calls them)
  stats_.arena_bytes = st.memory.arena_bytes;
  stats_.arena_lower_bound = st.memory.lower_bound;
  stats_.weight_bytes = st.weights.bytes();
  stats_.workspace_bytes = workspace + private_bytes;
  stats_.arena_lease_bytes = st.arena_lease->bytes();
  stats_.private_bytes = private_bytes;
  stats_.shared_arena = options.shared_arena && st.arena->shared();

  if (!options.use_graph) {
    stats_.eager_reason = "graph mode off";
  } else if (stats_.host_steps > 0) {
    stats_.eager_reason = std::to_string(stats_.host_steps) + " host steps";
  } else {
    cuda_graph_ = ProgramGraph::build(graph_, st);
    stats_.graph_nodes = static_cast<int>(cuda_graph_->node_count());
    stats_.programmatic_edges = static_cast<int>(cuda_graph_->programmatic_edges());
  }
  // The weight uploads, tables, binding and loop copies and private-buffer memsets above went on
  // the legacy default stream, which the non-blocking streams runs use do not wait for; and a
  // copy from pageable memory may return before its DMA lands. So they finish here, once.
  check_cu(cuda_driver().cuStreamSynchronize(nullptr),
           "cuStreamSynchronize (the program's uploads)");
  lap(seconds.graph);
}

CudaProgramState::~CudaProgramState() {
  if (ready) cuda_driver().cuEventDestroy(ready);
}

CudaProgram::~CudaProgram() {
  // Frees and unloads need the context current on this thread.
  try {
    CudaContext::get();
  } catch (const Error&) {
  }
}

std::vector<std::string> CudaProgram::kernel_sources() const {
  std::vector<std::string> out;
  for (const CudaStep& s : state_->steps)
    if (s.kind == CudaStep::Kind::kKernel) out.push_back(s.kernel.source);
  return out;
}

std::vector<Tensor> CudaProgram::run(std::span<const Tensor> inputs) const {
  GF_ASSERT(inputs.size() == graph_.inputs().size());
  const CudaProgramState& st = *state_;
  std::scoped_lock lock(run_mutex_, st.arena->turn());
  CudaContext::get();
  const CudaDriverApi& cu = cuda_driver();
  const CUstream stream = st.stream->get();
  // After the arena's last run (the copies below write the arena); launch() asks again, on the
  // same stream, which orders nothing more.
  st.arena->follow_last_run(stream, graph_.name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId v = graph_.inputs()[i];
    if (st.slot_of_value[static_cast<size_t>(v)] < 0 || inputs[i].nbytes() == 0)
      continue;  // unused
    check_cu(
        cu.cuMemcpyHtoDAsync(st.device_ptr(graph_, v), inputs[i].raw(), inputs[i].nbytes(), stream),
        "cuMemcpyHtoDAsync (input '" + graph_.value(v).name + "')");
  }
  launch(st.bindings->defaults(), stream);
  std::vector<Tensor> outputs;
  for (ValueId v : graph_.outputs()) {
    const Value& val = graph_.value(v);
    outputs.emplace_back(val.type.dtype, val.type.shape.static_dims());
    Tensor& t = outputs.back();
    if (t.nbytes() == 0) continue;
    const Value& root = graph_.value(st.storage_of[static_cast<size_t>(v)]);
    if (root.is_constant()) {  // an output that is a weight (or a view of one) never left the host
      std::memcpy(t.raw(), root.constant.raw(), t.nbytes());
      continue;
    }
    check_cu(cu.cuMemcpyDtoHAsync(t.raw(), st.device_ptr(graph_, v), t.nbytes(), stream),
             "cuMemcpyDtoHAsync (output '" + val.name + "')");
  }
  st.stream->synchronize("a run of '" + graph_.name + "'");
  return outputs;
}

void CudaProgram::launch(std::span<const uint64_t> addresses, CUstream stream) const {
  const CudaDriverApi& cu = cuda_driver();
  const CudaProgramState& st = *state_;
  const CUevent done = st.arena->done();
  if (cuda_graph_) {
    if (!std::equal(addresses.begin(), addresses.end(), graph_addresses_.begin(),
                    graph_addresses_.end())) {
      cuda_graph_->rebind(graph_, st, addresses);
      graph_addresses_.assign(addresses.begin(), addresses.end());
    }
    const bool bind_in = tables_->bind_in_runs(cuda_graph_->bound(), addresses);
    cuda_graph_->set_bind_in_enabled(bind_in);
    const bool record = st.arena->follow_last_run(stream, graph_.name);
    cuda_graph_->launch(stream);
    if (bind_in) tables_->pointed_at(addresses);
    if (record) check_cu(cu.cuEventRecord(done, stream), "cuEventRecord");
    st.arena->ran(record);
    return;
  }
  // Eager: the steps go on the program's stream (host steps synchronise it), after the caller's
  // stream reaches this point and the arena's last run is done, and the caller's stream waits
  // for them.
  const CUstream own = st.stream->get();
  if (stream != own) {
    check_cu(cu.cuEventRecord(st.ready, stream), "cuEventRecord");
    check_cu(cu.cuStreamWaitEvent(own, st.ready, 0), "cuStreamWaitEvent");
  }
  st.arena->follow_last_run(own, graph_.name);
  // The binding kernels run when they have a copy to make or a table entry to point (a program
  // with host steps binds nothing directly).
  const ProgramBindings& b = *st.bindings;
  const BoundAddresses bound = b.resolve(addresses, true);
  // As in graph mode (cuda_program_graph.h): a kernel that waits for its inputs inside may start
  // while our kernel before it finishes.
  bool after_kernel = false;
  const auto launch_step = [&](CUfunction fn, uint32_t grid, uint32_t block, uint32_t shared,
                               bool syncs, void** params, const std::string& what) {
    if (after_kernel && syncs && st.programmatic_edges) {
      launch_kernel_early(fn, grid, block, shared, own, params, what);
    } else {
      launch_kernel(fn, grid, block, shared, own, params, what);
    }
    after_kernel = true;
  };
  if (tables_->bind_in_runs(bound, addresses)) {
    BindInParams in = b.in_params(bound);
    auto args = in.kernel_params();
    launch_step(b.bind_in(), b.grid(), b.block(), 0, false, args.data(), "binding the inputs");
    tables_->pointed_at(addresses);
  }
  for (const CudaStep& s : st.steps) {
    switch (s.kind) {
      case CudaStep::Kind::kKernel: {
        const codegen::LaunchConfig& l = s.kernel.launch;
        if (l.grid == 0) break;
        CUdeviceptr table = st.tables.ptr() + s.table_index * sizeof(CUdeviceptr);
        void* params[] = {&table};
        launch_step(s.fn, l.grid, l.block, l.dynamic_shared_bytes, s.kernel.waits_for_prior_grids,
                    params, s.label);
        break;
      }
      case CudaStep::Kind::kGemm:
      case CudaStep::Kind::kConv:
      case CudaStep::Kind::kAttention:
        run_library_step(graph_, st, s, own, &bound);
        after_kernel = false;
        break;
      case CudaStep::Kind::kHost:
        run_host_step(graph_, st, s);
        after_kernel = false;
        break;
    }
  }
  if (bound.bind_out_needed) {
    BindOutParams out = b.out_params();
    auto args = out.kernel_params();
    launch_step(b.bind_out(), b.grid(), b.block(), 0, true, args.data(), "binding the outputs");
  }
  check_cu(cu.cuEventRecord(done, own), "cuEventRecord");
  st.arena->ran(true);
  if (stream != own) check_cu(cu.cuStreamWaitEvent(stream, done, 0), "cuStreamWaitEvent");
}

void CudaProgram::run_on_device(std::span<const uint64_t> addresses, CUstream_st* stream) const {
  std::scoped_lock lock(run_mutex_, state_->arena->turn());
  CudaContext::get();
  state_->bindings->check(graph_, addresses);
  launch(addresses, stream);
}

namespace {

void expect_no_host_steps(const Graph& g, const CudaProgramStats& stats) {
  if (stats.host_steps == 0) return;
  throw Error(ErrorCode::kUnsupported,
              "'" + g.name + "' cannot join a CUDA graph: " + std::to_string(stats.host_steps) +
                  " of its nodes run on the host (" +
                  (stats.fallback_reasons.empty() ? std::string("no device kernel")
                                                  : stats.fallback_reasons.front()) +
                  ")");
}

}  // namespace

ProgramSegment CudaProgram::populate_child(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                           size_t num_deps,
                                           std::span<const uint64_t> addresses) const {
  expect_no_host_steps(graph_, stats_);
  std::lock_guard lock(run_mutex_);
  CudaContext::get();
  tables_->share();  // that graph's gf_bind_in rewrites the tables whenever it runs
  GraphRollback rollback(graph);
  ProgramSegment seg = populate_program_child(graph, deps, num_deps, graph_, *state_, addresses);
  rollback.keep();
  return seg;
}

ProgramSegment CudaProgram::populate(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                     size_t num_deps, std::span<const uint64_t> addresses) const {
  expect_no_host_steps(graph_, stats_);
  std::lock_guard lock(run_mutex_);
  CudaContext::get();
  tables_->share();  // that graph's gf_bind_in rewrites the tables whenever it runs
  GraphRollback rollback(graph);
  ProgramSegment seg = populate_program(graph, deps, num_deps, graph_, *state_, addresses);
  rollback.keep();
  return seg;
}

ProgramSegment CudaProgram::populate_loop(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                          size_t num_deps, std::span<const uint64_t> addresses,
                                          const std::vector<std::pair<size_t, size_t>>& carry,
                                          size_t condition_output, uint32_t max_iterations) const {
  expect_no_host_steps(graph_, stats_);
  std::lock_guard lock(run_mutex_);
  CudaContext::get();
  tables_->share();  // that graph's gf_bind_in rewrites the tables whenever it runs
  GraphRollback rollback(graph);
  ProgramSegment seg = populate_program_loop(graph, deps, num_deps, graph_, *state_, addresses,
                                             LoopControl{carry, condition_output, max_iterations});
  rollback.keep();
  return seg;
}

ProgramSegment CudaProgram::populate_if(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                        size_t num_deps, std::span<const uint64_t> addresses,
                                        uint64_t condition) const {
  expect_no_host_steps(graph_, stats_);
  std::lock_guard lock(run_mutex_);
  CudaContext::get();
  tables_->share();  // that graph's gf_bind_in rewrites the tables whenever it runs
  GraphRollback rollback(graph);
  ProgramSegment seg =
      populate_program_if(graph, deps, num_deps, graph_, *state_, addresses, condition);
  rollback.keep();
  return seg;
}

void CudaProgram::update(CUgraphExec_st* exec, const ProgramSegment& segment,
                         std::span<const uint64_t> addresses) const {
  // A re-capture of a GEMM sets its descriptor's bias pointer: not while a run uses it.
  std::lock_guard lock(run_mutex_);
  CudaContext::get();
  state_->bindings->check(graph_, addresses);
  rebind_segment(exec, segment, graph_, *state_, addresses);
}

}  // namespace gf::cuda
