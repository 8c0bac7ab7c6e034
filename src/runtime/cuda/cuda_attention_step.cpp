#include "runtime/cuda/cuda_attention_step.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "codegen/common/cache_files.h"
#include "codegen/common/hash.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/device_timing.h"
#include "runtime/cuda/timed_choices.h"

namespace gf::cuda {

namespace {

// The call as cuDNN sees it; nullopt for what it never takes (a mask, a softcap, another element
// type, a value head size unlike the key's, an operand not 16-byte aligned in its buffer).
std::optional<SdpaDims> sdpa_dims(const codegen::AttentionNode& a) {
  if ((a.dtype != DType::kF16 && a.dtype != DType::kBF16) || a.has_mask || a.softcap > 0 ||
      a.v_dim != a.head_dim) {
    return std::nullopt;
  }
  for (const codegen::HeadStrides* s : {&a.q, &a.k, &a.v, &a.y})
    if (s->offset % 8 != 0) return std::nullopt;
  SdpaDims d;
  d.batch = a.batch, d.q_heads = a.q_heads, d.kv_heads = a.kv_heads;
  d.q_len = a.q_len, d.kv_len = a.kv_len, d.head_dim = a.head_dim;
  const auto strides = [](const codegen::HeadStrides& s) {
    return std::array<int64_t, 4>{s.batch, s.head, s.pos, 1};
  };
  d.q_strides = strides(a.q), d.k_strides = strides(a.k), d.v_strides = strides(a.v),
  d.o_strides = strides(a.y);
  d.dtype = a.dtype;
  d.causal = a.causal;
  d.scale = static_cast<float>(a.scale);
  return d;
}

// Whether the node is large enough for kAuto to time cuDNN against ours (a first cuDNN plan of
// a shape compiles its kernel, some hundreds of milliseconds).
bool worth_timing(const SdpaDims& d) {
  const double flops = 4.0 * static_cast<double>(d.batch * d.q_heads * d.q_len) *
                       static_cast<double>(d.kv_len * d.head_dim) * (d.causal ? 0.5 : 1.0);
  const double kv_bytes = 2.0 * static_cast<double>(d.batch * d.kv_heads * d.kv_len * d.head_dim) *
                          static_cast<double>(dtype_size(d.dtype));
  return flops >= kAttentionTimedMinFlops || kv_bytes >= kAttentionTimedMinKvBytes;
}

std::string key_of(const SdpaDims& d, int device_cc) {
  std::string k =
      d.to_string() + " cc" + std::to_string(device_cc) + " scale " + std::to_string(d.scale);
  for (const auto* s : {&d.q_strides, &d.k_strides, &d.v_strides, &d.o_strides})
    for (int64_t x : *s) k += " " + std::to_string(x);
  return k;
}

struct Timing {
  double generated_us = 0, cudnn_us = 0;
};

// Both paths on scratch buffers the size of the step's (values are irrelevant to the time).
Timing time_both(const Graph& g, const CudaStep& generated, const CudnnSdpa& sdpa) {
  const CudaDriverApi& cu = cuda_driver();
  std::vector<std::unique_ptr<DeviceBuffer>> scratch;
  std::vector<CUdeviceptr> table;
  for (ValueId v : generated.buffers) {
    const uint64_t bytes = v == kStepPrivateBuffer
                               ? generated.private_bytes
                               : static_cast<uint64_t>(g.value(v).type.shape.numel()) *
                                     dtype_size(g.value(v).type.dtype);
    scratch.push_back(std::make_unique<DeviceBuffer>(std::max<uint64_t>(bytes, 256),
                                                     "scratch for timing attention"));
    // Zero: 16-bit zeros are valid operands, and a private buffer must start zeroed.
    check_cu(cu.cuMemsetD8(scratch.back()->ptr(), 0, scratch.back()->bytes()),
             "cuMemsetD8 (timing attention)");
    table.push_back(scratch.back()->ptr());
  }
  DeviceBuffer table_buffer(table.size() * sizeof(CUdeviceptr), "scratch for timing attention");
  check_cu(cu.cuMemcpyHtoD(table_buffer.ptr(), table.data(), table_buffer.bytes()),
           "cuMemcpyHtoD (timing attention)");
  const codegen::CubinPtr cubin =
      process_nvrtc().compile(generated.kernel.source, CudaContext::get().compute_capability(),
                              codegen::arch_target_of(generated.kernel));
  const std::unique_ptr<CudaModule> module = CudaModule::load(*cubin, generated.kernel.name);
  const CUfunction fn = module->function(generated.kernel.name);
  const codegen::LaunchConfig& l = generated.kernel.launch;
  allow_dynamic_shared_memory(fn, l.dynamic_shared_bytes, generated.label);
  allow_cluster_blocks(fn, l.cluster_blocks, generated.label);
  CUdeviceptr table_ptr = table_buffer.ptr();
  void* params[] = {&table_ptr};
  Timing t;
  t.generated_us = median_device_us(
      [&] {
        check_cu(cu.cuLaunchKernel(fn, l.grid, 1, 1, l.block, 1, 1, l.dynamic_shared_bytes, nullptr,
                                   params, nullptr),
                 "cuLaunchKernel (timing " + generated.label + ")");
      },
      "timing " + generated.label);
  DeviceBuffer workspace(std::max<size_t>(sdpa.workspace_bytes(), 256),
                         "scratch for timing attention");
  const auto at = [&](size_t i) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(table[i]));
  };
  const size_t y = generated.buffers.size() - 1;
  const SdpaBuffers io{at(0), at(1), at(2), at(y),
                       reinterpret_cast<void*>(static_cast<uintptr_t>(workspace.ptr()))};
  t.cudnn_us = median_device_us([&] { sdpa.run(io, nullptr); }, "timing cuDNN's attention");
  return t;
}

// kAuto's choices by call shape, for the process, and on disk (timed_choices.h; the key names
// the call, our kernel's source, the device, NVRTC's and cuDNN's versions).
std::mutex choice_mutex;
std::map<std::string, Timing> timed_choices;

std::optional<Timing> stored_timing(const std::string& key) {
  const std::optional<std::string> text = stored_choice("attention", key);
  Timing t;
  if (!text || std::sscanf(text->c_str(), "%lf %lf", &t.generated_us, &t.cudnn_us) != 2)
    return std::nullopt;
  return t;
}

void store_timing(const std::string& key, const Timing& t) {
  char value[64];
  std::snprintf(value, sizeof value, "%.3f %.3f", t.generated_us, t.cudnn_us);
  store_choice("attention", key, value);
}

}  // namespace

std::optional<CudaStep> cudnn_attention_step(const Graph& g, NodeId id,
                                             const codegen::AttentionNode& a,
                                             const CudaStep& generated, AttentionPath path,
                                             CudaLibraries& lib) {
  const Node& node = g.node(id);
  if (path == AttentionPath::kGenerated || lib.cudnn_refused || !cudnn_available())
    return std::nullopt;
  const std::optional<SdpaDims> dims = sdpa_dims(a);
  if (!dims || generated.buffers.size() < 4) return std::nullopt;
  if (path == AttentionPath::kAuto && !worth_timing(*dims)) return std::nullopt;
  // Under kAuto only: the key hashes our kernel's source.
  std::string key;
  std::optional<Timing> known;
  if (path == AttentionPath::kAuto) {
    const int cc = CudaContext::get().compute_capability();
    key = key_of(*dims, cc) + " cudnn " + std::to_string(cudnn_runtime_version()) + " kernel " +
          codegen::hex64(process_nvrtc().cache_key(generated.kernel.source, cc));
    std::lock_guard lock(choice_mutex);
    if (const auto it = timed_choices.find(key); it != timed_choices.end()) known = it->second;
  }
  if (path == AttentionPath::kAuto && !known) {
    known = stored_timing(key);
    if (known) {
      std::lock_guard lock(choice_mutex);
      timed_choices.emplace(key, *known);
    }
  }
  if (known && known->cudnn_us >= known->generated_us) return std::nullopt;

  CudaStep s;
  try {
    if (!lib.cudnn) lib.cudnn = std::make_unique<CudnnHandle>();
    s.sdpa = std::make_unique<CudnnSdpa>(*lib.cudnn, *dims, describe_node(g, node));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported && e.code() != ErrorCode::kDeviceError) throw;
    if (!lib.cudnn) lib.cudnn_refused = true;  // no cuDNN here at all: ask no more
    return std::nullopt;
  }
  std::string why = "cuDNN chosen by option";
  if (path == AttentionPath::kAuto) {
    if (!known) {
      known = time_both(g, generated, *s.sdpa);
      store_timing(key, *known);
      std::lock_guard lock(choice_mutex);
      timed_choices.emplace(key, *known);
    }
    if (known->cudnn_us >= known->generated_us) return std::nullopt;
    char buf[96];
    std::snprintf(buf, sizeof buf, "timed %.1f us against our kernel's %.1f", known->cudnn_us,
                  known->generated_us);
    why = buf;
  }
  s.kind = CudaStep::Kind::kAttention;
  s.node = id;
  s.buffers = {generated.buffers[0], generated.buffers[1], generated.buffers[2],
               generated.buffers.back()};
  s.is_output = {false, false, false, true};
  s.sdpa_offsets = {a.q.offset, a.k.offset, a.v.offset, a.y.offset};
  s.label =
      "cuDNN fused attention (" + s.sdpa->engine() + "; " + why + ") for " + describe_node(g, node);
  return s;
}

}  // namespace gf::cuda
