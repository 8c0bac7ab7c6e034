// Kernel graphs on the GPU (label gpu): built from launches with their dependency edges, run
// with correct results; put flat into a caller's graph between the caller's own nodes (no child
// graph node anywhere); re-bound to new buffers by rewriting the pointer tables only.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <filesystem>

#include "codegen/cuda/nvrtc_compiler.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/kernel_graph.h"
#include "test_util.h"

namespace gf {
namespace {

#define GF_CUDART(call) ASSERT_EQ((call), cudaSuccess) << #call

constexpr int kN = 1000;

// y = x + 1, y = x * 2, z = a + b: enough to give a diamond.
constexpr const char* kKernels = R"(
extern "C" __global__ void add_one(void* const* b) {
  const float* x = (const float*)b[0]; float* y = (float*)b[1];
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 1000) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void twice(void* const* b) {
  const float* x = (const float*)b[0]; float* y = (float*)b[1];
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 1000) y[i] = x[i] * 2.0f;
}
extern "C" __global__ void sum(void* const* b) {
  const float* x = (const float*)b[0]; const float* y = (const float*)b[1]; float* z = (float*)b[2];
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 1000) z[i] = x[i] + y[i];
}
)";

class KernelGraphGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
    const CudaDeviceInfo& d = probe.devices.front();
    GF_CUDART(cudaSetDevice(0));
    GF_CUDART(cudaFree(nullptr));
    codegen::NvrtcOptions o;
    o.cache_dir = std::filesystem::temp_directory_path() / ("gf_test_kernel_graph_" + std::to_string(getpid()));
    codegen::NvrtcCompiler nvrtc(o);
    module_ = CudaModule::load(*nvrtc.compile(kKernels, d.compute_major * 10 + d.compute_minor), "graph test");
    std::filesystem::remove_all(o.cache_dir);
    for (float*& p : buffers_) GF_CUDART(cudaMalloc(reinterpret_cast<void**>(&p), kN * sizeof(float)));
    GF_CUDART(cudaMalloc(reinterpret_cast<void**>(&tables_), 16 * sizeof(void*)));
  }
  void TearDown() override {
    for (float* p : buffers_) cudaFree(p);
    cudaFree(tables_);
  }
  // Tables: add_one {x, a}, twice {x, b}, sum {a, b, z}; x, a, b, z are buffers_[base..base+3].
  void write_tables(int base) {
    void* t[7] = {buffers_[base], buffers_[base + 1], buffers_[base], buffers_[base + 2],
                  buffers_[base + 1], buffers_[base + 2], buffers_[base + 3]};
    ASSERT_EQ(cudaMemcpy(tables_, t, sizeof(t), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<cuda::GraphKernel> diamond() const {
    auto k = [&](const char* name, int table_entry, std::vector<int> deps) {
      cuda::GraphKernel g;
      g.fn = module_->function(name);
      g.grid = (kN + 255) / 256;
      g.block = 256;
      g.table = reinterpret_cast<CUdeviceptr>(tables_) + table_entry * sizeof(void*);
      g.deps = std::move(deps);
      return g;
    };
    return {k("add_one", 0, {}), k("twice", 2, {}), k("sum", 4, {0, 1})};
  }
  void fill(int buffer, float value) {
    std::vector<float> h(kN, value);
    ASSERT_EQ(cudaMemcpy(buffers_[buffer], h.data(), kN * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<float> read(int buffer) {
    std::vector<float> h(kN);
    EXPECT_EQ(cudaMemcpy(h.data(), buffers_[buffer], kN * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  std::unique_ptr<CudaModule> module_;
  float* buffers_[8] = {};
  void** tables_ = nullptr;
};

TEST_F(KernelGraphGpu, RunsTheDiamondAndRebindsThroughTheTablesOnly) {
  write_tables(0);
  fill(0, 3.0f);
  cuda::KernelGraph graph(diamond());
  EXPECT_EQ(graph.node_count(), 3u);
  graph.launch(nullptr);
  GF_CUDART(cudaDeviceSynchronize());
  for (float v : read(3)) ASSERT_EQ(v, (3.0f + 1) + 3.0f * 2);
  // New buffers: only the tables change; the instantiated graph is launched as it is.
  write_tables(4);
  fill(4, -1.5f);
  graph.launch(nullptr);
  GF_CUDART(cudaDeviceSynchronize());
  for (float v : read(7)) ASSERT_EQ(v, (-1.5f + 1) + -1.5f * 2);
  for (float v : read(3)) ASSERT_EQ(v, 10.0f);  // the first outputs untouched
}

TEST_F(KernelGraphGpu, PopulatesFlatIntoACallersGraphBetweenItsOwnNodes) {
  write_tables(0);
  cudaGraph_t caller;
  GF_CUDART(cudaGraphCreate(&caller, 0));
  // The caller's node before ours writes x; the one after copies z somewhere of its own.
  cudaGraphNode_t before, after;
  cudaMemsetParams ms{};
  ms.dst = buffers_[0];
  ms.value = 0x40400000u;  // 3.0f
  ms.elementSize = 4;
  ms.width = kN;
  ms.height = 1;
  GF_CUDART(cudaGraphAddMemsetNode(&before, caller, nullptr, 0, &ms));
  const cuda::GraphSegment seg = cuda::populate_kernels(caller, &before, 1, diamond());
  EXPECT_EQ(seg.entry.size(), 2u);  // add_one and twice both wait on the caller's memset
  ASSERT_EQ(seg.exit.size(), 1u);   // sum
  GF_CUDART(cudaGraphAddMemcpyNode1D(&after, caller, seg.exit.data(), seg.exit.size(), buffers_[5], buffers_[3],
                                     kN * sizeof(float), cudaMemcpyDeviceToDevice));
  size_t count = 0;
  GF_CUDART(cudaGraphGetNodes(caller, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  GF_CUDART(cudaGraphGetNodes(caller, nodes.data(), &count));
  EXPECT_EQ(count, 5u);
  int kernels = 0;
  for (cudaGraphNode_t n : nodes) {
    cudaGraphNodeType type;
    GF_CUDART(cudaGraphNodeGetType(n, &type));
    EXPECT_NE(type, cudaGraphNodeTypeGraph) << "a child graph node";
    kernels += type == cudaGraphNodeTypeKernel;
  }
  EXPECT_EQ(kernels, 3);
  cudaGraphExec_t exec;
  GF_CUDART(cudaGraphInstantiate(&exec, caller, 0));
  GF_CUDART(cudaGraphLaunch(exec, nullptr));
  GF_CUDART(cudaDeviceSynchronize());
  for (float v : read(5)) ASSERT_EQ(v, 10.0f);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(caller);
}

TEST_F(KernelGraphGpu, RefusesADependencyOnALaterKernel) {
  std::vector<cuda::GraphKernel> ks = diamond();
  ks[0].deps = {2};
  testing::expect_error([&] { cuda::KernelGraph g(ks); }, ErrorCode::kInvalidArgument,
                        {"graph kernel 0 depends on kernel 2"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
