// A framework's CUDA graph with graphfuse inside it.
//
// The "framework" here owns a root graph with its own kernels (JIT-compiled with NVRTC, as
// frameworks do): one scales the input before the model, one shifts the model's output after it.
// graphfuse's nodes go between them, flat (DeviceProgram::populate: no child graph), and the
// framework's edges attach to the segment's entry and exit. The graph is instantiated once;
// moving to new buffers updates the framework's two nodes and graphfuse's segment in place (its
// binding node, and the nodes of any cuBLASLt call that uses a caller's buffer itself).
//
//   build/bin/embed_in_cuda_graph        (exits 77 where there is no CUDA device)
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "graphfuse/graphfuse.h"

namespace {

#define CHECK(call)                                                                         \
  do {                                                                                      \
    const cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));                \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

constexpr const char* kFrameworkKernels = R"(
extern "C" __global__ void scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
extern "C" __global__ void shift(float* y, float c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += c;
}
)";

// The framework's kernels, compiled for this device.
struct FrameworkKernels {
  cudaLibrary_t library = nullptr;
  cudaKernel_t scale = nullptr, shift = nullptr;
};

FrameworkKernels compile_framework_kernels() {
  int device = 0, major = 0, minor = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, kFrameworkKernels, "framework.cu", 0, nullptr, nullptr);
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str()};
  if (nvrtcCompileProgram(prog, 1, options) != NVRTC_SUCCESS) {
    std::fprintf(stderr, "NVRTC could not compile the framework's kernels\n");
    std::exit(1);
  }
  size_t size = 0;
  nvrtcGetCUBINSize(prog, &size);
  std::vector<char> cubin(size);
  nvrtcGetCUBIN(prog, cubin.data());
  nvrtcDestroyProgram(&prog);
  FrameworkKernels k;
  CHECK(cudaLibraryLoadData(&k.library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CHECK(cudaLibraryGetKernel(&k.scale, k.library, "scale"));
  CHECK(cudaLibraryGetKernel(&k.shift, k.library, "shift"));
  return k;
}

// A framework kernel node's parameters; `args` must outlive the call that takes them.
struct NodeArgs {
  float* data;
  float value;
  int n;
  void* args[3] = {&data, &value, &n};
  cudaKernelNodeParams params(cudaKernel_t k) {
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(k);
    p.gridDim = dim3(static_cast<unsigned>((n + 255) / 256));
    p.blockDim = dim3(256);
    p.kernelParams = args;
    return p;
  }
};

gf::Tensor random_tensor(std::mt19937& rng, std::vector<int64_t> dims, float scale) {
  gf::Tensor t(gf::DType::kF32, std::move(dims));
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// The model: a two-layer MLP, y = gelu(x W1 + b1) W2 + b2.
gf::Graph mlp(std::mt19937& rng, int64_t batch, int64_t width, int64_t hidden) {
  gf::GraphBuilder b("mlp");
  const gf::ValueId x = b.input("x", gf::DType::kF32, gf::Shape{batch, width});
  const gf::ValueId w1 = b.constant("w1", random_tensor(rng, {width, hidden}, 0.05f));
  const gf::ValueId b1 = b.constant("b1", random_tensor(rng, {hidden}, 0.1f));
  const gf::ValueId w2 = b.constant("w2", random_tensor(rng, {hidden, width}, 0.05f));
  const gf::ValueId b2 = b.constant("b2", random_tensor(rng, {width}, 0.1f));
  const gf::ValueId h = b.gelu(b.add(b.matmul(x, w1), b1));
  b.output(b.add(b.matmul(h, w2), b2), "y");
  return b.build();
}

}  // namespace

int main() {
  const gf::CudaProbe probe = gf::probe_cuda();
  if (probe.devices.empty()) {
    std::printf("%s: nothing to show\n", probe.reason.c_str());
    return 77;
  }
  constexpr int64_t kBatch = 64, kWidth = 256, kHidden = 1024;
  constexpr float kScale = 0.5f, kShift = 1.0f;
  const int n = static_cast<int>(kBatch * kWidth);
  std::mt19937 rng(7);
  const gf::Session session(mlp(rng, kBatch, kWidth, kHidden), gf::SessionOptions{gf::Device::kCuda});
  const gf::DeviceProgram program(session, {{kBatch, kWidth}});
  const FrameworkKernels kernels = compile_framework_kernels();

  // Two sets of the framework's buffers.
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  std::vector<gf::Tensor> inputs;
  float* x[2];
  float* y[2];
  for (int s = 0; s < 2; ++s) {
    inputs.push_back(random_tensor(rng, {kBatch, kWidth}, 1.0f));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&x[s]), bytes));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&y[s]), bytes));
    CHECK(cudaMemcpy(x[s], inputs[s].raw(), bytes, cudaMemcpyHostToDevice));
  }

  // The root graph: scale(x) -> graphfuse -> shift(y).
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  NodeArgs before_args{x[0], kScale, n}, after_args{y[0], kShift, n};
  cudaKernelNodeParams before_params = before_args.params(kernels.scale);
  cudaKernelNodeParams after_params = after_args.params(kernels.shift);
  cudaGraphNode_t before, after;
  CHECK(cudaGraphAddKernelNode(&before, graph, nullptr, 0, &before_params));
  const gf::GraphSegment segment = program.populate(graph, &before, 1, {{x[0]}, {y[0]}});
  CHECK(cudaGraphAddKernelNode(&after, graph, &segment.exit, 1, &after_params));
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::printf("root graph: %zu nodes (2 of the framework's, %zu of graphfuse's, no child graph)\n",
              nodes, segment.node_count);

  double worst = 0;
  double update_us = 0;
  for (int s = 0; s < 2; ++s) {
    if (s == 1) {  // the second buffer set: the framework's nodes and ours move to it
      before_args.data = x[1];
      after_args.data = y[1];
      before_params = before_args.params(kernels.scale);
      after_params = after_args.params(kernels.shift);
      CHECK(cudaGraphExecKernelNodeSetParams(exec, before, &before_params));
      CHECK(cudaGraphExecKernelNodeSetParams(exec, after, &after_params));
      const auto t0 = std::chrono::steady_clock::now();
      program.update(exec, segment, {{x[1]}, {y[1]}});
      update_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    }
    CHECK(cudaGraphLaunch(exec, nullptr));
    CHECK(cudaDeviceSynchronize());
    // The same computation on the host path of the same session.
    gf::Tensor scaled = inputs[static_cast<size_t>(s)];
    gf::Tensor copy(gf::DType::kF32, {kBatch, kWidth});
    for (int i = 0; i < n; ++i) copy.data<float>()[i] = scaled.data<float>()[i] * kScale;
    const gf::Tensor want = session.run({copy})[0];
    std::vector<float> got(static_cast<size_t>(n));
    CHECK(cudaMemcpy(got.data(), y[s], bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(got[static_cast<size_t>(i)]) -
                                        (want.data<float>()[i] + kShift)));
    }
  }
  std::printf("largest difference from the session's own run: %.3g\n", worst);
  std::printf("graphfuse's update of its segment: %.1f us\n", update_us);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  for (int s = 0; s < 2; ++s) {
    CHECK(cudaFree(x[s]));
    CHECK(cudaFree(y[s]));
  }
  CHECK(cudaLibraryUnload(kernels.library));
  if (worst > 1e-5) {
    std::fprintf(stderr, "the embedded program's output differs from the session's\n");
    return 1;
  }
  return 0;
}
