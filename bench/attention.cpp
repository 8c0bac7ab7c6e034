// bench_attention: our attention kernels on the shapes of the fused-attention targets, in
// TFLOP/s. Each case is one Attention node (Q, K, V as [B, H, S, D]) emitted the production way
// (emit_anchor_kernel -> NVRTC) for this device, run on device buffers of random values; times
// are CUDA events around each launch, the median of --iters. FLOPs: 4 * B * H * Sq * Skv * D,
// halved under is_causal (the convention of FlashAttention's and PyTorch's figures). Decode rows
// (one query token per sequence against a 4k-32k key/value cache, Llama-style GQA) print the
// bandwidth of reading K and V once and its share of a device-to-device copy measured in the
// same run; they are also timed queued (launches back to back between two events, so the host's
// launch cost and the event's own latency are hidden), each launch on another copy of Q, K, V
// and Y, the copies together larger than L2, so that no launch finds its cache in L2, and set
// beside a kernel that only reads the same K and V bytes, timed the same way ("read us",
// "%read": its time over ours), the floor any decode kernel of that size meets.
// Each shape also runs through cuDNN's fused attention (runtime/cuda/cudnn_sdpa.h, kernel
// "cudnn", where this build has cuDNN and cuDNN takes the shape): cudnnBackendExecute timed the
// same way, and, where the engine supports cuDNN's native CUDA graph API, one launch of the graph
// it populated.
// bench/attention_vs_torch.py runs PyTorch's SDPA backends on the same shapes and prints both.
//
//   bench_attention [--iters N] [--quick] [--row-kernel] [--mma-sync] [--row-groups 1,2]
//                   [--key-tiles 64,128] [--decode-only] [--decode-clusters 8,16] [--json FILE]
//
// --row-kernel also times the one-warp-per-row kernel (tensor cores off) where S <= 2048;
// --mma-sync the mma.sync tensor-core kernel where the wgmma kernel (sm_90) took the shape;
// --row-groups the mma.sync kernel with each of these 16-row groups per warp (default: the one
// it chooses); --key-tiles the wgmma kernel with each of these keys per K/V tile.
// Exit status: 0 after the table; 2 where there is no CUDA device (the reason on stderr).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/anchor_kernels.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "event_timing.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "graphfuse/graph.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/cudnn_sdpa.h"
#include "runtime/cuda/device_memory.h"

namespace gf {
namespace {

struct Shape4 {
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim;
  bool causal;
  DType dtype;
};

struct Result {
  Shape4 shape;
  // "mma", "mma/1", "mma/2" (16-row groups per warp, when forced), "split" (decode; "split/N"
  // with N blocks per cluster, when forced), "row", or
  // "cudnn" (cuDNN's fused attention through runtime/cuda/cudnn_sdpa.h)
  std::string kernel;
  double us = 0, tflops = 0;
  std::string engine;   // cudnn: the engine cuDNN's heuristics gave
  double graph_us = 0;  // cudnn with a native-graph engine: one launch of the populated graph
  double kv_gbps = 0;  // K and V bytes over the time
  double queued_us = 0;  // decode: per launch, queued back to back over copies (see above)
  double queued_kv_gbps = 0;
  double read_us = 0;  // decode: Bench::read_kv_us of the shape, the same for every kernel
};

// Decode rows are timed queued over enough copies of their buffers to exceed this: more than
// the H200's L2 (50 MB), so each launch reads its cache from memory.
constexpr double kColdBytes = 160e6;
constexpr int kMaxCopies = 64;

using bench::time_us;

// TFLOP/s (4 B H Sq Skv D, halved when causal) and the K and V bytes over the time.
void set_rates(Result& r) {
  const Shape4& s = r.shape;
  const double flops = 4.0 * static_cast<double>(s.batch * s.heads * s.q_len) *
                       static_cast<double>(s.kv_len * s.head_dim) * (s.causal ? 0.5 : 1.0);
  const double kv_bytes =
      2.0 * static_cast<double>(s.batch * s.kv_heads * s.kv_len * s.head_dim) * 2.0;
  r.tflops = flops / (r.us * 1e-6) * 1e-12;
  r.kv_gbps = kv_bytes / (r.us * 1e-6) * 1e-9;
  if (r.queued_us > 0) r.queued_kv_gbps = kv_bytes / (r.queued_us * 1e-6) * 1e-9;
}

// How many copies of a decode row's Q, K, V and Y the queued timing rotates over.
int copies_for(const Shape4& s) {
  const double bytes = 2.0 * static_cast<double>(s.batch * s.head_dim) *
                       static_cast<double>(2 * s.kv_heads * s.kv_len + 2 * s.heads * s.q_len);
  return std::clamp(static_cast<int>(std::ceil(kColdBytes / bytes)), 2, kMaxCopies);
}

// Copies 1.. of buffers[0..3] (Q, K, V, Y), device to device on the null stream (the launches
// that read them come after on it); buffers[4 * c + i] is copy c.
void add_copies(std::vector<std::unique_ptr<DeviceBuffer>>& buffers, int copies) {
  for (int c = 1; c < copies; ++c) {
    for (int i = 0; i < 4; ++i) {
      buffers.push_back(std::make_unique<DeviceBuffer>(buffers[i]->bytes()));
      GF_CU(cuda_driver().cuMemcpyDtoDAsync(buffers.back()->ptr(), buffers[i]->ptr(),
                                            buffers[i]->bytes(), nullptr));
    }
  }
}

Graph attention_graph(const Shape4& s) {
  Graph g;
  const auto input = [&](const char* name, int64_t heads, int64_t len) {
    return g.add_input(name, TensorType{s.dtype, Shape::from_static({s.batch, heads, len, s.head_dim})});
  };
  const ValueId q = input("q", s.heads, s.q_len);
  const ValueId k = input("k", s.kv_heads, s.kv_len);
  const ValueId v = input("v", s.kv_heads, s.kv_len);
  Attributes attrs;
  if (s.causal) attrs.set("is_causal", int64_t{1});
  const NodeId n = g.add_node(Op::kAttention, "attention", {q, k, v}, {"y"}, std::move(attrs));
  g.add_output(g.node(n).outputs[0]);
  infer_shapes(g);
  return g;
}

// Random 16-bit values in [-1, 1] (f16 or bf16 bits), reproducible.
std::vector<uint16_t> random_bits(size_t n, DType t, uint32_t seed) {
  std::vector<uint16_t> out(n);
  uint32_t h = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; ++i) {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;
    const float x = static_cast<float>(h % 20001) / 10000.0f - 1.0f;
    out[i] = t == DType::kBF16 ? BFloat16(x).bits : Half(x).bits;
  }
  return out;
}

// Which kernel a row times (CudaEmitOptions' attention fields).
struct Variant {
  bool tensor_cores = true;
  bool wgmma = true;
  int row_groups = 0;  // nonzero: the mma.sync kernel with that many 16-row groups per warp
  int key_tile = 0;    // the wgmma kernel's keys per tile; 0: its choice
  int clusters = 0;    // blocks per cluster of the decode kernel; 0: its choice
};

// Reads `pieces` 16-byte pieces of k and of v; the xor of what it read decides a store that
// never happens in practice, so that no load can be dropped.
constexpr const char* kReadKvSource = R"(
extern "C" __global__ void __launch_bounds__(256)
gf_bench_read_kv(const uint4* k, const uint4* v, long long pieces, unsigned* sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < pieces; i += 4 * stride) {
    uint4 a[4], b[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) a[u] = k[i + u * stride], b[u] = v[i + u * stride];
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= a[u].x ^ a[u].y ^ a[u].z ^ a[u].w ^ b[u].x ^ b[u].y ^ b[u].z ^ b[u].w;
  }
  for (; i < pieces; i += stride) {
    const uint4 a = k[i], b = v[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
  }
  if (acc == 0x9e3779b9u) sink[blockIdx.x] = acc;
}
)";

class Bench {
 public:
  Bench(const CudaDeviceInfo& info, int iters)
      : info_(info), iters_(iters), context_(info.index), compiler_(codegen::nvrtc_options_from_environment()) {}

  Result run(const Shape4& s, const Variant& variant, bool decode = false) {
    const Graph g = attention_graph(s);
    codegen::CudaEmitOptions options;
    options.sm_count = info_.multiprocessors;
    options.compute_capability = info_.compute_major * 10 + info_.compute_minor;
    options.tensor_core_attention = variant.tensor_cores;
    options.wgmma_attention = variant.wgmma && variant.row_groups == 0;
    options.attention_row_groups = variant.row_groups;
    options.attention_key_tile = variant.key_tile;
    options.split_kv_attention = variant.tensor_cores;  // the decode rows: split across the keys
    options.decode_cluster_blocks = variant.clusters;
    const codegen::CudaKernelSource src = codegen::emit_anchor_kernel(g.node(0), g, "bench_attention", options);
    const codegen::CubinPtr cubin =
        compiler_.compile(src.source, options.compute_capability, codegen::arch_target_of(src));
    const std::unique_ptr<CudaModule> module = CudaModule::load(*cubin, src.name);
    const CUfunction fn = module->function(src.name);
    allow_dynamic_shared_memory(fn, src.launch.dynamic_shared_bytes, src.name);
    allow_cluster_blocks(fn, src.launch.cluster_blocks, src.name);

    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    std::vector<CUdeviceptr> table;
    const size_t q_elems = static_cast<size_t>(s.batch * s.heads * s.q_len * s.head_dim);
    const size_t kv_elems = static_cast<size_t>(s.batch * s.kv_heads * s.kv_len * s.head_dim);
    uint32_t seed = 1;
    for (size_t n : {q_elems, kv_elems, kv_elems, q_elems}) {
      buffers.push_back(std::make_unique<DeviceBuffer>(n * 2));
      table.push_back(buffers.back()->ptr());
      const std::vector<uint16_t> bits = random_bits(n, s.dtype, seed++);
      GF_CU(cuda_driver().cuMemcpyHtoD(table.back(), bits.data(), n * 2));
    }
    DeviceBuffer table_buffer(table.size() * sizeof(CUdeviceptr));
    GF_CU(cuda_driver().cuMemcpyHtoD(table_buffer.ptr(), table.data(), table_buffer.bytes()));
    CUdeviceptr table_ptr = table_buffer.ptr();
    void* params[] = {&table_ptr};
    Result r;
    r.shape = s;
    const int clusters = variant.clusters, row_groups = variant.row_groups;
    r.kernel = src.source.find("split across the keys") != std::string::npos
                   ? clusters > 0 ? "split/" + std::to_string(clusters) : "split"
               : src.source.find("wgmma tensor cores") != std::string::npos
                   ? variant.key_tile > 0 ? "wgmma/" + std::to_string(variant.key_tile) : "wgmma"
               : src.source.find("tensor cores") == std::string::npos ? "row"
               : row_groups > 0 ? "mma/" + std::to_string(row_groups)
                                : "mma";
    r.us = time_us(iters_, [&] {
      GF_CU(cuda_driver().cuLaunchKernel(fn, src.launch.grid, 1, 1, src.launch.block, 1, 1,
                                         src.launch.dynamic_shared_bytes, nullptr, params, nullptr));
    });
    if (decode) {
      const int copies = copies_for(s);
      add_copies(buffers, copies);
      std::vector<CUdeviceptr> tables;
      for (size_t i = 0; i < buffers.size(); ++i) tables.push_back(buffers[i]->ptr());
      DeviceBuffer all_tables(tables.size() * sizeof(CUdeviceptr));
      GF_CU(cuda_driver().cuMemcpyHtoD(all_tables.ptr(), tables.data(), all_tables.bytes()));
      int next = 0;
      r.queued_us = bench::time_us_batched(iters_, copies, [&] {
        CUdeviceptr at = all_tables.ptr() +
                         static_cast<CUdeviceptr>(4 * sizeof(CUdeviceptr) * (next++ % copies));
        void* rotated[] = {&at};
        GF_CU(cuda_driver().cuLaunchKernel(fn, src.launch.grid, 1, 1, src.launch.block, 1, 1,
                                           src.launch.dynamic_shared_bytes, nullptr, rotated,
                                           nullptr));
      });
    }
    GF_CU(cuda_driver().cuCtxSynchronize());
    set_rates(r);
    return r;
  }

  // cuDNN's fused attention on the same shape; nullopt-like empty kernel name where cuDNN
  // refuses it (the reason on stderr).
  Result run_cudnn(const Shape4& s, bool decode = false) {
    Result r;
    r.shape = s;
    if (!cuda::cudnn_available()) return r;
    if (!cudnn_) cudnn_ = std::make_unique<cuda::CudnnHandle>();
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    std::unique_ptr<cuda::CudnnSdpa> sdpa;
    try {
      sdpa = std::make_unique<cuda::CudnnSdpa>(
          *cudnn_,
          cuda::SdpaDims::contiguous(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                                     s.dtype, s.causal, scale),
          "bench");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported) throw;
      std::fprintf(stderr, "bench_attention: %s\n", e.what());
      return r;
    }
    const size_t q_elems = static_cast<size_t>(s.batch * s.heads * s.q_len * s.head_dim);
    const size_t kv_elems = static_cast<size_t>(s.batch * s.kv_heads * s.kv_len * s.head_dim);
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    uint32_t seed = 1;
    for (size_t n : {q_elems, kv_elems, kv_elems, q_elems}) {
      buffers.push_back(std::make_unique<DeviceBuffer>(n * 2));
      const std::vector<uint16_t> bits = random_bits(n, s.dtype, seed++);
      GF_CU(cuda_driver().cuMemcpyHtoD(buffers.back()->ptr(), bits.data(), n * 2));
    }
    DeviceBuffer workspace(std::max<size_t>(sdpa->workspace_bytes(), 1));
    const auto at = [](const DeviceBuffer& b) { return reinterpret_cast<void*>(b.ptr()); };
    const cuda::SdpaBuffers io{at(*buffers[0]), at(*buffers[1]), at(*buffers[2]), at(*buffers[3]),
                               at(workspace)};
    r.kernel = "cudnn";
    r.engine = sdpa->engine();
    r.us = time_us(iters_, [&] { sdpa->run(io, nullptr); });
    if (decode) {
      const int copies = copies_for(s);
      add_copies(buffers, copies);
      int next = 0;
      r.queued_us = bench::time_us_batched(iters_, copies, [&] {
        const int c = next++ % copies;
        const auto copy = [&](int i) { return at(*buffers[4 * c + i]); };
        sdpa->run({copy(0), copy(1), copy(2), copy(3), at(workspace)}, nullptr);
      });
    }
    if (sdpa->native_graph()) {
      CUgraph graph = nullptr;
      GF_CU(cuda_driver().cuGraphCreate(&graph, 0));
      CUgraphExec exec = nullptr;
      try {
        sdpa->populate(io, graph);
        GF_CU(cuda_driver().cuGraphInstantiateWithFlags(&exec, graph, 0));
        r.graph_us = time_us(iters_, [&] { GF_CU(cuda_driver().cuGraphLaunch(exec, nullptr)); });
      } catch (...) {
        if (exec) cuda_driver().cuGraphExecDestroy(exec);
        cuda_driver().cuGraphDestroy(graph);
        throw;
      }
      GF_CU(cuda_driver().cuGraphExecDestroy(exec));
      GF_CU(cuda_driver().cuGraphDestroy(graph));
    }
    GF_CU(cuda_driver().cuCtxSynchronize());
    set_rates(r);
    return r;
  }

  // The floor of a decode row: a kernel that only reads K and V (16-byte loads, four in flight
  // per thread and tensor, grid-stride), timed queued over copies as the rows are. The fastest
  // of several grids, so that a poor launch shape of ours does not flatter the row.
  double read_kv_us(const Shape4& s) {
    if (!read_kv_) {
      const int cc = info_.compute_major * 10 + info_.compute_minor;
      const codegen::CubinPtr cubin =
          compiler_.compile(kReadKvSource, cc, codegen::ArchTarget::kPortable);
      read_kv_ = CudaModule::load(*cubin, "bench_read_kv");
    }
    const CUfunction fn = read_kv_->function("gf_bench_read_kv");
    const size_t kv_bytes = static_cast<size_t>(s.batch * s.kv_heads * s.kv_len * s.head_dim) * 2;
    const int copies = copies_for(s);
    std::vector<std::unique_ptr<DeviceBuffer>> kv;
    for (int i = 0; i < 2 * copies; ++i) {
      kv.push_back(std::make_unique<DeviceBuffer>(kv_bytes));
      GF_CU(
          cuda_driver().cuMemsetD8(kv.back()->ptr(), static_cast<unsigned char>(i + 1), kv_bytes));
    }
    const int max_blocks = 16 * info_.multiprocessors;
    DeviceBuffer sink(static_cast<size_t>(max_blocks) * sizeof(uint32_t));
    long long pieces = static_cast<long long>(kv_bytes / 16);
    CUdeviceptr out = sink.ptr();
    double best = 0;
    for (int per_sm : {2, 4, 8, 16}) {
      const unsigned blocks = static_cast<unsigned>(per_sm * info_.multiprocessors);
      int next = 0;
      const double us = bench::time_us_batched(iters_, copies, [&] {
        const int c = next++ % copies;
        CUdeviceptr k = kv[2 * c]->ptr(), v = kv[2 * c + 1]->ptr();
        void* args[] = {&k, &v, &pieces, &out};
        GF_CU(cuda_driver().cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
      });
      if (best == 0 || us < best) best = us;
    }
    GF_CU(cuda_driver().cuCtxSynchronize());
    return best;
  }

  // cuMemcpyDtoDAsync of 1 GiB: GB/s counting the read and the write.
  double copy_gbps() {
    const size_t bytes = size_t{1} << 30;
    DeviceBuffer a(bytes), b(bytes);
    const double us = time_us(iters_, [&] {
      GF_CU(cuda_driver().cuMemcpyDtoDAsync(b.ptr(), a.ptr(), bytes, nullptr));
    });
    return 2.0 * static_cast<double>(bytes) / (us * 1e-6) * 1e-9;
  }

 private:
  CudaDeviceInfo info_;
  int iters_;
  PrimaryContext context_;
  codegen::NvrtcCompiler compiler_;
  std::unique_ptr<CudaModule> read_kv_;       // read_kv_us's kernel, compiled on first use
  std::unique_ptr<cuda::CudnnHandle> cudnn_;  // made on first use, while the context is current
};

// Prefill: 16k tokens per shape (B * S), 2048-wide (H * D), S from 512 to 16k; the issue's
// anchor shape B=4 H=16 S=4096 D=128 is among them.
std::vector<Shape4> prefill_shapes(bool quick) {
  std::vector<Shape4> out;
  const std::vector<int64_t> lens = quick ? std::vector<int64_t>{1024} : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  for (int64_t d : {64, 128}) {
    for (bool causal : {false, true}) {
      for (int64_t s : lens) {
        const int64_t heads = 2048 / d;
        out.push_back({16384 / s, heads, heads, s, s, d, causal, DType::kBF16});
      }
    }
  }
  return out;
}

// Decode: one query token per sequence, 32 query heads over 8 key/value heads of 128 (a Llama-3
// 8B layer), batch 1-16, caches of 4k-32k positions.
std::vector<Shape4> decode_shapes(bool quick) {
  std::vector<Shape4> out;
  for (int64_t batch : quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 4, 16}) {
    for (int64_t len : quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{4096, 32768}) {
      out.push_back({batch, 32, 8, 1, len, 128, false, DType::kBF16});
    }
  }
  return out;
}

int bench_main(int argc, char** argv) {
  int iters = 20;
  bool quick = false, row_kernel = false, decode_only = false, mma_sync = false;
  std::vector<int> row_groups, decode_clusters, key_tiles;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--row-kernel") {
      row_kernel = true;
    } else if (a == "--mma-sync") {
      mma_sync = true;
    } else if ((a == "--row-groups" || a == "--decode-clusters" || a == "--key-tiles") &&
               i + 1 < argc) {
      std::vector<int>& list = a == "--row-groups"  ? row_groups
                               : a == "--key-tiles" ? key_tiles
                                                    : decode_clusters;
      for (const char* p = argv[++i]; *p;) {
        list.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p) ++p;
      }
    } else if (a == "--decode-only") {
      decode_only = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_attention [--iters N] [--quick] [--row-kernel] [--mma-sync] "
                   "[--row-groups 1,2] [--key-tiles 64,128] [--decode-only] [--decode-clusters "
                   "8,16] [--json FILE]\n");
      return 1;
    }
  }
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) {
    std::fprintf(stderr, "bench_attention: no CUDA device: %s\n", probe.reason.c_str());
    return 2;
  }
  const CudaDeviceInfo& dev = probe.devices.front();
  Bench bench(dev, iters);
  std::vector<Result> results;
  for (const Shape4& s : decode_only ? std::vector<Shape4>{} : prefill_shapes(quick)) {
    results.push_back(bench.run(s, Variant{}));
    // The key tiles and the mma.sync comparison only where the wgmma kernel took the shape
    // (elsewhere they would time the mma.sync kernel again).
    if (results.back().kernel == "wgmma") {
      for (int tile : key_tiles) results.push_back(bench.run(s, Variant{.key_tile = tile}));
      if (mma_sync) results.push_back(bench.run(s, Variant{.wgmma = false}));
    }
    for (int groups : row_groups) results.push_back(bench.run(s, Variant{.row_groups = groups}));
    if (row_kernel && s.q_len <= 2048)
      results.push_back(bench.run(s, Variant{.tensor_cores = false}));
    if (Result c = bench.run_cudnn(s); !c.kernel.empty()) results.push_back(c);
  }
  std::vector<Result> decode;
  for (const Shape4& s : decode_shapes(quick)) {
    const size_t first = decode.size();
    decode.push_back(bench.run(s, Variant{}, true));
    for (int clusters : decode_clusters)
      decode.push_back(bench.run(s, Variant{.clusters = clusters}, true));
    if (row_kernel) decode.push_back(bench.run(s, Variant{.tensor_cores = false}, true));
    if (Result c = bench.run_cudnn(s, true); !c.kernel.empty()) decode.push_back(c);
    const double read_us = bench.read_kv_us(s);
    for (size_t i = first; i < decode.size(); ++i) decode[i].read_us = read_us;
  }
  const double copy_gbps = bench.copy_gbps();

  std::printf("device: %s (%d SMs)\n", dev.name.c_str(), dev.multiprocessors);
  std::printf("%-5s %-5s %4s %4s %6s %6s %4s %-7s %10s %8s\n", "dtype", "kern", "B", "H", "Sq", "Skv",
              "D", "causal", "time us", "TFLOP/s");
  nlohmann::json j;
  j["device"] = dev.name;
  j["iters"] = iters;
  for (const Result& r : results) {
    const Shape4& s = r.shape;
    std::printf("%-5s %-5s %4lld %4lld %6lld %6lld %4lld %-7s %10.1f %8.1f",
                std::string(dtype_name(s.dtype)).c_str(), r.kernel.c_str(), (long long)s.batch,
                (long long)s.heads, (long long)s.q_len, (long long)s.kv_len, (long long)s.head_dim,
                s.causal ? "yes" : "no", r.us, r.tflops);
    if (!r.engine.empty()) std::printf("  %s", r.engine.c_str());
    if (r.graph_us > 0) std::printf(", graph launch %.1f us", r.graph_us);
    std::printf("\n");
    j["results"].push_back({{"dtype", std::string(dtype_name(s.dtype))},
                            {"kernel", r.kernel},
                            {"batch", s.batch},
                            {"heads", s.heads},
                            {"kv_heads", s.kv_heads},
                            {"q_len", s.q_len},
                            {"kv_len", s.kv_len},
                            {"head_dim", s.head_dim},
                            {"causal", s.causal},
                            {"us", r.us},
                            {"tflops", r.tflops},
                            {"engine", r.engine},
                            {"graph_us", r.graph_us}});
  }
  std::printf("\ndecode (copy %.0f GB/s, read + write)\n", copy_gbps);
  std::printf("%-5s %-5s %4s %4s %4s %6s %4s %10s %9s %8s %10s %8s %8s %7s\n", "dtype", "kern", "B",
              "Hq", "Hkv", "Skv", "D", "time us", "KV GB/s", "%copy", "queued us", "%copy",
              "read us", "%read");
  j["copy_gbps"] = copy_gbps;
  for (const Result& r : decode) {
    const Shape4& s = r.shape;
    std::printf(
        "%-5s %-5s %4lld %4lld %4lld %6lld %4lld %10.1f %9.0f %7.1f%% %10.1f %7.1f%% %8.1f "
        "%6.1f%%\n",
        std::string(dtype_name(s.dtype)).c_str(), r.kernel.c_str(), (long long)s.batch,
        (long long)s.heads, (long long)s.kv_heads, (long long)s.kv_len, (long long)s.head_dim, r.us,
        r.kv_gbps, 100.0 * r.kv_gbps / copy_gbps, r.queued_us, 100.0 * r.queued_kv_gbps / copy_gbps,
        r.read_us, 100.0 * r.read_us / r.queued_us);
    j["decode"].push_back({{"dtype", std::string(dtype_name(s.dtype))},
                           {"kernel", r.kernel},
                           {"batch", s.batch},
                           {"heads", s.heads},
                           {"kv_heads", s.kv_heads},
                           {"q_len", s.q_len},
                           {"kv_len", s.kv_len},
                           {"head_dim", s.head_dim},
                           {"us", r.us},
                           {"engine", r.engine},
                           {"kv_gbps", r.kv_gbps},
                           {"pct_copy", 100.0 * r.kv_gbps / copy_gbps},
                           {"queued_us", r.queued_us},
                           {"queued_pct_copy", 100.0 * r.queued_kv_gbps / copy_gbps},
                           {"read_us", r.read_us},
                           {"queued_pct_read", 100.0 * r.read_us / r.queued_us}});
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_attention: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  try {
    return gf::bench_main(argc, argv);
  } catch (const gf::Error& e) {
    std::fprintf(stderr, "bench_attention: error: %s\n", e.what());
    return 1;
  }
}
