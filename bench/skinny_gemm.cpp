// Decode-shaped GEMMs on the GPU: the skinny GEMM kernels against cuBLASLt and against the
// device-to-device copy bandwidth, all measured in this run. Each row's products (one set of
// weights per product, so nothing is served from L2) are captured into one CUDA graph and timed
// over replays with events.
//
//   bench_skinny_gemm [--json FILE] [--reps N] [--rows M,M,...] [--late-addresses]
//                     [--math auto|cuda-cores|tensor-cores] [--tile-cols 8|16|32]
//                     [--prefetch-ahead N]
//
// Rows: the 48 weight products of a GPT-2-small one-token step (W [k, n], as GPT-2 stores them,
// and [n, k]) at each m of --rows (default 1,2,4,8,16), and a Llama-style layer (hidden 4096, 32
// query / 8 KV heads, SwiGLU MLP of 11008; W [n, k], as Linear layers store them) at m = 1, four
// layers deep; and each GPT-2 shape alone, 12 products deep, W [n, k], at m = 1 and 8 (those of
// --rows). Nothing repoints the kernels' pointer tables, so they read A's address before their wait
// (SkinnyGemmSpec::stable_input_addresses); --late-addresses reads it after, as a kernel whose A
// may be bound to a caller's buffer does. --math picks the units of the W [n, k] rows' kernels
// (SkinnyGemmSpec::math; default auto: tensor cores from kSkinnyTensorCoreMinRows rows on), and
// --tile-cols the tensor-core kernels' columns per block (default: the layout's choice). Each row
// also prints two floors measured in the same run: the chain floor (kChainFloorSource: the same
// dependent launches without weights) and the weight bytes at the copy's rate. "+ next to L2":
// each kernel also moves the weights of the product N later (--prefetch-ahead, default 1, as the
// executor does) towards L2 as it starts.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/nvrtc_compiler.h"
#include "event_timing.h"
#include "runtime_api.h"
#include "codegen/cuda/skinny_gemm.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_module.h"

namespace gf {
namespace {

using bench::DeviceAlloc;


// Median microseconds of one replay of `graph`.
double time_graph_us(cudaGraph_t graph, cudaStream_t stream, int reps) {
  return bench::graph_replay_us(graph, stream, reps);
}

// A 1 GiB device-to-device copy launched on the stream (as bench_cuda_kernels and the
// README's figures time it), median of `reps`, counting the read and the write. The same copy
// captured into a graph (a memcpy node) read about 2.7 TB/s on an H200 while PyTorch's copy
// read 4.2 in the same session, which made the "% of copy" column read too high.
double memcpy_tb_per_s(cudaStream_t stream, int reps) {
  const size_t bytes = size_t{1} << 30;
  DeviceAlloc a(bytes), b(bytes);
  CK(cudaMemset(a.p, 1, bytes));
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<double> us;
  for (int i = 0; i < reps + 3; ++i) {
    CK(cudaEventRecord(start, stream));
    CK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream));
    CK(cudaEventRecord(stop, stream));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 3) us.push_back(ms * 1e3);  // after 3 warm-ups
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(us.begin(), us.end());
  return 2.0 * static_cast<double>(bytes) / (us[us.size() / 2] * 1e-6) / 1e12;
}

// The chain floor of a row: the same launches (grid and block of each of our kernels), each behind
// a programmatic edge, doing what no kernel of a dependent chain can skip and nothing else: wait
// for the kernel before it, read a piece of A (what that kernel wrote, in a model's step) and
// store its share of C. No weights: what the row's dependent launches cost before any weight
// bytes are read.
constexpr const char* kChainFloorSource = R"(
extern "C" __global__ void gf_bench_chain_floor(const uint4* a, unsigned short* c, int n) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int lane = threadIdx.x & 31;
  const int col = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const uint4 x = a[lane];
  unsigned v = x.x ^ x.y ^ x.z ^ x.w;
  for (int m = 16; m > 0; m >>= 1) v ^= __shfl_xor_sync(0xffffffffu, v, m);
  if (lane == 0 && col < n) c[col] = (unsigned short)v;
}
)";

struct Product {
  int64_t n, k;
  bool gated = false;
};

struct Row {
  std::string name;
  int64_t m;
  bool w_transposed;
  std::vector<Product> products;
};

struct Timing {
  double ours_us = 0, ours_programmatic_us = 0, cublas_us = 0, weight_bytes = 0;
  double ours_next_us = 0;    // programmatic edges, each kernel prefetching the next one's weights
  double chain_floor_us = 0;  // 0 where the device has no programmatic edges (before sm_90)
};

Timing run_row(const Row& row, codegen::NvrtcCompiler& nvrtc, int cc, int sms, cudaStream_t stream,
               int reps, bool early_addresses, codegen::SkinnyMath math, int tile_cols,
               CUfunction chain_floor, size_t ahead) {
  const DType dtype = DType::kF16;
  const size_t es = 2;
  Timing t;
  std::vector<std::unique_ptr<DeviceAlloc>> keep;
  auto alloc = [&](size_t bytes, int fill) {
    keep.push_back(std::make_unique<DeviceAlloc>(bytes));
    CK(cudaMemset(keep.back()->p, fill, bytes));
    return keep.back()->p;
  };
  int64_t max_n = 0, max_k = 0;
  for (const Product& p : row.products) max_n = std::max(max_n, p.n), max_k = std::max(max_k, p.k);
  void* a = alloc(static_cast<size_t>(row.m * max_k) * es, 0x3c);  // 0x3c3c: about 1.06 in f16
  void* c = alloc(static_cast<size_t>(row.m * max_n) * es, 0);
  std::vector<void*> weights, weights_up;
  for (const Product& p : row.products) {
    weights.push_back(alloc(static_cast<size_t>(p.n * p.k) * es, 0x11));
    weights_up.push_back(p.gated ? alloc(static_cast<size_t>(p.n * p.k) * es, 0x11) : nullptr);
    t.weight_bytes += static_cast<double>(p.n * p.k * static_cast<int64_t>(es)) * (p.gated ? 2 : 1);
  }

  // Ours: one kernel per product (the cache makes repeated shapes free), buffers and tables set
  // up before the capture, which allows no allocation.
  struct Launch {
    CUfunction fn;
    codegen::LaunchConfig config;
    void* table;
  };
  std::map<std::string, std::unique_ptr<CudaModule>> modules;  // one per distinct spec
  // Product i's launch; with `next`, its kernel also moves product i + ahead's weights towards
  // L2.
  const auto make_launch = [&](size_t i, bool next) {
    const Product& p = row.products[i];
    codegen::SkinnyGemmSpec spec;
    spec.dtype = dtype;
    spec.m = row.m;
    spec.n = p.n;
    spec.k = p.k;
    spec.w_transposed = row.w_transposed;
    spec.gated = p.gated;
    spec.prefetch_weights = true;  // W is never written: read ahead of the wait
    spec.stable_input_addresses = early_addresses;  // nothing repoints this bench's tables
    if (row.w_transposed) spec.math = math;  // f16, k a multiple of 8: either unit takes W [n, k]
    spec.tensor_core_tile_cols = tile_cols;
    // As the executor does (skinny_gemm_prefetches_next).
    const auto weight_bytes = [&](size_t j) {
      const Product& q = row.products[j];
      return static_cast<uint64_t>(q.n * q.k) * es * (q.gated ? 2 : 1);
    };
    const size_t later = i + ahead;
    const uint64_t next_bytes = later < row.products.size() ? weight_bytes(later) : 0;
    if (next && codegen::skinny_gemm_prefetches_next(weight_bytes(i), next_bytes)) {
      const bool next_gated = row.products[later].gated;
      spec.next_w_bytes = next_gated ? next_bytes / 2 : next_bytes;
      spec.next_w_up_bytes = next_gated ? next_bytes / 2 : 0;
    }
    const std::string name = "gf_skinny";
    const codegen::CudaKernelSource src = codegen::emit_skinny_gemm_kernel(spec, name, sms);
    std::unique_ptr<CudaModule>& module = modules[src.source];
    if (!module) module = CudaModule::load(*nvrtc.compile(src.source, cc), name);
    std::vector<void*> table;
    for (codegen::SkinnyBuffer role : codegen::skinny_gemm_buffers(spec, sms)) {
      switch (role) {
        case codegen::SkinnyBuffer::kA:
          table.push_back(a);
          break;
        case codegen::SkinnyBuffer::kW:
          table.push_back(weights[i]);
          break;
        case codegen::SkinnyBuffer::kWUp:
          table.push_back(weights_up[i]);
          break;
        case codegen::SkinnyBuffer::kC:
          table.push_back(c);
          break;
        case codegen::SkinnyBuffer::kNextW:
          table.push_back(weights[i + ahead]);
          break;
        case codegen::SkinnyBuffer::kNextWUp:
          table.push_back(weights_up[i + ahead]);
          break;
        case codegen::SkinnyBuffer::kWorkspace:
          table.push_back(alloc(codegen::skinny_gemm_workspace_bytes(spec, sms), 0));
          break;
        default:
          throw Error(ErrorCode::kInvalidArgument, "bench: no bias or residual here");
      }
    }
    void* table_dev = alloc(table.size() * sizeof(void*), 0);
    CK(cudaMemcpy(table_dev, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice));
    return Launch{module->function(name), src.launch, table_dev};
  };
  std::vector<Launch> launches, launches_next;
  for (size_t i = 0; i < row.products.size(); ++i) {
    launches.push_back(make_launch(i, false));
    launches_next.push_back(make_launch(i, true));
  }
  // The fills and tables went on the legacy default stream, which the non-blocking stream the
  // graphs run on does not wait for.
  CK(cudaDeviceSynchronize());
  // Every launch of the row, each running `fn` (ours: l.fn) with `params`, captured into one
  // graph, behind programmatic edges or plain ones; the graph's replay time.
  const auto time_launches = [&](std::vector<Launch>& chain, CUfunction fn, auto params_of,
                                 bool programmatic) {
    cudaGraph_t graph;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (Launch& l : chain) {
      auto params = params_of(l);
      CUlaunchAttribute attr{};
      attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr.value.programmaticStreamSerializationAllowed = 1;
      CUlaunchConfig config{};
      config.gridDimX = l.config.grid;
      config.gridDimY = config.gridDimZ = 1;
      config.blockDimX = l.config.block;
      config.blockDimY = config.blockDimZ = 1;
      config.hStream = stream;
      config.attrs = &attr;
      config.numAttrs = programmatic ? 1 : 0;
      check_cu(cuda_driver().cuLaunchKernelEx(&config, fn ? fn : l.fn, params.data(), nullptr),
               "cuLaunchKernelEx");
    }
    CK(cudaStreamEndCapture(stream, &graph));
    const double us = time_graph_us(graph, stream, reps);
    cudaGraphDestroy(graph);
    return us;
  };
  // Ours twice: plain edges, then programmatic ones (each kernel starts streaming its weights
  // while the one before it finishes, as the executor's graphs do on sm_90 and later).
  const auto our_params = [](Launch& l) { return std::array<void*, 1>{&l.table}; };
  t.ours_us = time_launches(launches, nullptr, our_params, false);
  t.ours_programmatic_us = time_launches(launches, nullptr, our_params, true);
  t.ours_next_us = time_launches(launches_next, nullptr, our_params, true);
  if (chain_floor) {
    int n = static_cast<int>(max_n);
    t.chain_floor_us = time_launches(
        launches, chain_floor,
        [&](Launch&) {
          return std::array<void*, 3>{&a, &c, &n};
        },
        true);
  }

  // cuBLASLt: C = A * W (W^T for [n, k] weights); a gated product is its two GEMMs.
  cuda::CublasLtHandle handle;
  const size_t ws_bytes = size_t{32} << 20;
  void* ws = alloc(ws_bytes, 0);
  std::vector<std::unique_ptr<cuda::CublasLtGemm>> gemms;
  for (const Product& p : row.products) {
    cuda::GemmSpec g;
    g.dtype = dtype;
    g.m = row.m;
    g.n = p.n;
    g.k = p.k;
    g.trans_b = row.w_transposed;
    gemms.push_back(std::make_unique<cuda::CublasLtGemm>(handle, g, ws_bytes));
  }
  cudaGraph_t graph;
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (size_t i = 0; i < row.products.size(); ++i) {
    gemms[i]->run(a, weights[i], nullptr, c, ws, stream);
    if (row.products[i].gated) gemms[i]->run(a, weights_up[i], nullptr, c, ws, stream);
  }
  CK(cudaStreamEndCapture(stream, &graph));
  t.cublas_us = time_graph_us(graph, stream, reps);
  cudaGraphDestroy(graph);
  return t;
}

// "1,2,8": each in 1..kSkinnyGemmMaxRows.
std::vector<int64_t> parse_rows(const std::string& list) {
  return bench::parse_row_counts(list, "--rows", 1, codegen::kSkinnyGemmMaxRows);
}

bool parse_math(const std::string& text, codegen::SkinnyMath* math) {
  if (text == "auto")
    *math = codegen::SkinnyMath::kAuto;
  else if (text == "cuda-cores")
    *math = codegen::SkinnyMath::kCudaCores;
  else if (text == "tensor-cores")
    *math = codegen::SkinnyMath::kTensorCores;
  else
    return false;
  return true;
}

int run(int argc, char** argv) {
  std::string json_path;
  int reps = 50;
  std::vector<int64_t> row_counts{1, 2, 4, 8, 16};  // what kSkinnyGemmAutoMaxRows rests on
  bool early_addresses = true;
  codegen::SkinnyMath math = codegen::SkinnyMath::kAuto;
  int tile_cols = 0;
  size_t ahead = 1;  // "+ next to L2": the weights of the product this many later
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (arg == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--rows" && i + 1 < argc) row_counts = parse_rows(argv[++i]);
    else if (arg == "--late-addresses")
      early_addresses = false;
    else if (arg == "--math" && i + 1 < argc && parse_math(argv[i + 1], &math))
      ++i;
    else if (arg == "--tile-cols" && i + 1 < argc)
      tile_cols = std::atoi(argv[++i]);  // the emitter checks it
    else if (arg == "--prefetch-ahead" && i + 1 < argc && std::atoi(argv[i + 1]) >= 1)
      ahead = static_cast<size_t>(std::atoi(argv[++i]));
    else
      throw Error(
          ErrorCode::kInvalidArgument,
          "usage: bench_skinny_gemm [--json FILE] [--reps N] [--rows M,M,...] [--late-addresses] "
          "[--math auto|cuda-cores|tensor-cores] [--tile-cols 8|16|32] [--prefetch-ahead N >= 1]");
  }
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) {
    std::printf("%s: nothing to measure\n", probe.reason.c_str());
    return 0;
  }
  const CudaDeviceInfo& dev = probe.devices.front();
  const int cc = dev.compute_major * 10 + dev.compute_minor;
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  codegen::NvrtcCompiler nvrtc;

  const double copy_tbs = memcpy_tb_per_s(stream, reps);
  std::unique_ptr<CudaModule> floor_module;  // programmatic edges need sm_90
  CUfunction chain_floor = nullptr;
  if (cc >= 90) {
    floor_module = CudaModule::load(*nvrtc.compile(kChainFloorSource, cc), "gf_bench_chain_floor");
    chain_floor = floor_module->function("gf_bench_chain_floor");
  }
  std::vector<Row> rows;
  // GPT-2 stores W as [k, n]; the executor uploads constant weights as [n, k]
  // (runtime/cuda/weight_layout.h) and reads weights computed at run time as they are, so both
  // are measured.
  for (bool transposed : {false, true}) {
    for (int64_t m : row_counts) {
      Row r{transposed ? "gpt2-small step, 48 products, W[n,k]" : "gpt2-small step, 48 products, W[k,n]", m,
            transposed, {}};
      for (int layer = 0; layer < 12; ++layer) {
        r.products.insert(r.products.end(), {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}});
      }
      rows.push_back(r);
    }
  }
  // Each GPT-2 shape alone, 12 products deep (one per layer), W [n, k]: where the step's time
  // goes, shape by shape.
  for (int64_t m : row_counts) {
    if (m != 1 && m != 8) continue;
    for (const Product& p :
         {Product{2304, 768}, Product{768, 768}, Product{3072, 768}, Product{768, 3072}}) {
      Row r{"gpt2-small " + std::to_string(p.k) + "x" + std::to_string(p.n) + " x12, W[n,k]",
            m,
            true,
            {}};
      r.products.assign(12, p);
      rows.push_back(r);
    }
  }
  {
    Row r{"llama-style layer x4 (GQA, SwiGLU)", 1, true, {}};
    for (int layer = 0; layer < 4; ++layer) {
      r.products.insert(r.products.end(), {{4096, 4096}, {1024, 4096}, {1024, 4096}, {4096, 4096},
                                           {11008, 4096, true}, {4096, 11008}});
    }
    rows.push_back(r);
  }

  std::printf(
      "%s, %d SMs; device-to-device copy: %.2f TB/s; f16, each row one CUDA graph; W [n, k] "
      "kernels "
      "on %s\n",
      dev.name.c_str(), dev.multiprocessors, copy_tbs,
      math == codegen::SkinnyMath::kAuto        ? "the units auto picks"
      : math == codegen::SkinnyMath::kCudaCores ? "CUDA cores"
                                                : "tensor cores");
  std::printf(
      "ours: plain graph edges; ours, early: programmatic edges (a kernel starts while the one\n"
      "before it finishes; the executor's graphs on sm_90+); + next to L2: programmatic edges, "
      "each\n"
      "kernel moving the weights of the product %zu later towards L2 as it starts. TB/s: weight "
      "bytes over time.\n"
      "Floors, same run: chain, the same launches doing nothing but wait, read A and store;\n"
      "copy, the weight bytes at the copy's rate.\n",
      ahead);
  std::printf(
      "| row | m | ours us | ours, early us | + next to L2 us | ours, early TB/s | %% of copy "
      "| cuBLASLt us | cuBLASLt TB/s | early / cuBLASLt | chain floor us | copy floor us |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json out = {{"device", dev.name},
                        {"copy_tb_per_s", copy_tbs},
                        {"prefetch_ahead", ahead},
                        {"rows", nlohmann::json::array()}};
  for (const Row& r : rows) {
    const Timing t = run_row(r, nvrtc, cc, dev.multiprocessors, stream, reps, early_addresses, math,
                             tile_cols, chain_floor, ahead);
    const double copy_floor_us = t.weight_bytes / (copy_tbs * 1e12) * 1e6;
    const double ours_tbs = t.weight_bytes / (t.ours_us * 1e-6) / 1e12;
    const double early_tbs = t.weight_bytes / (t.ours_programmatic_us * 1e-6) / 1e12;
    const double theirs_tbs = t.weight_bytes / (t.cublas_us * 1e-6) / 1e12;
    std::printf(
        "| %s | %lld | %.1f | %.1f | %.1f | %.2f | %.0f%% | %.1f | %.2f | %.2f | %.1f | %.1f |\n",
        r.name.c_str(), static_cast<long long>(r.m), t.ours_us, t.ours_programmatic_us,
        t.ours_next_us, early_tbs, 100 * early_tbs / copy_tbs, t.cublas_us, theirs_tbs,
        t.ours_programmatic_us / t.cublas_us, t.chain_floor_us, copy_floor_us);
    out["rows"].push_back({{"name", r.name},
                           {"m", r.m},
                           {"ours_us", t.ours_us},
                           {"ours_programmatic_us", t.ours_programmatic_us},
                           {"ours_next_to_l2_us", t.ours_next_us},
                           {"cublaslt_us", t.cublas_us},
                           {"weight_bytes", t.weight_bytes},
                           {"ours_tb_per_s", ours_tbs},
                           {"ours_programmatic_tb_per_s", early_tbs},
                           {"cublaslt_tb_per_s", theirs_tbs},
                           {"chain_floor_us", t.chain_floor_us},
                           {"copy_floor_us", copy_floor_us}});
  }
  cudaStreamDestroy(stream);
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  try {
    return gf::run(argc, argv);
  } catch (const gf::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
