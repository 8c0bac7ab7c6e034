#include "runtime/cuda/program_bindings.h"

#include <algorithm>

#include "codegen/cuda/binding_kernels.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_steps.h"

namespace gf::cuda {

namespace {

// gf_binding_copy of kernels/bindings.cuh.
struct BindingCopy {
  uint64_t arena = 0;
  uint64_t bytes = 0;
  int32_t binding = 0;
  int32_t unused = 0;
};
static_assert(sizeof(BindingCopy) == 24);

// gf_binding_patch of kernels/bindings.cuh.
struct BindingPatch {
  uint64_t arena = 0;
  uint64_t offset = 0;
  int32_t entry = 0;
  int32_t binding = 0;
};
static_assert(sizeof(BindingPatch) == 24);

// GF_BOUND_DIRECTLY of kernels/bindings.cuh: the flag on an address used in place (a bit no
// device address has; any other may be set in an unaligned one).
constexpr uint64_t kBoundDirectly = uint64_t{1} << 63;

// At most this many blocks per SM: the copies are bandwidth work.
constexpr uint64_t kBlocksPerSm = 4;

uint64_t value_bytes(const Value& v) {
  return static_cast<uint64_t>(v.type.shape.numel()) * dtype_size(v.type.dtype);
}

}  // namespace

std::string ProgramBindings::source_for(const Graph& g) {
  return codegen::binding_kernels_source(
      codegen::binding_capacity(g.inputs().size() + g.outputs().size()));
}

ProgramBindings::ProgramBindings(const Graph& g, const CudaProgramState& st,
                                 const std::string& cubin, int sm_count) {
  const size_t count = g.inputs().size() + g.outputs().size();
  capacity_ = codegen::binding_capacity(count);
  inputs_ = g.inputs().size();
  std::vector<ValueId> bound(g.inputs().begin(), g.inputs().end());
  bound.insert(bound.end(), g.outputs().begin(), g.outputs().end());
  find_direct_bindings(g, st, bound);

  std::vector<BindingCopy> copies;
  uint64_t largest = 0;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ValueId v = g.inputs()[i];
    const uint64_t bytes = value_bytes(g.value(v));
    const bool used = st.slot_of_value[static_cast<size_t>(v)] >= 0;
    defaults_.push_back(used ? st.device_ptr(g, v) : 0);
    bytes_.push_back(used ? bytes : 0);  // an input nothing reads needs no address
    if (!used || bytes == 0) continue;
    copies.push_back({defaults_.back(), bytes, static_cast<int32_t>(i), 0});
    largest = std::max(largest, bytes);
  }
  in_copies_ = static_cast<int>(copies.size());
  for (size_t j = 0; j < g.outputs().size(); ++j) {
    const ValueId v = g.outputs()[j];
    const uint64_t bytes = value_bytes(g.value(v));
    defaults_.push_back(bytes == 0 ? 0 : st.device_ptr(g, v));
    bytes_.push_back(bytes);
    if (bytes == 0) continue;
    copies.push_back(
        {defaults_.back(), bytes, static_cast<int32_t>(g.inputs().size() + j), 0});
    largest = std::max(largest, bytes);
  }
  out_copies_ = static_cast<int>(copies.size()) - in_copies_;

  // The kernel-table entries of the values that can be bound directly (views of them included).
  std::vector<BindingPatch> patches;
  for (const CudaStep& s : st.steps) {
    if (s.kind != CudaStep::Kind::kKernel) continue;
    for (size_t k = 0; k < s.buffers.size(); ++k) {
      const ValueId v = s.buffers[k];
      if (v == kStepPrivateBuffer) continue;
      const ValueId root = st.storage_of[static_cast<size_t>(v)];
      const int b = binding_of_root_[static_cast<size_t>(root)];
      if (b < 0) continue;
      const uint64_t at = st.device_ptr(g, v), start = st.device_ptr(g, root);
      GF_ASSERT(at >= start, "a view starts before the value it views");
      patches.push_back({at, at - start, static_cast<int32_t>(s.table_index + k), b});
    }
  }
  patch_count_ = static_cast<int>(patches.size());
  kernel_tables_ = st.tables.ptr();

  const std::string what = "the bindings of '" + g.name + "'";
  copies_ = st.device_memory->allocate(copies.size() * sizeof(BindingCopy), what);
  patches_ = st.device_memory->allocate(patches.size() * sizeof(BindingPatch), what);
  table_ = st.device_memory->allocate(count * sizeof(uint64_t), what);
  if (!copies.empty()) {
    check_cu(cuda_driver().cuMemcpyHtoD(copies_.ptr(), copies.data(), copies_.bytes()),
             "cuMemcpyHtoD (" + what + ")");
  }
  if (!patches.empty()) {
    check_cu(cuda_driver().cuMemcpyHtoD(patches_.ptr(), patches.data(), patches_.bytes()),
             "cuMemcpyHtoD (" + what + ")");
  }
  module_ = CudaModule::load(cubin, "bindings of '" + g.name + "'");
  bind_in_ = module_->function("gf_bind_in");
  bind_out_ = module_->function("gf_bind_out");
  const uint64_t per_block = uint64_t{16} * kBlock;
  grid_ = static_cast<uint32_t>(std::clamp<uint64_t>(
      (largest + per_block - 1) / per_block, 1, kBlocksPerSm * static_cast<uint64_t>(sm_count)));
}

void ProgramBindings::find_direct_bindings(const Graph& g, const CudaProgramState& st,
                                           const std::vector<ValueId>& bound) {
  const size_t values = g.num_values();
  auto root_of = [&](ValueId v) { return st.storage_of[static_cast<size_t>(v)]; };
  // How many bindings each storage serves, and the storage a step other than a kernel or a GEMM
  // touches (its address is fixed when the step is built or captured).
  std::vector<int> bindings_of(values, 0);
  for (ValueId v : bound) ++bindings_of[static_cast<size_t>(root_of(v))];
  // A step that writes into an input's storage would write the caller's buffer: such an input
  // is copied too.
  std::vector<bool> pinned(values, false), input(values, false);
  for (ValueId v : g.inputs()) input[static_cast<size_t>(v)] = true;
  bool host_steps = false;
  for (const CudaStep& s : st.steps) {
    host_steps = host_steps || s.kind == CudaStep::Kind::kHost;
    const bool repointable = s.kind == CudaStep::Kind::kKernel || s.kind == CudaStep::Kind::kGemm;
    const StepBuffers b = s.reads_and_writes(g);
    for (ValueId v : b.writes)
      if (v != kNoValue && input[static_cast<size_t>(root_of(v))])
        pinned[static_cast<size_t>(root_of(v))] = true;
    if (repointable) continue;
    for (const std::vector<ValueId>* list : {&b.reads, &b.writes})
      for (ValueId v : *list)
        if (v != kNoValue) pinned[static_cast<size_t>(root_of(v))] = true;
  }
  capable_.assign(bound.size(), false);
  binding_of_root_.assign(values, -1);
  for (size_t i = 0; i < bound.size(); ++i) {
    const ValueId v = bound[i];
    const size_t at = static_cast<size_t>(v);
    capable_[i] = !host_steps && root_of(v) == v && bindings_of[at] == 1 && !pinned[at] &&
                  !g.value(v).is_constant() && value_bytes(g.value(v)) > 0 &&
                  st.slot_of_value[at] >= 0;
    if (capable_[i]) binding_of_root_[at] = static_cast<int>(i);
  }
  for (size_t i = 0; i < st.steps.size(); ++i) {
    if (st.steps[i].kind != CudaStep::Kind::kGemm) continue;
    const StepBuffers b = st.steps[i].reads_and_writes(g);
    bool touches = false;
    for (const std::vector<ValueId>* list : {&b.reads, &b.writes})
      for (ValueId v : *list)
        touches =
            touches || (v != kNoValue && binding_of_root_[static_cast<size_t>(root_of(v))] >= 0);
    if (touches) rebound_steps_.push_back(i);
  }
}

int ProgramBindings::direct_capable() const {
  return static_cast<int>(std::count(capable_.begin(), capable_.end(), true));
}

BoundAddresses ProgramBindings::resolve(std::span<const uint64_t> addresses,
                                        bool allow_direct) const {
  BoundAddresses b;
  b.caller.assign(addresses.begin(), addresses.end());
  b.direct.assign(addresses.size(), false);
  if (allow_direct) {
    // The bound buffers by start; one that overlaps another is found beside it.
    std::vector<std::pair<uint64_t, size_t>> spans;
    for (size_t i = 0; i < addresses.size(); ++i)
      if (bytes_[i] > 0 && addresses[i] != 0) spans.push_back({addresses[i], i});
    std::sort(spans.begin(), spans.end());
    std::vector<bool> overlaps(addresses.size(), false);
    uint64_t furthest = 0;  // the end of the buffers before
    for (size_t k = 0; k < spans.size(); ++k) {
      const auto [start, i] = spans[k];
      const uint64_t end = start + bytes_[i];
      if (start < furthest) overlaps[i] = true;
      if (k + 1 < spans.size() && spans[k + 1].first < end) overlaps[i] = true;
      furthest = std::max(furthest, end);
    }
    for (size_t i = 0; i < addresses.size(); ++i) {
      const bool output = i >= inputs_;
      b.direct[i] = capable_[i] && addresses[i] % kDirectAlignment == 0 && !(output && overlaps[i]);
    }
  }
  b.bind_out_needed = false;
  bool copy_in = false;
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (b.direct[i] || bytes_[i] == 0 || addresses[i] == defaults_[i]) continue;
    (i >= inputs_ ? b.bind_out_needed : copy_in) = true;
  }
  b.copies = copy_in || b.bind_out_needed;
  b.bind_in_needed = b.copies || patch_count_ > 0;
  return b;
}

bool KernelTableState::bind_in_runs(const BoundAddresses& bound,
                                    std::span<const uint64_t> addresses) const {
  if (!bound.bind_in_needed) return false;
  if (bound.copies || shared_ || !known_) return true;
  return !std::equal(addresses.begin(), addresses.end(), addresses_.begin(), addresses_.end());
}

void KernelTableState::pointed_at(std::span<const uint64_t> addresses) {
  addresses_.assign(addresses.begin(), addresses.end());
  known_ = true;
}

CUdeviceptr ProgramBindings::address_of(const Graph& g, const CudaProgramState& st, ValueId v,
                                        const BoundAddresses* bound) const {
  const CUdeviceptr at = st.device_ptr(g, v);
  if (bound == nullptr) return at;
  const ValueId root = st.storage_of[static_cast<size_t>(v)];
  const int b = binding_of_root_[static_cast<size_t>(root)];
  if (b < 0 || !bound->direct[static_cast<size_t>(b)]) return at;
  return bound->caller[static_cast<size_t>(b)] + (at - st.device_ptr(g, root));
}

std::vector<uint64_t> ProgramBindings::library_addresses(const BoundAddresses& bound) const {
  std::vector<uint64_t> at = defaults_;
  for (size_t i = 0; i < at.size(); ++i)
    if (bound.direct[i]) at[i] = bound.caller[i];
  return at;
}

void ProgramBindings::check(const Graph& g, std::span<const uint64_t> addresses) const {
  if (addresses.size() != count()) {
    throw Error(ErrorCode::kInvalidArgument,
                "'" + g.name + "' takes " + std::to_string(g.inputs().size()) + " inputs and " +
                    std::to_string(g.outputs().size()) + " outputs, got " +
                    std::to_string(addresses.size()) + " device addresses");
  }
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i] != 0 || bytes_[i] == 0) continue;
    const bool input = i < g.inputs().size();
    const ValueId v = input ? g.inputs()[i] : g.outputs()[i - g.inputs().size()];
    throw Error(ErrorCode::kInvalidArgument,
                std::string(input ? "input" : "output") + " '" + g.value(v).name + "' (" +
                    g.value(v).type.to_string() + ") is bound to a null device address");
  }
}

BindInParams ProgramBindings::in_params(const BoundAddresses& bound) const {
  BindInParams p;
  p.addresses.assign(capacity_, 0);
  for (size_t i = 0; i < bound.caller.size(); ++i)
    p.addresses[i] = bound.caller[i] | (bound.direct[i] ? kBoundDirectly : 0);
  p.copies = copies_.ptr();
  p.copy_count = in_copies_;
  p.table = table_.ptr();
  p.binding_count = static_cast<int>(count());
  p.patches = patches_.ptr();
  p.patch_count = patch_count_;
  p.kernel_tables = kernel_tables_;
  return p;
}

BindOutParams ProgramBindings::out_params() const {
  BindOutParams p;
  p.copies = copies_.ptr() + static_cast<CUdeviceptr>(in_copies_) * sizeof(BindingCopy);
  p.copy_count = out_copies_;
  p.table = table_.ptr();
  return p;
}

}  // namespace gf::cuda
