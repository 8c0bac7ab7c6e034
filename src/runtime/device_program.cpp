// DeviceProgram: a Session's CUDA program for one set of input shapes, on caller buffers.
#include "graphfuse/cuda_graph.h"

#include <array>

#include "graphfuse/error.h"
#include "runtime/session_programs.h"
#ifdef GF_HAVE_CUDA
#include "runtime/cuda/cuda_program.h"
#endif

namespace gf {

namespace {

[[noreturn, maybe_unused]] void no_cuda() {
  throw Error(ErrorCode::kDeviceError, "cannot run on cuda: graphfuse was built without CUDA");
}

// The inputs' then the outputs' addresses, into `out`.
void write_addresses(const DeviceBindings& b, uint64_t* out) {
  for (const void* p : b.inputs) *out++ = reinterpret_cast<uintptr_t>(p);
  for (void* p : b.outputs) *out++ = reinterpret_cast<uintptr_t>(p);
}

}  // namespace

DeviceProgram::DeviceProgram(const Session& session,
                             const std::vector<std::vector<int64_t>>& input_dims) {
  if (session.device() != Device::kCuda) {
    throw Error(ErrorCode::kUnsupported, "a DeviceProgram needs a session on device cuda");
  }
  const Graph& g = session.graph();
  if (input_dims.size() != g.inputs().size()) {
    throw Error(ErrorCode::kInvalidArgument, "the model takes " + std::to_string(g.inputs().size()) +
                                                 " inputs, got dims for " +
                                                 std::to_string(input_dims.size()));
  }
  std::vector<TensorType> types;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    types.push_back({g.value(g.inputs()[i]).type.dtype, Shape::from_static(input_dims[i])});
  }
  program_ = session.program_for_types(types);
  if (!program_) {
    throw Error(ErrorCode::kUnsupported,
                "'" + g.name + "': shapes depend on input values, so there is no program to run "
                               "on device buffers (Session::run interprets such graphs)");
  }
#ifdef GF_HAVE_CUDA
  cuda_ = program_->cuda.get();
  GF_ASSERT(cuda_ != nullptr, "a CUDA session compiled a program for another device");
  const Graph& compiled = cuda_->graph();
  for (ValueId v : compiled.inputs()) input_types_.push_back(compiled.value(v).type);
  for (ValueId v : compiled.outputs()) output_types_.push_back(compiled.value(v).type);
#else
  no_cuda();
#endif
}

SessionStats DeviceProgram::stats() const {
  SessionStats s;
  program_->record(s);
  return s;
}

std::vector<uint64_t> DeviceProgram::addresses(const DeviceBindings& b) const {
  if (b.inputs.size() != input_types_.size() || b.outputs.size() != output_types_.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "the program takes " + std::to_string(input_types_.size()) + " inputs and " +
                    std::to_string(output_types_.size()) + " outputs, got " +
                    std::to_string(b.inputs.size()) + " and " + std::to_string(b.outputs.size()));
  }
  std::vector<uint64_t> a(b.inputs.size() + b.outputs.size());
  write_addresses(b, a.data());
  return a;
}

#ifdef GF_HAVE_CUDA

void DeviceProgram::run(const DeviceBindings& bindings, CUstream_st* stream) const {
  // The common case without an allocation: a run is a few host calls.
  constexpr size_t kFew = 16;
  const size_t count = bindings.inputs.size() + bindings.outputs.size();
  if (count > kFew || bindings.inputs.size() != input_types_.size() ||
      bindings.outputs.size() != output_types_.size()) {
    cuda_->run_on_device(addresses(bindings), stream);  // or its error
    return;
  }
  std::array<uint64_t, kFew> a;
  write_addresses(bindings, a.data());
  cuda_->run_on_device(std::span<const uint64_t>(a.data(), count), stream);
}

namespace {

GraphSegment public_segment(const cuda::ProgramSegment& s) {
  return GraphSegment{s.entry, s.exit, s.node_count, s.binding_node, s.child, s.rebinding};
}

cuda::ProgramSegment internal_segment(const GraphSegment& s) {
  if (s.entry == nullptr || s.binding_node == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "update: the segment was not made by populate()");
  }
  return cuda::ProgramSegment{s.entry,
                              s.exit,
                              s.node_count,
                              s.binding_node,
                              s.child,
                              0,
                              std::static_pointer_cast<const cuda::SegmentRebinding>(s.rebinding)};
}

}  // namespace

GraphSegment DeviceProgram::populate(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                     size_t num_deps, const DeviceBindings& bindings) const {
  return public_segment(cuda_->populate(graph, deps, num_deps, addresses(bindings)));
}

GraphSegment DeviceProgram::populate_child(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                           size_t num_deps, const DeviceBindings& bindings) const {
  return public_segment(cuda_->populate_child(graph, deps, num_deps, addresses(bindings)));
}

GraphSegment DeviceProgram::populate_loop(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                          size_t num_deps, const DeviceBindings& bindings,
                                          const LoopSpec& loop) const {
  return public_segment(cuda_->populate_loop(graph, deps, num_deps, addresses(bindings), loop.carry,
                                             loop.condition_output, loop.max_iterations));
}

GraphSegment DeviceProgram::populate_if(CUgraph_st* graph, CUgraphNode_st* const* deps,
                                        size_t num_deps, const DeviceBindings& bindings,
                                        const bool* condition) const {
  return public_segment(cuda_->populate_if(graph, deps, num_deps, addresses(bindings),
                                           reinterpret_cast<uintptr_t>(condition)));
}

void DeviceProgram::update(CUgraphExec_st* exec, const GraphSegment& segment,
                           const DeviceBindings& bindings) const {
  cuda_->update(exec, internal_segment(segment), addresses(bindings));
}

#else

void DeviceProgram::run(const DeviceBindings&, CUstream_st*) const { no_cuda(); }
GraphSegment DeviceProgram::populate(CUgraph_st*, CUgraphNode_st* const*, size_t,
                                     const DeviceBindings&) const {
  no_cuda();
}
GraphSegment DeviceProgram::populate_child(CUgraph_st*, CUgraphNode_st* const*, size_t,
                                           const DeviceBindings&) const {
  no_cuda();
}
GraphSegment DeviceProgram::populate_loop(CUgraph_st*, CUgraphNode_st* const*, size_t,
                                          const DeviceBindings&, const LoopSpec&) const {
  no_cuda();
}
GraphSegment DeviceProgram::populate_if(CUgraph_st*, CUgraphNode_st* const*, size_t,
                                        const DeviceBindings&, const bool*) const {
  no_cuda();
}
void DeviceProgram::update(CUgraphExec_st*, const GraphSegment&, const DeviceBindings&) const {
  no_cuda();
}

#endif

}  // namespace gf
