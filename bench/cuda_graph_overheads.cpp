// Host and device costs of running many small kernels, measured in one run: eager launches,
// stream capture + instantiate against building the graph directly from the launches, graph
// launch, and re-binding every kernel's buffers two ways: rewriting the kernels' pointer tables
// (one small copy; the graph is untouched) against cuGraphExecKernelNodeSetParams on every node.
// Then the same costs for a graphfuse program of about as many kernels (a chain of softmaxes,
// one kernel each), embedded with DeviceProgram::populate in a graph of the bench's own:
// populate + instantiate against stream capture + instantiate of the same launches (with
// programmatic edges, and with plain edges only), launch, DeviceProgram::run against a launch
// of the same nodes, and DeviceProgram::update to a new set of buffers. Last, a loop inside one
// launch (DeviceProgram::populate_loop, a conditional WHILE node) of 100 iterations of a 10-kernel
// body, against the same kernels populated 100 times in a row (with plain edges: raw kernels in
// a graph; and with programmatic edges, as our graphs run them).
//
//   bench_cuda_graph_overheads [--kernels N] [--json FILE]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/cuda/nvrtc_compiler.h"
#include "event_timing.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/device.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/kernel_graph.h"

namespace gf {
namespace {

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw Error(ErrorCode::kDeviceError, std::string(call) + ": " + cudaGetErrorString(e));
}
#define CK(call) check((call), #call)

constexpr int kElements = 256;  // per kernel: one block, a few hundred bytes

constexpr const char* kKernel = R"(
extern "C" __global__ void step(void* const* b) {
  const float* x = (const float*)b[0]; float* y = (float*)b[1];
  y[threadIdx.x] = x[threadIdx.x] * 0.5f + 1.0f;
}
)";

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}
using bench::median;

// Two inputs, two outputs: y = softmax^(n-1)(x) + z and w = tanh(z), one kernel per softmax.
Graph softmax_chain(int n) {
  GraphBuilder b("softmax_chain");
  const ValueId x = b.input("x", DType::kF32, Shape{1, kElements});
  const ValueId z = b.input("z", DType::kF32, Shape{1, kElements});
  ValueId h = x;
  for (int i = 0; i + 1 < n; ++i) h = b.softmax(h);
  b.output(b.add(h, z), "y");
  b.output(b.unary(Op::kTanh, z), "w");
  return b.build();
}

// graphfuse's program of about `n` kernels, embedded in a graph of our own.
void measure_program(int n, cudaStream_t stream, nlohmann::json& out) {
  const Session session(softmax_chain(n), SessionOptions{Device::kCuda});
  auto t0 = Clock::now();
  const DeviceProgram program(session, {{1, kElements}, {1, kElements}});
  out["program_compile_s"] = us_since(t0) * 1e-6;
  out["program_kernels"] = program.stats().fused_kernels;
  const size_t bytes = kElements * sizeof(float);
  float* buffers[2][4];
  for (auto& set : buffers)
    for (float*& p : set) CK(cudaMalloc(reinterpret_cast<void**>(&p), bytes));
  auto bindings = [&](int s) {
    return DeviceBindings{{buffers[s][0], buffers[s][1]}, {buffers[s][2], buffers[s][3]}};
  };
  // Building + instantiating the graph: populate (programmatic edges, and plain edges only)
  // against stream capture of the same launches from an eager program (eager runs start a
  // kernel early where the graph has a programmatic edge, and capture makes that launch the
  // same edge; with programmatic_launch off both have plain edges). Round by round, so that
  // every variant sees the same machine state.
  SessionOptions plain_options{Device::kCuda};
  plain_options.programmatic_launch = false;
  const Session plain_session(softmax_chain(n), plain_options);
  const DeviceProgram plain(plain_session, {{1, kElements}, {1, kElements}});
  SessionOptions eager_options{Device::kCuda};
  eager_options.mode = ExecutionMode::kEager;
  const Session eager_session(softmax_chain(n), eager_options);
  const DeviceProgram eager(eager_session, {{1, kElements}, {1, kElements}});
  eager_options.programmatic_launch = false;
  const Session eager_plain_session(softmax_chain(n), eager_options);
  const DeviceProgram eager_plain(eager_plain_session, {{1, kElements}, {1, kElements}});
  struct Variant {
    const DeviceProgram* program;
    bool capture;
    std::string key;
    std::vector<double> total_us, build_us, instantiate_us;
  };
  std::vector<Variant> variants = {{&program, false, "program_", {}, {}, {}},
                                   {&plain, false, "program_plain_", {}, {}, {}},
                                   {&eager, true, "program_capture_", {}, {}, {}},
                                   {&eager_plain, true, "program_plain_capture_", {}, {}, {}}};
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphSegment seg;
  for (int r = 0; r < 15; ++r) {
    for (Variant& v : variants) {
      cudaGraph_t g = nullptr;
      cudaGraphExec_t e = nullptr;
      t0 = Clock::now();
      if (v.capture) {
        CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        v.program->run(bindings(0), stream);
        CK(cudaStreamEndCapture(stream, &g));
      } else {
        CK(cudaGraphCreate(&g, 0));
        const GraphSegment s = v.program->populate(g, nullptr, 0, bindings(0));
        if (v.program == &program) seg = s;
      }
      const double built = us_since(t0);
      CK(cudaGraphInstantiate(&e, g, 0));
      const double total = us_since(t0);
      if (r >= 1) {
        v.total_us.push_back(total);
        v.build_us.push_back(built);
        v.instantiate_us.push_back(total - built);
      }
      if (r == 0) {
        // The programmatic edges each graph has.
        size_t count = 0;
        CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
        std::vector<cudaGraphNode_t> from(count), to(count);
        std::vector<cudaGraphEdgeData> data(count);
        CK(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &count));
        out[v.key + "graph_programmatic_edges"] =
            std::count_if(data.begin(), data.end(), [](const cudaGraphEdgeData& d) {
              return d.type == cudaGraphDependencyTypeProgrammatic;
            });
      }
      if (v.program == &program) {  // kept for the launch, update and run rounds below
        if (exec) cudaGraphExecDestroy(exec);
        if (graph) cudaGraphDestroy(graph);
        graph = g, exec = e;
      } else {
        cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
      }
    }
  }
  for (const Variant& v : variants) {
    // build: populate, or the captured eager run
    out[v.key + "build_instantiate_us"] = median(v.total_us);
    out[v.key + "build_us"] = median(v.build_us);
    out[v.key + "instantiate_us"] = median(v.instantiate_us);
  }
  out["program_graph_nodes"] = seg.node_count;
  out["program_programmatic_edges"] = program.stats().programmatic_edges;
  // Round by round, so that each measure sees the same machine state (host timings drift
  // between phases of a run): the caller's exec launched alone; update + launch of it (a new
  // buffer set every launch); DeviceProgram::run, the program's own graph of the same nodes
  // launched through our API, on new buffers (which re-binds first) and then the same again.
  std::vector<double> launch_host, update_host, update_launch_host, run_host, run_rebind_host;
  for (int r = 0; r < 403; ++r) {
    const bool keep = r >= 3;
    CK(cudaStreamSynchronize(stream));
    t0 = Clock::now();
    CK(cudaGraphLaunch(exec, stream));
    if (keep) launch_host.push_back(us_since(t0));
    CK(cudaStreamSynchronize(stream));
    const DeviceBindings next = bindings((r + 1) % 2);
    t0 = Clock::now();
    program.update(exec, seg, next);
    const double update = us_since(t0);
    CK(cudaGraphLaunch(exec, stream));
    if (keep) update_host.push_back(update), update_launch_host.push_back(us_since(t0));
    CK(cudaStreamSynchronize(stream));
    // A set other than the last run's (a re-bind), then the same set again (none).
    const DeviceBindings set = bindings(r % 2);
    for (std::vector<double>* into : {&run_rebind_host, &run_host}) {
      CK(cudaStreamSynchronize(stream));
      t0 = Clock::now();
      program.run(set, stream);
      if (keep) into->push_back(us_since(t0));
    }
  }
  CK(cudaStreamSynchronize(stream));
  out["program_run_host_us"] = median(run_host);
  out["program_run_rebind_host_us"] = median(run_rebind_host);
  out["program_graph_launch_host_us"] = median(launch_host);
  out["program_update_host_us"] = median(update_host);
  out["program_update_launch_host_us"] = median(update_launch_host);

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (auto& set : buffers)
    for (float* p : set) cudaFree(p);
}

// The loop body: x' = softmax^9(x) (9 kernels), t' = t + 1 and t' < iterations (one kernel).
Graph loop_body(int iterations) {
  GraphBuilder b("loop_body");
  ValueId x = b.input("x", DType::kF32, Shape{1, kElements});
  const ValueId t = b.input("t", DType::kF32, Shape{1});
  for (int i = 0; i < 9; ++i) x = b.softmax(x);
  b.output(x, "x_next");
  const ValueId t_next = b.add(t, b.constant_scalar(1.0f, DType::kF32));
  b.output(t_next, "t_next");
  b.output(b.binary(Op::kLess, t_next, b.constant_scalar(static_cast<float>(iterations), DType::kF32)),
           "again");
  return b.build();
}

void measure_loop(cudaStream_t stream, nlohmann::json& out) {
  constexpr int kIterations = 100;
  const Session session(loop_body(kIterations), SessionOptions{Device::kCuda});
  const DeviceProgram program(session, {{1, kElements}, {1}});
  // The raw-kernel baseline: the same kernels with plain edges (no early starts).
  SessionOptions plain_options{Device::kCuda};
  plain_options.programmatic_launch = false;
  const Session plain_session(loop_body(kIterations), plain_options);
  const DeviceProgram plain(plain_session, {{1, kElements}, {1}});
  const int kernels = program.stats().fused_kernels;
  float *x = nullptr, *t = nullptr;
  bool* again = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&x), kElements * sizeof(float)));
  CK(cudaMalloc(reinterpret_cast<void**>(&t), sizeof(float)));
  CK(cudaMalloc(reinterpret_cast<void**>(&again), 1));
  CK(cudaMemset(x, 0, kElements * sizeof(float)));
  // The state in place: the outputs go back to the input buffers.
  const DeviceBindings bindings{{x, t}, {x, t, again}};
  auto measure = [&](const DeviceProgram& program, bool as_loop) {
    cudaGraph_t graph;
    CK(cudaGraphCreate(&graph, 0));
    if (as_loop) {
      LoopSpec loop;
      loop.carry = {{0, 0}, {1, 1}};
      loop.condition_output = 2;
      program.populate_loop(graph, nullptr, 0, bindings, loop);
    } else {
      CUgraphNode_st* last = nullptr;
      for (int i = 0; i < kIterations; ++i) {
        last = program.populate(graph, last ? &last : nullptr, last ? 1 : 0, bindings).exit;
      }
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    const float zero = 0;
    CK(cudaMemcpy(t, &zero, sizeof zero, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());  // the copy is on the legacy stream, which `stream` does not wait
                                  // for
    CK(cudaGraphLaunch(exec, stream));
    CK(cudaStreamSynchronize(stream));
    float iterations = 0;
    CK(cudaMemcpy(&iterations, t, sizeof iterations, cudaMemcpyDeviceToHost));
    if (iterations != kIterations) {
      throw Error(ErrorCode::kDeviceError, "the loop ran " + std::to_string(iterations) + " times");
    }
    // Each timed launch starts from t = 0 (a copy before it, outside the timing).
    std::vector<double> us;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int r = 0; r < 13; ++r) {
      CK(cudaMemcpyAsync(t, &zero, sizeof zero, cudaMemcpyHostToDevice, stream));
      CK(cudaEventRecord(e0, stream));
      CK(cudaGraphLaunch(exec, stream));
      CK(cudaEventRecord(e1, stream));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 3) us.push_back(ms * 1e3);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return median(us);
  };
  const double loop_us = measure(program, true), unrolled_us = measure(program, false);
  const double plain_unrolled_us = measure(plain, false);
  out["loop_body_kernels"] = kernels;
  out["loop_iterations"] = kIterations;
  out["loop_device_us_per_body_kernel"] = loop_us / (kIterations * kernels);
  out["unrolled_device_us_per_body_kernel"] = unrolled_us / (kIterations * kernels);
  out["unrolled_plain_device_us_per_body_kernel"] = plain_unrolled_us / (kIterations * kernels);
  cudaFree(x);
  cudaFree(t);
  cudaFree(again);
}

int run(int argc, char** argv) {
  int n = 1000;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--kernels" && i + 1 < argc) n = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json" && i + 1 < argc) json_path = argv[++i];
    else throw Error(ErrorCode::kInvalidArgument, "usage: bench_cuda_graph_overheads [--kernels N] [--json FILE]");
  }
  const CudaProbe probe = probe_cuda();
  if (probe.devices.empty()) {
    std::printf("%s: nothing to measure\n", probe.reason.c_str());
    return 0;
  }
  const CudaDeviceInfo& dev = probe.devices.front();
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));
  const CudaDriverApi& cu = cuda_driver();
  codegen::NvrtcCompiler nvrtc;
  const auto module = CudaModule::load(*nvrtc.compile(kKernel, dev.compute_major * 10 + dev.compute_minor), "step");
  const CUfunction fn = module->function("step");
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // A chain: kernel i reads buffer i and writes buffer i + 1. Two sets of buffers (A, B) to
  // re-bind between; one pointer table (two entries per kernel).
  float *a = nullptr, *b = nullptr;
  void** tables = nullptr;
  void** other_tables = nullptr;
  const size_t buf_bytes = static_cast<size_t>(n + 1) * kElements * sizeof(float);
  CK(cudaMalloc(reinterpret_cast<void**>(&a), buf_bytes));
  CK(cudaMalloc(reinterpret_cast<void**>(&b), buf_bytes));
  CK(cudaMemset(a, 0, buf_bytes));
  CK(cudaMemset(b, 0, buf_bytes));
  const size_t table_bytes = static_cast<size_t>(n) * 2 * sizeof(void*);
  CK(cudaMalloc(reinterpret_cast<void**>(&tables), table_bytes));
  CK(cudaMalloc(reinterpret_cast<void**>(&other_tables), table_bytes));
  auto host_tables = [&](float* base) {
    std::vector<void*> t(static_cast<size_t>(n) * 2);
    for (int i = 0; i < n; ++i) {
      t[2 * i] = base + static_cast<size_t>(i) * kElements;
      t[2 * i + 1] = base + static_cast<size_t>(i + 1) * kElements;
    }
    return t;
  };
  const std::vector<void*> table_a = host_tables(a), table_b = host_tables(b);
  CK(cudaMemcpy(tables, table_a.data(), table_bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(other_tables, table_b.data(), table_bytes, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize());  // as above: before any launch on the non-blocking stream
  std::vector<cuda::GraphKernel> kernels(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    cuda::GraphKernel& k = kernels[static_cast<size_t>(i)];
    k.fn = fn;
    k.grid = 1;
    k.block = kElements;
    k.table = reinterpret_cast<CUdeviceptr>(tables + 2 * i);
    if (i > 0) k.deps = {i - 1};
  }
  const int reps = 20;
  nlohmann::json out = {{"device", dev.name}, {"kernels", n}};

  // Eager: host time per launch, and the GPU time of the whole chain.
  std::vector<double> eager_host, eager_total;
  for (int r = 0; r < reps; ++r) {
    CK(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    for (const cuda::GraphKernel& k : kernels) {
      CUdeviceptr table = k.table;
      void* params[] = {&table};
      check_cu(cu.cuLaunchKernel(k.fn, 1, 1, 1, k.block, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
    }
    eager_host.push_back(us_since(t0));
    CK(cudaStreamSynchronize(stream));
    eager_total.push_back(us_since(t0));
  }
  out["eager_launch_host_us_per_kernel"] = median(eager_host) / n;
  out["eager_total_us_per_kernel"] = median(eager_total) / n;

  // Stream capture + instantiate, against direct construction + instantiate.
  std::vector<double> capture_us, direct_us;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (const cuda::GraphKernel& k : kernels) {
      CUdeviceptr table = k.table;
      void* params[] = {&table};
      check_cu(cu.cuLaunchKernel(k.fn, 1, 1, 1, k.block, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
    }
    CK(cudaStreamEndCapture(stream, &g));
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    capture_us.push_back(us_since(t0));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    t0 = Clock::now();
    { cuda::KernelGraph direct(kernels); direct_us.push_back(us_since(t0)); }
  }
  out["capture_instantiate_us"] = median(capture_us);
  out["direct_build_instantiate_us"] = median(direct_us);

  cuda::KernelGraph graph(kernels);
  // Graph launch: host time of the call, and device time per node.
  std::vector<double> launch_host, replay_us;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int r = 0; r < reps + 3; ++r) {
    CK(cudaStreamSynchronize(stream));
    CK(cudaEventRecord(e0, stream));
    const auto t0 = Clock::now();
    graph.launch(stream);
    const double host = us_since(t0);
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 3) launch_host.push_back(host), replay_us.push_back(ms * 1e3);
  }
  out["graph_launch_host_us"] = median(launch_host);
  out["graph_device_us_per_kernel"] = median(replay_us) / n;

  // Re-binding every kernel to the other buffer set. Ours: one copy of the tables.
  std::vector<double> table_rebind;
  for (int r = 0; r < reps; ++r) {
    CK(cudaStreamSynchronize(stream));
    const std::vector<void*>& t = r % 2 ? table_a : table_b;
    const auto t0 = Clock::now();
    CK(cudaMemcpyAsync(tables, t.data(), table_bytes, cudaMemcpyHostToDevice, stream));
    table_rebind.push_back(us_since(t0));
  }
  // The anchor: every node's parameters set on the instantiated graph.
  size_t count = 0;
  check_cu(cu.cuGraphGetNodes(graph.graph(), nullptr, &count), "cuGraphGetNodes");
  std::vector<CUgraphNode> nodes(count);
  check_cu(cu.cuGraphGetNodes(graph.graph(), nodes.data(), &count), "cuGraphGetNodes");
  std::vector<double> setparams_rebind;
  for (int r = 0; r < 5; ++r) {
    CK(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    for (size_t i = 0; i < nodes.size(); ++i) {
      CUdeviceptr table = reinterpret_cast<CUdeviceptr>((r % 2 ? tables : other_tables) + 2 * i);
      void* params[] = {&table};
      CUDA_KERNEL_NODE_PARAMS p{};
      p.func = fn;
      p.gridDimX = p.gridDimY = p.gridDimZ = 1;
      p.blockDimX = kElements;
      p.blockDimY = p.blockDimZ = 1;
      p.kernelParams = params;
      check_cu(cu.cuGraphExecKernelNodeSetParams(graph.exec(), nodes[i], &p), "cuGraphExecKernelNodeSetParams");
    }
    setparams_rebind.push_back(us_since(t0));
  }
  out["rebind_tables_host_us"] = median(table_rebind);
  out["rebind_setparams_every_node_host_us"] = median(setparams_rebind);
  measure_program(n, stream, out);
  measure_loop(stream, out);

  std::printf("%s, %d kernels in a chain\n", dev.name.c_str(), n);
  std::printf("| measure | us |\n|---|---|\n");
  for (const char* key : {"eager_launch_host_us_per_kernel",
                          "eager_total_us_per_kernel",
                          "capture_instantiate_us",
                          "direct_build_instantiate_us",
                          "graph_launch_host_us",
                          "graph_device_us_per_kernel",
                          "rebind_tables_host_us",
                          "rebind_setparams_every_node_host_us",
                          "program_compile_s",
                          "program_build_instantiate_us",
                          "program_build_us",
                          "program_instantiate_us",
                          "program_capture_build_instantiate_us",
                          "program_capture_build_us",
                          "program_capture_instantiate_us",
                          "program_plain_build_instantiate_us",
                          "program_plain_build_us",
                          "program_plain_instantiate_us",
                          "program_plain_capture_build_instantiate_us",
                          "program_plain_capture_build_us",
                          "program_plain_capture_instantiate_us",
                          "program_graph_launch_host_us",
                          "program_update_host_us",
                          "program_update_launch_host_us",
                          "program_run_host_us",
                          "program_run_rebind_host_us",
                          "loop_device_us_per_body_kernel",
                          "unrolled_device_us_per_body_kernel",
                          "unrolled_plain_device_us_per_body_kernel"}) {
    std::printf("| %s | %.2f |\n", key, out[key].get<double>());
  }
  std::printf(
      "graphfuse program: %d kernels, %d graph nodes; DeviceProgram::run host %.2fx "
      "cudaGraphLaunch of the same nodes (%.2fx with new buffers each run); "
      "populate + instantiate %.2fx capture + instantiate of the same launches (%d programmatic "
      "edges populated, %d captured); with plain edges in both, %.2fx; "
      "update %.2f us (every node re-set: %.0f us)\n",
      out["program_kernels"].get<int>(), out["program_graph_nodes"].get<int>(),
      out["program_run_host_us"].get<double>() / out["program_graph_launch_host_us"].get<double>(),
      out["program_run_rebind_host_us"].get<double>() /
          out["program_graph_launch_host_us"].get<double>(),
      out["program_build_instantiate_us"].get<double>() /
          out["program_capture_build_instantiate_us"].get<double>(),
      out["program_graph_programmatic_edges"].get<int>(),
      out["program_capture_graph_programmatic_edges"].get<int>(),
      out["program_plain_build_instantiate_us"].get<double>() /
          out["program_plain_capture_build_instantiate_us"].get<double>(),
      out["program_update_host_us"].get<double>(),
      out["rebind_setparams_every_node_host_us"].get<double>());
  std::printf(
      "loop of %d iterations of a %d-kernel body in one launch: %.2f us per body kernel, "
      "%.2fx the same kernels populated %d times in a row with plain edges (raw kernels in "
      "a graph), %.2fx with programmatic edges\n",
      out["loop_iterations"].get<int>(), out["loop_body_kernels"].get<int>(),
      out["loop_device_us_per_body_kernel"].get<double>(),
      out["loop_device_us_per_body_kernel"].get<double>() /
          out["unrolled_plain_device_us_per_body_kernel"].get<double>(),
      out["loop_iterations"].get<int>(),
      out["loop_device_us_per_body_kernel"].get<double>() /
          out["unrolled_device_us_per_body_kernel"].get<double>());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  cudaFree(tables);
  cudaFree(other_tables);
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
