// bench_cuda_kernels: generated CUDA kernels against the copy bandwidth of the same GPU, in one
// run. Each case is built with GraphBuilder and goes the production way (plan_fusion ->
// lower_group -> emit_cuda_kernel -> NVRTC), then runs from device buffers; times are CUDA
// events around each launch, the median of --iters. Bytes are what the kernel must move (each
// input read once, each output written once); cuMemcpyDtoDAsync of the same size counts 2x.
// Then fp16 GEMMs with a bias + GELU epilogue (y = Gelu(x W + b), tanh and erf forms) at the
// shapes of GPT-2's and BERT's first MLP product, each a whole CUDA Session program run by
// DeviceProgram on device buffers (its kernels and library calls are printed with it), with the
// default options (GemmLibrary::kAuto); the erf form also through cuBLASLt and a Gelu kernel
// (kCublasLt) and through cuDNN's fused matmul (kCudnn) where cuDNN is present, the tanh form
// through whichever of cuBLASLt and cuDNN timed faster for the shape (kTimed), and on sm_90
// both through our tensor-core GEMM (kGenerated).
//
//   bench_cuda_kernels [--iters N] [--quick] [--cases chains,rows,gemms] [--json FILE]
//
// Exit status: 0 after the table; 2 where there is no CUDA device (the reason on stderr).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "event_timing.h"
#include "fusion/plan.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "graphfuse/session.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/device_memory.h"
#include "runtime_api.h"

namespace gf {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

struct Result {
  std::string name, dtype, shape;
  bool round_16bit = true;  // each 16-bit op's result rounded (false: f32 between the ops)
  int64_t bytes = 0;
  double us = 0, gbps = 0, memcpy_gbps = 0;
  codegen::CudaKernelSource src;
};

using bench::median;
using bench::time_us;

class Bench {
 public:
  Bench(const CudaDeviceInfo& info, int iters)
      : info_(info),
        iters_(iters),
        context_(info.index),
        compiler_(codegen::nvrtc_options_from_environment()) {}

  // cuMemcpyDtoDAsync of `bytes`: GB/s counting the read and the write.
  double memcpy_gbps(int64_t bytes) {
    if (auto it = memcpy_.find(bytes); it != memcpy_.end()) return it->second;
    DeviceBuffer a(static_cast<size_t>(bytes)), b(static_cast<size_t>(bytes));
    GF_CU(cuda_driver().cuMemsetD8(a.ptr(), 0x3c, static_cast<size_t>(bytes)));
    const double us = time_us(iters_, [&] {
      GF_CU(cuda_driver().cuMemcpyDtoDAsync(b.ptr(), a.ptr(), static_cast<size_t>(bytes), nullptr));
    });
    return memcpy_[bytes] = 2.0 * static_cast<double>(bytes) / us * 1e-3;
  }

  // Plans `g`, which must fuse into one kernel, and times that kernel.
  Result run(const std::string& name, const Graph& g, bool round_16bit = true) {
    const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
    const fusion::Group* group = nullptr;
    for (const fusion::Group& grp : plan.groups) {
      if (grp.kind != fusion::GroupKind::kPointwise && grp.kind != fusion::GroupKind::kReduction)
        continue;
      if (group) throw Error(ErrorCode::kUnsupported, name + ": more than one kernel");
      group = &grp;
    }
    if (!group) throw Error(ErrorCode::kUnsupported, name + ": no generated kernel");
    const fusion::FusedKernel k = fusion::lower_group(g, *group, "bench_kernel");
    codegen::CudaEmitOptions options;
    options.sm_count = info_.multiprocessors;
    options.compute_capability = info_.compute_major * 10 + info_.compute_minor;
    options.round_16bit_intermediates = round_16bit;
    Result r;
    r.name = name;
    r.round_16bit = round_16bit;
    r.src = codegen::emit_cuda_kernel(k, g, options);
    const codegen::CubinPtr cubin =
        compiler_.compile(r.src.source, info_.compute_major * 10 + info_.compute_minor);
    const std::unique_ptr<CudaModule> module = CudaModule::load(*cubin, k.name);
    const CUfunction fn = module->function(k.name);

    std::vector<std::unique_ptr<DeviceBuffer>> buffers;
    std::vector<CUdeviceptr> table;
    int64_t largest_input = -1;
    for (const fusion::KernelBuffer& b : k.buffers) {
      int64_t n = 1;
      for (int64_t d : b.dims) n *= d;
      const auto bytes = static_cast<size_t>(n) * dtype_size(b.dtype);
      r.bytes += static_cast<int64_t>(bytes);
      buffers.push_back(std::make_unique<DeviceBuffer>(bytes));
      table.push_back(buffers.back()->ptr());
      const Tensor& constant = g.value(b.value).constant;
      if (!b.is_output && constant.defined() && constant.nbytes() == bytes && bytes > 0) {
        GF_CU(cuda_driver().cuMemcpyHtoD(buffers.back()->ptr(), constant.raw(), bytes));
      } else {
        // About 0.0115 in f32 and bf16: finite, no denormals.
        GF_CU(cuda_driver().cuMemsetD8(buffers.back()->ptr(), 0x3c, bytes));
      }
      if (!b.is_output && static_cast<int64_t>(bytes) > largest_input) {  // the data, not weights
        largest_input = static_cast<int64_t>(bytes);
        r.shape.clear();
        r.dtype = std::string(dtype_name(b.dtype));
        for (size_t d = 0; d < b.dims.size(); ++d)
          r.shape += (d ? "x" : "") + std::to_string(b.dims[d]);
      }
    }
    DeviceBuffer table_buffer(table.size() * sizeof(CUdeviceptr));
    GF_CU(cuda_driver().cuMemcpyHtoD(table_buffer.ptr(), table.data(), table_buffer.bytes()));
    CUdeviceptr table_ptr = table_buffer.ptr();
    void* params[] = {&table_ptr};
    r.us = time_us(iters_, [&] {
      GF_CU(cuda_driver().cuLaunchKernel(fn, r.src.launch.grid, 1, 1, r.src.launch.block, 1, 1,
                                         r.src.launch.dynamic_shared_bytes, nullptr, params,
                                         nullptr));
    });
    GF_CU(cuda_driver().cuCtxSynchronize());
    r.gbps = static_cast<double>(r.bytes) / r.us * 1e-3;
    // The copy moving as many bytes: half of them read, half written.
    r.memcpy_gbps = memcpy_gbps(std::max<int64_t>(kMiB, r.bytes / 2 / kMiB * kMiB));
    return r;
  }

 private:
  CudaDeviceInfo info_;
  int iters_;
  PrimaryContext context_;
  codegen::NvrtcCompiler compiler_;
  std::map<int64_t, double> memcpy_;
};

struct GemmResult {
  std::string name;
  int64_t m = 0, k = 0, n = 0;
  double us = 0, tflops = 0;
  double graph_us = 0;  // per call, 20 calls populated into one CUDA graph
  double unbound_graph_us = 0;  // the same graph without the segments' binding nodes
  int generated_kernels = 0, library_calls = 0;
  int direct_bindings = 0;  // of x and y, those the program reads and writes in place
  int tuned_gemms = 0;      // its cuBLASLt algorithm chosen by timing
  int cudnn_gemms = 0;      // library calls through cuDNN's fused matmul (GemmLibrary)
  int tensor_core_gemms = 0;  // products in our tensor-core GEMM kernel (GemmLibrary)
};

// y = Gelu(x [m, k] * W [k, n] + b [n]) in fp16, W and b constants of small random values.
Graph gemm_bias_gelu_graph(int64_t m, int64_t k, int64_t n, bool tanh) {
  GraphBuilder b("gemm_bias_gelu");
  const ValueId x = b.input("x", DType::kF16, Shape::from_static({m, k}));
  Tensor w(DType::kF16, {k, n}), bias(DType::kF16, {n});
  uint32_t h = 12345;
  const auto next = [&] {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;
    return Half(0.02f * (static_cast<float>(h % 2001) / 1000.0f - 1.0f));
  };
  for (int64_t i = 0; i < w.numel(); ++i) w.data<Half>()[i] = next();
  for (int64_t i = 0; i < n; ++i) bias.data<Half>()[i] = next();
  const ValueId y = b.add(b.matmul(x, b.constant("w", w)), b.constant("b", bias));
  b.output(b.gelu(y, tanh), "y");
  return b.build();
}

// Takes `node` out of `graph`, each of its dependencies joined to each of its dependents by a
// full dependency (the conservative kind, whatever kind of edge the node had on either side).
void bypass_node(CUgraph graph, CUgraphNode node) {
  const auto n = reinterpret_cast<cudaGraphNode_t>(node);
  // Queried with edge data (a query without it fails where an edge is programmatic), into
  // arrays larger than any segment's fan-in or fan-out.
  constexpr size_t kCapacity = 1024;
  std::vector<cudaGraphNode_t> from(kCapacity), to(kCapacity);
  std::vector<cudaGraphEdgeData> edges(kCapacity);
  size_t from_count = kCapacity, to_count = kCapacity;
  CK(cudaGraphNodeGetDependencies(n, from.data(), edges.data(), &from_count));
  CK(cudaGraphNodeGetDependentNodes(n, to.data(), edges.data(), &to_count));
  if (from_count >= kCapacity || to_count >= kCapacity)
    throw Error(ErrorCode::kUnsupported, "bypass_node: more edges than the bench expects");
  from.resize(from_count);
  to.resize(to_count);
  CK(cudaGraphDestroyNode(n));
  for (cudaGraphNode_t f : from)
    for (cudaGraphNode_t t : to)
      CK(cudaGraphAddDependencies(reinterpret_cast<cudaGraph_t>(graph), &f, &t, nullptr, 1));
}

// Each flat segment's entry and exit nodes (gf_bind_in and gf_bind_out) out of `graph`.
void remove_binding_nodes(CUgraph graph, const std::vector<GraphSegment>& segments) {
  for (const GraphSegment& seg : segments) {
    bypass_node(graph, seg.entry);
    bypass_node(graph, seg.exit);
  }
}

// Through `library` (SessionOptions::gemm_library).
GemmResult run_gemm(const std::string& name, int64_t m, int64_t k, int64_t n, bool tanh, int iters,
                    GemmLibrary library = SessionOptions{}.gemm_library) {
  SessionOptions options{Device::kCuda};
  options.gemm_library = library;
  const Session session(gemm_bias_gelu_graph(m, k, n, tanh), options);
  const DeviceProgram program(session, {{m, k}});
  DeviceBuffer x(static_cast<size_t>(m * k * 2)), y(static_cast<size_t>(m * n * 2));
  GF_CU(cuda_driver().cuMemsetD8(x.ptr(), 0x2c, static_cast<size_t>(m * k * 2)));  // about 0.06
  DeviceBindings bindings;
  bindings.inputs.push_back(reinterpret_cast<const void*>(x.ptr()));
  bindings.outputs.push_back(reinterpret_cast<void*>(y.ptr()));
  GemmResult r;
  r.name = name, r.m = m, r.k = k, r.n = n;
  // As the peers are timed (cuda_vs_torch.py: a CUDA graph of 20 calls): device time per run,
  // runs queued back to back.
  r.us = bench::time_us_batched(iters, 20, [&] { program.run(bindings, nullptr); });
  GF_CU(cuda_driver().cuCtxSynchronize());
  // And as PyTorch's calls are: 20 of them in one CUDA graph (the program populated 20 times,
  // one after another, into a graph of the caller's).
  const CudaDriverApi& cu = cuda_driver();
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  GF_CU(cu.cuGraphCreate(&graph, 0));
  std::vector<GraphSegment> segments;
  for (int i = 0; i < 20; ++i) {
    CUgraphNode last = segments.empty() ? nullptr : segments.back().exit;
    segments.push_back(program.populate(graph, &last, last ? 1 : 0, bindings));
  }
  GF_CU(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  // An update on the instantiated graph disables the binding kernels with nothing to do.
  for (const GraphSegment& seg : segments) program.update(exec, seg, bindings);
  r.graph_us = bench::time_us(iters, [&] { GF_CU(cu.cuGraphLaunch(exec, nullptr)); }) / 20;
  GF_CU(cu.cuCtxSynchronize());
  GF_CU(cu.cuGraphExecDestroy(exec));
  // The same 20 calls with each segment's two binding nodes taken out of the graph: what the
  // library calls and kernels cost on their own, the binding nodes' share being the difference.
  // Valid here only: the bench's buffers never change, so the program's pointer tables and
  // captured calls already hold them and the binding kernels have nothing left to do.
  remove_binding_nodes(graph, segments);
  GF_CU(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  r.unbound_graph_us = bench::time_us(iters, [&] { GF_CU(cu.cuGraphLaunch(exec, nullptr)); }) / 20;
  GF_CU(cu.cuCtxSynchronize());
  GF_CU(cu.cuGraphExecDestroy(exec));
  GF_CU(cu.cuGraphDestroy(graph));
  r.tflops = 2.0 * static_cast<double>(m * k) * static_cast<double>(n) / (r.us * 1e-6) * 1e-12;
  const SessionStats st = program.stats();
  r.generated_kernels = st.fused_kernels;
  r.library_calls = st.library_calls;
  r.direct_bindings = st.direct_bindings;
  r.tuned_gemms = st.tuned_gemms;
  r.cudnn_gemms = st.cudnn_gemm_steps;
  r.tensor_core_gemms = st.tensor_core_gemm_steps;
  return r;
}

// x -> n ops (constants and unary ops, as in a model's activation/scale chains) -> y.
Graph chain_graph(DType t, int ops, int64_t bytes) {
  const int64_t row = 4096, rows = bytes / static_cast<int64_t>(dtype_size(t)) / row;
  GraphBuilder b("chain");
  ValueId v = b.input("x", t, Shape::from_static({rows, row}));
  for (int i = 0; i < ops; ++i) {
    switch (i % 8) {
      case 0:
        v = b.mul(v, b.constant_scalar(0.5f, t));
        break;
      case 1:
        v = b.add(v, b.constant_scalar(1.0f, t));
        break;
      case 2:
        v = b.unary(Op::kRelu, v);
        break;
      case 3:
        v = b.mul(v, b.constant_scalar(1.5f, t));
        break;
      case 4:
        v = b.add(v, b.constant_scalar(-0.25f, t));
        break;
      case 5:
        v = b.unary(Op::kAbs, v);
        break;
      case 6:
        v = b.unary(Op::kNeg, v);
        break;
      default:
        v = b.unary(Op::kSigmoid, v);
        break;
    }
  }
  b.output(v, "y");
  return b.build();
}

Graph norm_graph(Op op, int64_t row, int64_t bytes) {
  const int64_t rows = bytes / 2 / row;
  GraphBuilder b("norm");
  const ValueId x = b.input("x", DType::kBF16, Shape::from_static({rows, row}));
  Tensor ones(DType::kBF16, {row});
  for (int64_t i = 0; i < row; ++i) ones.data<BFloat16>()[i] = BFloat16(1.0f);
  const ValueId gamma = b.constant("gamma", ones);
  const ValueId beta = b.constant("beta", Tensor(DType::kBF16, {row}));
  ValueId y = kNoValue;
  if (op == Op::kSoftmax) {
    y = b.softmax(x);
  } else if (op == Op::kLayerNormalization) {
    y = b.layer_norm(x, gamma, beta);
  } else {
    y = b.op1(Op::kRMSNormalization, {x, gamma}, {{"axis", int64_t{-1}}, {"epsilon", 1e-6f}});
  }
  b.output(y, "y");
  return b.build();
}

int bench_main(int argc, char** argv) {
  int iters = 20;
  bool quick = false;
  std::string json_path;
  std::string cases = "chains,rows,gemms";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--cases" && i + 1 < argc) {
      cases = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: bench_cuda_kernels [--iters N] [--quick] [--cases chains,rows,gemms] "
                   "[--json FILE]\n");
      return 1;
    }
  }
  // Which groups of rows to run (a comma-separated subset of chains, rows, gemms).
  const std::vector<std::string> groups =
      bench::parse_names(cases, "--cases", {"chains", "rows", "gemms"});
  const auto wanted = [&](const std::string& group) {
    return std::find(groups.begin(), groups.end(), group) != groups.end();
  };
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) {
    std::fprintf(stderr, "bench_cuda_kernels: no CUDA device: %s\n", probe.reason.c_str());
    return 2;
  }
  const CudaDeviceInfo& dev = probe.devices.front();
  Bench bench(dev, iters);
  std::vector<Result> results;
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{16 * kMiB} : std::vector<int64_t>{256 * kMiB, 1024 * kMiB};
  for (DType t : {DType::kF32, DType::kBF16}) {
    if (!wanted("chains")) break;
    for (int ops : {3, 8}) {
      for (int64_t bytes : sizes) {
        results.push_back(bench.run("chain" + std::to_string(ops), chain_graph(t, ops, bytes)));
        // bf16 also with f32 between the ops (SessionOptions::round_16bit_intermediates = false).
        if (t == DType::kBF16)
          results.push_back(
              bench.run("chain" + std::to_string(ops), chain_graph(t, ops, bytes), false));
      }
    }
  }
  const int64_t norm_bytes = quick ? 16 * kMiB : 256 * kMiB;
  for (Op op : {Op::kLayerNormalization, Op::kRMSNormalization, Op::kSoftmax}) {
    if (!wanted("rows")) break;
    for (int64_t row : {1024, 4096, 16384}) {
      const std::string name = op == Op::kLayerNormalization ? "layernorm"
                               : op == Op::kRMSNormalization ? "rmsnorm"
                                                             : "softmax";
      results.push_back(bench.run(name, norm_graph(op, row, norm_bytes)));
    }
  }

  std::printf("device: %s (%d SMs); memcpy D2D %.0f GB/s at 256 MiB\n", dev.name.c_str(),
              dev.multiprocessors, bench.memcpy_gbps(256 * kMiB));
  std::printf("%-10s %-5s %-14s %10s %9s %8s  %s\n", "name", "dtype", "shape", "time us", "GB/s",
              "%memcpy", "kernel");
  nlohmann::json j;
  j["device"] = dev.name;
  j["sm_count"] = dev.multiprocessors;
  j["iters"] = iters;
  j["memcpy_gbps_256MiB"] = bench.memcpy_gbps(256 * kMiB);
  for (const Result& r : results) {
    const double pct = 100.0 * r.gbps / r.memcpy_gbps;
    const std::string shown = r.name + (r.round_16bit ? "" : "-f32");
    std::printf("%-10s %-5s %-14s %10.1f %9.0f %7.1f%%  %s%s, vec %d, %d-bit\n", shown.c_str(),
                r.dtype.c_str(), r.shape.c_str(), r.us, r.gbps, pct,
                std::string(codegen::cuda_schedule_name(r.src.schedule)).c_str(),
                r.src.persistent_rows ? " (registers)" : "", r.src.vector_width,
                r.src.index32 ? 32 : 64);
    j["results"].push_back({{"name", r.name},
                            {"intermediates", r.round_16bit ? "rounded" : "f32"},
                            {"dtype", r.dtype},
                            {"shape", r.shape},
                            {"bytes", r.bytes},
                            {"us", r.us},
                            {"gbps", r.gbps},
                            {"memcpy_gbps", r.memcpy_gbps},
                            {"pct_memcpy", pct},
                            {"schedule", std::string(codegen::cuda_schedule_name(r.src.schedule))},
                            {"persistent_rows", r.src.persistent_rows},
                            {"vector_width", r.src.vector_width},
                            {"index32", r.src.index32}});
  }
  // GPT-2 small's and BERT-base's first MLP product (768 -> 3072) at 128 to 4096 token rows.
  std::vector<GemmResult> gemms;
  for (int64_t m : quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 1024, 4096}) {
    if (!wanted("gemms")) break;
    gemms.push_back(run_gemm("gemm_bias_gelu_tanh", m, 768, 3072, true, iters));
    gemms.push_back(run_gemm("gemm_bias_gelu_erf", m, 768, 3072, false, iters));
    // cuBLASLt's product, the exact GELU a kernel of its own after it.
    gemms.push_back(run_gemm("gemm_bias_gelu_erf_cublaslt", m, 768, 3072, false, iters,
                             GemmLibrary::kCublasLt));
    // The exact GELU fused by cuDNN's matmul (not the default: its plans cost compile time).
    if (cuda::cudnn_available()) {
      gemms.push_back(
          run_gemm("gemm_bias_gelu_erf_cudnn", m, 768, 3072, false, iters, GemmLibrary::kCudnn));
      // The tanh form through whichever of cuBLASLt and cuDNN timed faster for the shape.
      gemms.push_back(
          run_gemm("gemm_bias_gelu_tanh_timed", m, 768, 3072, true, iters, GemmLibrary::kTimed));
    }
    // Both forms through our tensor-core GEMM, the epilogue in its kernel (sm_90).
    if (dev.compute_major == 9 && dev.compute_minor == 0) {
      gemms.push_back(run_gemm("gemm_bias_gelu_tanh_generated", m, 768, 3072, true, iters,
                               GemmLibrary::kGenerated));
      gemms.push_back(run_gemm("gemm_bias_gelu_erf_generated", m, 768, 3072, false, iters,
                               GemmLibrary::kGenerated));
    }
  }

  std::printf("\n%-20s %-16s %10s %8s %12s %13s  %s\n", "name", "m x k x n (f16)", "time us",
              "TFLOP/s", "in graph us", "no bind nodes", "program");
  for (const GemmResult& r : gemms) {
    const std::string shape =
        std::to_string(r.m) + "x" + std::to_string(r.k) + "x" + std::to_string(r.n);
    std::printf(
        "%-20s %-16s %10.1f %8.1f %12.1f %13.1f  %d library calls (%d cuBLASLt tuned, %d cuDNN), "
        "%d generated kernels, %d of 2 buffers in place\n",
        r.name.c_str(), shape.c_str(), r.us, r.tflops, r.graph_us, r.unbound_graph_us,
        r.library_calls, r.tuned_gemms, r.cudnn_gemms, r.generated_kernels, r.direct_bindings);
    j["gemm_results"].push_back({{"name", r.name},
                                 {"m", r.m},
                                 {"k", r.k},
                                 {"n", r.n},
                                 {"us", r.us},
                                 {"graph_us", r.graph_us},
                                 {"unbound_graph_us", r.unbound_graph_us},
                                 {"tflops", r.tflops},
                                 {"library_calls", r.library_calls},
                                 {"generated_kernels", r.generated_kernels},
                                 {"direct_bindings", r.direct_bindings},
                                 {"tuned_gemms", r.tuned_gemms},
                                 {"cudnn_gemms", r.cudnn_gemms},
                                 {"tensor_core_gemms", r.tensor_core_gemms}});
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_cuda_kernels: cannot write %s\n", json_path.c_str());
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
    std::fprintf(stderr, "bench_cuda_kernels: error: %s\n", e.what());
    return 1;
  }
}
