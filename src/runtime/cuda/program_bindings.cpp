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

  const std::string what = "the bindings of '" + g.name + "'";
  copies_ = st.device_memory->allocate(copies.size() * sizeof(BindingCopy), what);
  table_ = st.device_memory->allocate(count * sizeof(uint64_t), what);
  if (!copies.empty()) {
    check_cu(cuda_driver().cuMemcpyHtoD(copies_.ptr(), copies.data(), copies_.bytes()),
             "cuMemcpyHtoD (" + what + ")");
  }
  module_ = CudaModule::load(cubin, "bindings of '" + g.name + "'");
  bind_in_ = module_->function("gf_bind_in");
  bind_out_ = module_->function("gf_bind_out");
  const uint64_t per_block = uint64_t{16} * kBlock;
  grid_ = static_cast<uint32_t>(std::clamp<uint64_t>(
      (largest + per_block - 1) / per_block, 1, kBlocksPerSm * static_cast<uint64_t>(sm_count)));
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

BindInParams ProgramBindings::in_params(std::span<const uint64_t> addresses) const {
  BindInParams p;
  p.addresses.assign(capacity_, 0);
  std::copy(addresses.begin(), addresses.end(), p.addresses.begin());
  p.copies = copies_.ptr();
  p.copy_count = in_copies_;
  p.table = table_.ptr();
  p.binding_count = static_cast<int>(count());
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
