// emit_tensor_core_gemm_kernel: constants and the wgmma call for one spec ahead of a fixed
// kernel body (kernels/tensor_core_gemm.cuh).
#include "codegen/cuda/tensor_core_gemm.h"

#include <algorithm>
#include <climits>
#include <sstream>

#include "codegen/cuda/cuda_target.h"
#include "codegen/cuda/kernels/mma_fragments_cuh.h"
#include "codegen/cuda/kernels/tensor_core_gemm_cuh.h"
#include "codegen/cuda/kernels/wgmma_common_cuh.h"
#include "codegen/cuda/wgmma_call.h"
#include "graphfuse/error.h"

namespace gf::codegen {

namespace {

// A block's slot in the kMaps buffer: its maps of A and W, and the two addresses they hold
// (kernels/tensor_core_gemm.cuh).
constexpr int64_t kSlotBytes = 3 * kTensorCoreGemmMapBytes;

// Shared memory a block may take on sm_90 (227 KiB), less what the barriers take statically.
constexpr int64_t kMaxDynamicShared = 232448 - 1024;

struct Candidate {
  TensorCoreGemmTile tile;
  // Products per unit of time relative to the best tile, measured with many tiles per SM
  // (4096 x 3072 x 768 f16 on an H200, no epilogue: 33.1, 33.0, 37.9, 36.1, 47.7, 50.5 and 72.5
  // us in the order below). Narrow tiles read more bytes per product and keep the tensor cores
  // less busy.
  double efficiency;
  // The same with a bias and a GELU (erf or tanh; Relu has not been measured), whose cost
  // differs between tiles. bench_library_gemm on an H100 (2026-12-07, same shape, the ping-pong
  // epilogue kept behind its turn's handoff): tanh form 42.8, 41.3, 46.2, 43.8, 51.4, 59.4 and
  // 81.1 us in the order below, erf form 44.5, 42.9, 52.5, 47.8, 60.6, 66.3 and 82.9 (33.2 to
  // 71.4 without an epilogue); the mean of the two ratios to the first tile.
  double efficiency_with_gelu;
};
constexpr Candidate kCandidates[] = {
    {{2, 256, 3}, 1.0, 1.0},         {{2, 192, 4}, 1.0, 1.03},       {{2, 128, 5}, 0.87, 0.89},
    {{2, 128, 5, true}, 0.91, 0.95}, {{2, 64, 8, true}, 0.69, 0.78}, {{1, 128, 6}, 0.65, 0.70},
    {{1, 64, 8}, 0.46, 0.53}};

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

int64_t tiles_of(const TensorCoreGemmSpec& s, const TensorCoreGemmTile& t) {
  return ceil_div(s.m, 64 * t.consumers) * ceil_div(s.n, t.cols);
}

int64_t shared_bytes(const TensorCoreGemmTile& t) {
  // Each consumer stages the rows it multiplies: 64, or with ping-pong the whole tile.
  const int64_t staged_rows = t.ping_pong ? 64 * t.consumers : 64;
  return int64_t{t.stages} * (64 * t.consumers + t.cols) * 128 +
         int64_t{t.consumers} * staged_rows * t.cols * 2 +
         1024;  // room to align the stages to 1024 bytes
}

void check_tile(const TensorCoreGemmTile& t, const TensorCoreGemmSpec& s) {
  const bool form_ok = (t.consumers == 1 || t.consumers == 2) &&
                       (t.cols == 64 || t.cols == 128 || t.cols == 192 || t.cols == 256) &&
                       t.stages >= 3 && (!t.ping_pong || (t.consumers == 2 && t.cols <= 128));
  if (!form_ok || shared_bytes(t) > kMaxDynamicShared) {
    throw Error(ErrorCode::kInvalidArgument,
                "tensor-core GEMM " + s.to_string() + ": tile of " + std::to_string(t.consumers) +
                    " x 64 rows, " + std::to_string(t.cols) + " columns and " +
                    std::to_string(t.stages) + " stages" + (t.ping_pong ? " (ping-pong)" : "") +
                    " is not one the kernel takes (1 or 2 row groups; 64, 128, 192 or 256 columns; "
                    "ping-pong with 2 row groups and at most 128 columns; at least 3 stages; at "
                    "most " +
                    std::to_string(kMaxDynamicShared) + " bytes of shared memory)");
  }
}

void check_sm_count(int sm_count) {
  if (sm_count < 1)
    throw Error(ErrorCode::kInvalidArgument, "tensor-core GEMM: sm_count must be at least 1");
}

// The tile `spec` names, or the one chosen for it.
TensorCoreGemmTile tile_for(const TensorCoreGemmSpec& spec, int sm_count) {
  check_sm_count(sm_count);
  return spec.tile.consumers == 0 ? choose_tensor_core_gemm_tile(spec, sm_count) : spec.tile;
}

int64_t grid_of(const TensorCoreGemmSpec& spec, const TensorCoreGemmTile& t, int sm_count) {
  return std::min<int64_t>(tiles_of(spec, t), sm_count);
}

const char* activation_name(TensorCoreGemmActivation a) {
  switch (a) {
    case TensorCoreGemmActivation::kNone:
      return "";
    case TensorCoreGemmActivation::kRelu:
      return " +relu";
    case TensorCoreGemmActivation::kGeluErf:
      return " +gelu(erf)";
    case TensorCoreGemmActivation::kGeluTanh:
      return " +gelu(tanh)";
  }
  return "";
}

}  // namespace

std::string TensorCoreGemmSpec::to_string() const {
  std::ostringstream s;
  s << dtype_name(dtype) << " m=" << m << " n=" << n << " k=" << k << (has_bias ? " +bias" : "")
    << activation_name(activation);
  if (tile.consumers != 0)
    s << " (tile " << 64 * tile.consumers << "x" << tile.cols
      << (tile.ping_pong ? " ping-pong" : "") << ", " << tile.stages << " stages)";
  return s.str();
}

std::vector<TensorCoreGemmBuffer> tensor_core_gemm_buffers(const TensorCoreGemmSpec& spec) {
  std::vector<TensorCoreGemmBuffer> b{TensorCoreGemmBuffer::kA, TensorCoreGemmBuffer::kW};
  if (spec.has_bias) b.push_back(TensorCoreGemmBuffer::kBias);
  b.push_back(TensorCoreGemmBuffer::kC);
  b.push_back(TensorCoreGemmBuffer::kMaps);
  return b;
}

std::array<TensorCoreGemmMap, 2> tensor_core_gemm_maps(const TensorCoreGemmSpec& spec,
                                                       int sm_count) {
  const TensorCoreGemmTile t = tile_for(spec, sm_count);
  return {TensorCoreGemmMap{spec.m, spec.k, 64 * t.consumers},
          TensorCoreGemmMap{spec.n, spec.k, t.cols}};
}

int64_t tensor_core_gemm_maps_bytes(const TensorCoreGemmSpec& spec, int sm_count) {
  return 2 * kTensorCoreGemmMapBytes +
         grid_of(spec, tile_for(spec, sm_count), sm_count) * kSlotBytes;
}

std::string tensor_core_gemm_refusal(const TensorCoreGemmSpec& s, int compute_capability) {
  if (compute_capability != 90)
    return "the tensor-core GEMM runs on sm_90 only (wgmma), not sm_" +
           std::to_string(compute_capability);
  if (s.dtype != DType::kF16 && s.dtype != DType::kBF16)
    return "it takes f16 or bf16, not " + std::string(dtype_name(s.dtype));
  if (s.m < 1 || s.n < 1 || s.k < 1) return "it takes no empty product";
  if (s.k % 8 != 0)
    return "k must be a multiple of 8 (rows of 16 bytes), not " + std::to_string(s.k);
  if (s.m >= INT_MAX / 2 || s.n >= INT_MAX / 2 || s.k >= INT_MAX / 2)
    return "sizes must stay below 2^30";
  return "";
}

TensorCoreGemmTile choose_tensor_core_gemm_tile(const TensorCoreGemmSpec& spec, int sm_count) {
  check_sm_count(sm_count);
  const Candidate* best = nullptr;
  double best_cost = 0;
  const bool gelu = spec.activation == TensorCoreGemmActivation::kGeluErf ||
                    spec.activation == TensorCoreGemmActivation::kGeluTanh;
  for (const Candidate& c : kCandidates) {
    const double rounds = static_cast<double>(ceil_div(tiles_of(spec, c.tile), sm_count));
    const double efficiency = gelu ? c.efficiency_with_gelu : c.efficiency;
    const double cost = rounds * (64.0 * c.tile.consumers * c.tile.cols) / efficiency;
    if (best == nullptr || cost < best_cost) best = &c, best_cost = cost;
  }
  return best->tile;
}

std::vector<TensorCoreGemmTile> tensor_core_gemm_tiles() {
  std::vector<TensorCoreGemmTile> tiles;
  for (const Candidate& c : kCandidates) tiles.push_back(c.tile);
  return tiles;
}

CudaKernelSource emit_tensor_core_gemm_kernel(const TensorCoreGemmSpec& spec,
                                              const std::string& name, int sm_count,
                                              int compute_capability) {
  const std::string refusal = tensor_core_gemm_refusal(spec, compute_capability);
  if (!refusal.empty())
    throw Error(ErrorCode::kUnsupported, "tensor-core GEMM " + spec.to_string() + ": " + refusal);
  const TensorCoreGemmTile t = tile_for(spec, sm_count);
  check_tile(t, spec);
  const std::vector<TensorCoreGemmBuffer> buffers = tensor_core_gemm_buffers(spec);
  auto index_of = [&](TensorCoreGemmBuffer role) {
    const auto it = std::find(buffers.begin(), buffers.end(), role);
    return it == buffers.end() ? 0 : static_cast<int>(it - buffers.begin());
  };
  TensorCoreGemmSpec described = spec;
  described.tile = t;
  std::ostringstream src;
  src << "// tensor-core GEMM " << described.to_string() << "\n"
      << cuda_prelude() << "\n"
      << "#define GF_NAME " << name << "\n"
      << "typedef uint16_t gf_elem;\n"
      << "constexpr bool kBf16 = " << (spec.dtype == DType::kBF16 ? "true" : "false") << ";\n"
      << "constexpr int kM = " << spec.m << ", kN = " << spec.n << ", kK = " << spec.k << ";\n"
      << "constexpr int kConsumers = " << t.consumers << ", kTileN = " << t.cols
      << ", kStages = " << t.stages << ";\n"
      << "constexpr bool kPingPong = " << (t.ping_pong ? "true" : "false") << ";\n"
      << "constexpr bool kHasBias = " << (spec.has_bias ? "true" : "false") << ";\n"
      << "constexpr int kActivation = " << static_cast<int>(spec.activation) << ";\n"
      << "constexpr bool kRowsAligned = " << (spec.n % 8 == 0 ? "true" : "false") << ";\n"
      << "constexpr int kBufA = " << index_of(TensorCoreGemmBuffer::kA)
      << ", kBufW = " << index_of(TensorCoreGemmBuffer::kW)
      << ", kBufBias = " << index_of(TensorCoreGemmBuffer::kBias)
      << ", kBufC = " << index_of(TensorCoreGemmBuffer::kC)
      << ", kBufMaps = " << index_of(TensorCoreGemmBuffer::kMaps) << ";\n"
      << "constexpr int kMapBytes = " << kTensorCoreGemmMapBytes << ", kSlotBytes = " << kSlotBytes
      << ";\n"
      << embedded::mma_fragments_cuh << "\n"
      << embedded::wgmma_common_cuh << "\n"
      << wgmma_shared_operands_function("gf_wgmma", spec.dtype, t.cols)
      << embedded::tensor_core_gemm_cuh;
  CudaKernelSource out;
  out.name = name;
  out.source = src.str();
  out.schedule = CudaSchedule::kBlockPerRow;
  out.launch.grid = static_cast<uint32_t>(grid_of(spec, t, sm_count));
  out.launch.block = static_cast<uint32_t>((t.consumers + 1) * 128);
  out.launch.dynamic_shared_bytes = static_cast<uint32_t>(shared_bytes(t));
  out.alignment = 16;
  out.arch_specific = true;
  return out;
}

}  // namespace gf::codegen
