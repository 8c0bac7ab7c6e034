// GEMMs with a bias + GELU epilogue, candidate by candidate: cuBLASLt (no epilogue, the bar; and
// its bias + tanh-GELU epilogue), cuDNN's fused matmul with the exact (erf) and the tanh GELU
// (cudnn_matmul.h), and on sm_90 our tensor-core GEMM (codegen/cuda/tensor_core_gemm.h) in each
// of its tiles, at GPT-2's / BERT's first MLP product (x [m, 768] W [768, 3072], W stored [n, k]
// as the device weights are). Each call is captured 20 times into one CUDA graph and the replay
// timed, as bench/cuda_vs_torch.py times torch.matmul; each output is checked against a host
// product in double over its first rows. A summary follows: per m and epilogue, the best of
// each library against cuBLASLt's best product without epilogue.
//
//   bench_library_gemm [--reps N] [--rows M,M,...] [--libraries L,L,...] [--enumerate N]
//                      [--epilogues E,E,...] [--tiles T,T,...] [--json FILE]
//
// --libraries: any of cublaslt, cudnn, graphfuse (default all); cuBLASLt's product without
// epilogue, the bar, is always timed. Building cuDNN's plans takes most of a full run.
// --enumerate N: also up to N cuBLASLt configurations past its heuristic (enumerated_candidates,
// runtime/cuda/cublaslt_heuristic.h), each timed briefly, the fastest timed in full and checked.
// --epilogues: any of none, bias+gelu, bias+gelu_tanh (default all) for cuDNN and our kernel.
// --tiles: our kernel's candidates by the numbers the table prints (0: the tile it chooses;
// default all), e.g. to profile one kernel alone.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tensor_core_gemm.h"
#include "event_timing.h"
#include "graphfuse/device.h"
#include "graphfuse/dtype.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/cudnn_matmul.h"
#include "runtime/cuda/cudnn_sdpa.h"
#include "runtime/cuda/tensor_core_gemm_maps.h"
#include "runtime_api.h"

namespace gf {
namespace {

using bench::DeviceAlloc;

constexpr int kCallsPerGraph = 20;
constexpr int64_t kCheckedRows = 16;

// Median microseconds per call of `calls` captured into one graph.
double time_captured_us(const std::function<void(cudaStream_t)>& call, cudaStream_t stream,
                        int reps) {
  cudaGraph_t graph = nullptr;
  CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < kCallsPerGraph; ++i) call(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CK(cudaStreamEndCapture(stream, &graph));
  try {
    const double us = bench::graph_replay_us(graph, stream, reps) / kCallsPerGraph;
    cudaGraphDestroy(graph);
    return us;
  } catch (...) {
    cudaGraphDestroy(graph);
    throw;
  }
}

enum class Epilogue { kNone, kBiasGeluErf, kBiasGeluTanh };

struct Row {
  std::string library, epilogue, engine;
  int64_t m = 0, k = 0, n = 0;
  size_t candidate = 0;
  double us = 0, max_err = 0;
};

double gelu(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

struct Problem {
  int64_t m, k, n;
  std::vector<uint16_t> x, w, bias;  // x [m, k], w [n, k], bias [n]
  DeviceAlloc dx, dw, dbias, dy, dws;

  Problem(int64_t m_, int64_t k_, int64_t n_, size_t ws_bytes)
      : m(m_),
        k(k_),
        n(n_),
        dx(static_cast<size_t>(m_ * k_) * 2),
        dw(static_cast<size_t>(n_ * k_) * 2),
        dbias(static_cast<size_t>(n_) * 2),
        dy(static_cast<size_t>(m_ * n_) * 2),
        dws(ws_bytes) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const auto fill = [&](std::vector<uint16_t>& v, size_t count, float scale) {
      v.resize(count);
      for (uint16_t& e : v) e = float_to_half_bits(u(rng) * scale);
    };
    fill(x, static_cast<size_t>(m * k), 1.0f);
    fill(w, static_cast<size_t>(n * k), 1.0f / std::sqrt(static_cast<float>(k)) * 1.7f);
    fill(bias, static_cast<size_t>(n), 0.5f);
    CK(cudaMemcpy(dx.p, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw.p, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias.p, bias.data(), bias.size() * 2, cudaMemcpyHostToDevice));
  }

  // The largest |y - reference| over the first kCheckedRows rows (or all m) of the last call's
  // output.
  double max_error(Epilogue e) const {
    const int64_t rows = std::min(m, kCheckedRows);
    std::vector<uint16_t> y(static_cast<size_t>(rows * n));
    CK(cudaMemcpy(y.data(), dy.p, y.size() * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t i = 0; i < k; ++i)
          acc += static_cast<double>(half_bits_to_float(x[static_cast<size_t>(r * k + i)])) *
                 half_bits_to_float(w[static_cast<size_t>(j * k + i)]);
        if (e != Epilogue::kNone)
          acc = gelu(acc + half_bits_to_float(bias[static_cast<size_t>(j)]),
                     e == Epilogue::kBiasGeluTanh);
        worst =
            std::max(worst, std::abs(acc - half_bits_to_float(y[static_cast<size_t>(r * n + j)])));
      }
    }
    return worst;
  }
};

const char* epilogue_name(Epilogue e) {
  return e == Epilogue::kNone          ? "none"
         : e == Epilogue::kBiasGeluErf ? "bias+gelu"
                                       : "bias+gelu_tanh";
}

void run_cublaslt(Problem& p, Epilogue e, const cuda::CublasLtHandle& handle, cudaStream_t stream,
                  int reps, size_t enumerate, std::vector<Row>& rows) {
  cuda::GemmSpec spec;
  spec.dtype = DType::kF16;
  spec.m = p.m, spec.n = p.n, spec.k = p.k;
  spec.trans_b = true;
  spec.epilogue =
      e == Epilogue::kNone ? cuda::GemmEpilogue::kNone : cuda::GemmEpilogue::kBiasGeluTanh;
  cuda::CublasLtGemm gemm(handle, spec, size_t{32} << 20);
  // Microseconds per call of candidate i, over `n` replays.
  const auto time_candidate = [&](size_t i, int n) {
    gemm.choose(i);
    return time_captured_us(
        [&](cudaStream_t s) { gemm.run(p.dx.p, p.dw.p, p.dbias.p, p.dy.p, p.dws.p, s); }, stream,
        n);
  };
  // A row for candidate i, timed in full and its output checked.
  const auto add_row = [&](size_t i, const std::string& engine) {
    Row r{"cublaslt", epilogue_name(e), engine, p.m, p.k, p.n, i};
    r.us = time_candidate(i, reps);
    CK(cudaStreamSynchronize(stream));
    r.max_err = p.max_error(e);
    rows.push_back(r);
  };
  for (size_t i = 0; i < gemm.candidates(); ++i) add_row(i, gemm.candidate_config(i));
  // The enumerated configurations, each timed briefly; the fastest timed again in full.
  const size_t heuristic = gemm.candidates();
  const size_t added = enumerate > 0 ? gemm.add_enumerated_candidates(enumerate) : 0;
  size_t best = 0;
  double best_us = 0;
  for (size_t i = heuristic; i < heuristic + added; ++i) {
    const double us = time_candidate(i, std::max(3, reps / 10));
    if (best_us == 0 || us < best_us) best = i, best_us = us;
  }
  if (added > 0)
    add_row(best,
            "best of " + std::to_string(added) + " enumerated: " + gemm.candidate_config(best));
}

void run_cudnn(Problem& p, Epilogue e, const cuda::CudnnHandle& handle, cudaStream_t stream,
               int reps, std::vector<Row>& rows) {
  cuda::CudnnMatmulSpec spec;
  spec.dtype = DType::kF16;
  spec.m = p.m, spec.n = p.n, spec.k = p.k;
  spec.b_transposed = true;
  spec.bias = e != Epilogue::kNone;
  spec.activation = e == Epilogue::kNone           ? cuda::MatmulActivation::kNone
                    : e == Epilogue::kBiasGeluTanh ? cuda::MatmulActivation::kGeluTanh
                                                   : cuda::MatmulActivation::kGeluErf;
  std::unique_ptr<cuda::CudnnMatmul> mm;
  try {
    mm = std::make_unique<cuda::CudnnMatmul>(handle, spec, "bench", 16);
  } catch (const Error& err) {
    if (err.code() != ErrorCode::kUnsupported) throw;
    std::fprintf(stderr, "bench_library_gemm: %s\n", err.what());
    return;
  }
  for (size_t i = 0; i < mm->candidates(); ++i) {
    mm->choose(i);
    Row r{"cudnn", epilogue_name(e), mm->engine(), p.m, p.k, p.n, i};
    if (mm->workspace_bytes() > (size_t{32} << 20)) continue;
    const cuda::CudnnMatmulBuffers io{p.dx.p, p.dw.p, p.dbias.p, p.dy.p, p.dws.p};
    try {
      r.us = time_captured_us([&](cudaStream_t s) { mm->run(io, s); }, stream, reps);
    } catch (const Error& err) {
      std::fprintf(stderr, "bench_library_gemm: candidate %zu: %s\n", i, err.what());
      continue;
    }
    CK(cudaStreamSynchronize(stream));
    r.max_err = p.max_error(e);
    rows.push_back(r);
  }
}

// Our tensor-core GEMM in each candidate tile, then in the tile it chooses ("auto").
void run_tensor_core(Problem& p, Epilogue e, int compute_capability, int sms, cudaStream_t stream,
                     int reps, const std::vector<bool>& timed_tiles, std::vector<Row>& rows) {
  codegen::TensorCoreGemmSpec spec;
  spec.dtype = DType::kF16;
  spec.m = p.m, spec.n = p.n, spec.k = p.k;
  spec.has_bias = e != Epilogue::kNone;
  spec.activation = e == Epilogue::kNone           ? codegen::TensorCoreGemmActivation::kNone
                    : e == Epilogue::kBiasGeluTanh ? codegen::TensorCoreGemmActivation::kGeluTanh
                                                   : codegen::TensorCoreGemmActivation::kGeluErf;
  if (!codegen::tensor_core_gemm_refusal(spec, compute_capability).empty()) return;
  static codegen::NvrtcCompiler nvrtc;
  std::vector<codegen::TensorCoreGemmTile> all_tiles = codegen::tensor_core_gemm_tiles();
  all_tiles.insert(all_tiles.begin(), codegen::TensorCoreGemmTile{});  // the tile chosen ("auto")
  std::vector<codegen::TensorCoreGemmTile> tiles;
  std::vector<size_t> numbers;  // each timed tile's candidate number
  for (size_t i = 0; i < all_tiles.size(); ++i)
    if (timed_tiles.empty() || timed_tiles[i]) tiles.push_back(all_tiles[i]), numbers.push_back(i);
  // Every tile's kernel compiled at once, in parallel.
  std::vector<codegen::CudaKernelSource> sources;
  std::vector<std::string> texts;
  for (const codegen::TensorCoreGemmTile& t : tiles) {
    spec.tile = t;
    sources.push_back(
        codegen::emit_tensor_core_gemm_kernel(spec, "gf_tc_gemm", sms, compute_capability));
    texts.push_back(sources.back().source);
  }
  const std::vector<codegen::CubinPtr> cubins = nvrtc.compile_all(
      texts, compute_capability,
      std::vector<codegen::ArchTarget>(texts.size(), codegen::ArchTarget::kSpecific));
  for (size_t i = 0; i < tiles.size(); ++i) {
    const codegen::CudaKernelSource& src = sources[i];
    const auto module = CudaModule::load(*cubins[i], "gf_tc_gemm");
    const CUfunction fn = module->function("gf_tc_gemm");
    allow_dynamic_shared_memory(fn, src.launch.dynamic_shared_bytes, "gf_tc_gemm");
    spec.tile = tiles[i];
    const std::vector<uint8_t> maps_init = cuda::tensor_core_gemm_maps_init(spec, sms);
    DeviceAlloc maps(maps_init.size());
    CK(cudaMemcpy(maps.p, maps_init.data(), maps_init.size(), cudaMemcpyHostToDevice));
    std::vector<void*> table;
    for (codegen::TensorCoreGemmBuffer b : codegen::tensor_core_gemm_buffers(spec)) {
      table.push_back(b == codegen::TensorCoreGemmBuffer::kA      ? p.dx.p
                      : b == codegen::TensorCoreGemmBuffer::kW    ? p.dw.p
                      : b == codegen::TensorCoreGemmBuffer::kBias ? p.dbias.p
                      : b == codegen::TensorCoreGemmBuffer::kC    ? p.dy.p
                                                                  : maps.p);
    }
    DeviceAlloc dtable(table.size() * sizeof(void*));
    CK(cudaMemcpy(dtable.p, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice));
    void* table_ptr = dtable.p;
    const codegen::LaunchConfig l = src.launch;
    const bool chosen = numbers[i] == 0;
    std::string tile = chosen ? "auto: " : "";
    const codegen::TensorCoreGemmTile t =
        chosen ? codegen::choose_tensor_core_gemm_tile(spec, sms) : tiles[i];
    tile += std::to_string(64 * t.consumers) + "x" + std::to_string(t.cols) +
            (t.ping_pong ? " ping-pong" : "") + ", " + std::to_string(t.stages) + " stages";
    Row r{"graphfuse", epilogue_name(e), tile, p.m, p.k, p.n, numbers[i]};
    r.us = time_captured_us(
        [&](cudaStream_t s) {
          void* params[] = {&table_ptr};
          check_cu(
              cuda_driver().cuLaunchKernel(fn, l.grid, 1, 1, l.block, 1, 1, l.dynamic_shared_bytes,
                                           reinterpret_cast<CUstream>(s), params, nullptr),
              "cuLaunchKernel");
        },
        stream, reps);
    CK(cudaStreamSynchronize(stream));
    r.max_err = p.max_error(e);
    rows.push_back(r);
  }
}

// Per m and epilogue, each library's fastest candidate against cuBLASLt's fastest product
// without epilogue (what torch.matmul runs).
void print_summary(const std::vector<Row>& rows) {
  std::printf("\nbest per library, against cuBLASLt's best product without epilogue:\n");
  std::printf("%-6s %-15s %-9s %9s %9s\n", "m", "epilogue", "library", "us/call", "bar/us");
  std::vector<int64_t> ms;
  for (const Row& r : rows)
    if (std::find(ms.begin(), ms.end(), r.m) == ms.end()) ms.push_back(r.m);
  for (int64_t m : ms) {
    double bar = 0;
    for (const Row& r : rows)
      if (r.m == m && r.library == "cublaslt" && r.epilogue == std::string("none") &&
          (bar == 0 || r.us < bar))
        bar = r.us;
    for (const char* e : {"none", "bias+gelu", "bias+gelu_tanh"}) {
      for (const char* lib : {"cublaslt", "cudnn", "graphfuse"}) {
        double best = 0;
        for (const Row& r : rows)
          if (r.m == m && r.library == lib && r.epilogue == std::string(e) &&
              (best == 0 || r.us < best))
            best = r.us;
        if (best > 0)
          std::printf("%-6lld %-15s %-9s %9.2f %9.2f\n", static_cast<long long>(m), e, lib, best,
                      bar / best);
      }
    }
  }
}

int bench_main(int argc, char** argv) {
  int reps = 50;
  std::vector<int64_t> ms = {128, 1024, 4096};
  std::string json_path;
  bool with_cublaslt = true, with_cudnn = true, with_ours = true;
  size_t enumerate = 0;
  std::vector<Epilogue> epilogues = {Epilogue::kNone, Epilogue::kBiasGeluErf,
                                     Epilogue::kBiasGeluTanh};
  std::vector<bool> timed_tiles;  // by candidate number; empty: all
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--rows" && i + 1 < argc) {
      ms = bench::parse_row_counts(argv[++i], "--rows", 1, int64_t{1} << 20);
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--enumerate" && i + 1 < argc) {
      enumerate = static_cast<size_t>(std::max(0, std::atoi(argv[++i])));
    } else if (a == "--epilogues" && i + 1 < argc) {
      epilogues.clear();
      for (const std::string& n :
           bench::parse_names(argv[++i], "--epilogues", {"none", "bias+gelu", "bias+gelu_tanh"}))
        epilogues.push_back(n == "none"        ? Epilogue::kNone
                            : n == "bias+gelu" ? Epilogue::kBiasGeluErf
                                               : Epilogue::kBiasGeluTanh);
    } else if (a == "--tiles" && i + 1 < argc) {
      const size_t count = codegen::tensor_core_gemm_tiles().size() + 1;
      std::vector<std::string> numbers;
      for (size_t t = 0; t < count; ++t) numbers.push_back(std::to_string(t));
      timed_tiles.assign(count, false);
      for (const std::string& n : bench::parse_names(argv[++i], "--tiles", numbers))
        timed_tiles[std::stoul(n)] = true;
    } else if (a == "--libraries" && i + 1 < argc) {
      const std::vector<std::string> names =
          bench::parse_names(argv[++i], "--libraries", {"cublaslt", "cudnn", "graphfuse"});
      const auto named = [&](const char* n) {
        return std::find(names.begin(), names.end(), n) != names.end();
      };
      with_cublaslt = named("cublaslt"), with_cudnn = named("cudnn"),
      with_ours = named("graphfuse");
    } else {
      std::fprintf(stderr,
                   "usage: bench_library_gemm [--reps N] [--rows M,M,...] [--libraries L,L,...] "
                   "[--enumerate N] [--epilogues E,E,...] [--tiles T,T,...] [--json FILE]\n");
      return 1;
    }
  }
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) {
    std::fprintf(stderr, "bench_library_gemm: no CUDA device: %s\n", probe.reason.c_str());
    return 2;
  }
  cuda::CudaContext::get().make_current();
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const cuda::CublasLtHandle cublaslt;
  std::unique_ptr<cuda::CudnnHandle> cudnn;
  if (cuda::cudnn_available()) cudnn = std::make_unique<cuda::CudnnHandle>();
  std::printf("device: %s; cuDNN %zu\n", probe.devices.front().name.c_str(),
              cuda::cudnn_runtime_version());
  const CudaDeviceInfo& dev = probe.devices.front();
  const int cc = dev.compute_major * 10 + dev.compute_minor;
  std::vector<Row> rows;
  for (int64_t m : ms) {
    Problem p(m, 768, 3072, size_t{32} << 20);
    run_cublaslt(p, Epilogue::kNone, cublaslt, stream, reps, enumerate, rows);  // the bar
    if (with_cublaslt)
      run_cublaslt(p, Epilogue::kBiasGeluTanh, cublaslt, stream, reps, enumerate, rows);
    if (cudnn && with_cudnn) {
      for (Epilogue e : epilogues) run_cudnn(p, e, *cudnn, stream, reps, rows);
    }
    if (with_ours) {
      for (Epilogue e : epilogues)
        run_tensor_core(p, e, cc, dev.multiprocessors, stream, reps, timed_tiles, rows);
    }
  }
  CK(cudaStreamDestroy(stream));
  std::printf("%-9s %-15s %-16s %-30s %9s %8s %9s\n", "library", "epilogue", "m x k x n (f16)",
              "candidate", "us/call", "TFLOP/s", "max err");
  nlohmann::json j;
  for (const Row& r : rows) {
    const std::string shape =
        std::to_string(r.m) + "x" + std::to_string(r.k) + "x" + std::to_string(r.n);
    const double tflops = 2.0 * static_cast<double>(r.m * r.k * r.n) / (r.us * 1e-6) / 1e12;
    std::printf("%-9s %-15s %-16s %-30s %9.2f %8.1f %9.2e\n", r.library.c_str(), r.epilogue.c_str(),
                shape.c_str(), (std::to_string(r.candidate) + ": " + r.engine).c_str(), r.us,
                tflops, r.max_err);
    j["results"].push_back({{"library", r.library},
                            {"epilogue", r.epilogue},
                            {"m", r.m},
                            {"k", r.k},
                            {"n", r.n},
                            {"candidate", r.candidate},
                            {"engine", r.engine},
                            {"us", r.us},
                            {"tflops", tflops},
                            {"max_err", r.max_err}});
  }
  print_summary(rows);
  if (!json_path.empty()) std::ofstream(json_path) << j.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace gf

int main(int argc, char** argv) {
  try {
    return gf::bench_main(argc, argv);
  } catch (const gf::Error& e) {
    std::fprintf(stderr, "bench_library_gemm: error: %s\n", e.what());
    return 1;
  }
}
