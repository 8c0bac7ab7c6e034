// The sm_90 tensor-core GEMM on the GPU against products computed here in double (label gpu):
// every tile, each epilogue and dtype, sizes off every tile edge (m, n not multiples of the
// tile, n not a multiple of 8, k not a multiple of 64), and more tiles than SMs (each block
// walks several); then Sessions with GemmLibrary::kGenerated against the reference interpreter,
// and a DeviceProgram rebound to new buffers (the kernel's tensor maps follow); the default
// library's choice of it.
// Skips where the GPU is not sm_90.
#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "codegen/cuda/nvrtc_compiler.h"
#include "codegen/cuda/tensor_core_gemm.h"
#include "cuda_backend_util.h"
#include "device_program_util.h"
#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/tensor_core_gemm_maps.h"
#include "test_util.h"

namespace gf {
namespace {

using codegen::TensorCoreGemmActivation;
using codegen::TensorCoreGemmBuffer;
using codegen::TensorCoreGemmSpec;
using codegen::TensorCoreGemmTile;

#define GF_CUDART(call) ASSERT_EQ((call), cudaSuccess) << #call

class TensorCoreGemmGpu : public testing::CudaDeviceTest {
 protected:
  void SetUp() override {
    testing::CudaDeviceTest::SetUp();
    if (IsSkipped()) return;
    cc_ = testing::cuda_compute_capability();
    sms_ = probe_cuda().devices.front().multiprocessors;
    if (cc_ != 90)
      GTEST_SKIP() << "the tensor-core GEMM runs on sm_90 only, this GPU is sm_" << cc_;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the primary context, current for the driver API
  }
  int cc_ = 0, sms_ = 0;
};

double activate(TensorCoreGemmActivation a, double x) {
  switch (a) {
    case TensorCoreGemmActivation::kNone:
      return x;
    case TensorCoreGemmActivation::kRelu:
      return x > 0 ? x : 0;
    case TensorCoreGemmActivation::kGeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case TensorCoreGemmActivation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

using testing::uniform_tensor;

// ||C - want|| / ||want|| over the checked rows of C: all rows for small products, the first and
// last 48 for large ones (every tile row and column position still appears); want computed in
// double from the operands. Every element must be written (not NaN).
double relative_error(const TensorCoreGemmSpec& s, const Tensor& a, const Tensor& w,
                      const Tensor& bias, const Tensor& c) {
  const auto to_double = [](const Tensor& t) {
    std::vector<double> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = t.element_as_double(static_cast<int64_t>(i));
    return v;
  };
  const std::vector<double> av = to_double(a), wv = to_double(w), bv = to_double(bias);
  double err = 0, norm = 0;
  for (int64_t r = 0; r < s.m; ++r) {
    const bool checked = s.m * s.n * s.k <= 60000000 || r < 48 || r >= s.m - 48;
    for (int64_t j = 0; j < s.n; ++j) {
      const double got = c.element_as_double(r * s.n + j);
      EXPECT_FALSE(std::isnan(got)) << "element (" << r << ", " << j << ") unwritten or NaN";
      if (std::isnan(got)) return INFINITY;
      if (!checked) continue;
      double acc = 0;
      for (int64_t i = 0; i < s.k; ++i) acc += av[r * s.k + i] * wv[j * s.k + i];
      if (s.has_bias) acc += bv[j];
      const double want = activate(s.activation, acc);
      err += (got - want) * (got - want);
      norm += want * want;
    }
  }
  return std::sqrt(err / std::max(norm, 1e-30));
}

struct Operands {
  const Tensor *a, *w, *bias;
};

// Launches one compiled kernel on device copies of the operands (C filled with NaN first: an
// unwritten element shows) and copies C back; every device buffer is freed however it ends.
void run_kernel(const TensorCoreGemmSpec& s, const codegen::CudaKernelSource& src,
                const std::string& cubin, const Operands& in, Tensor& c) {
  const std::unique_ptr<CudaModule> module = CudaModule::load(cubin, "gf_tc");
  const CUfunction fn = module->function("gf_tc");
  allow_dynamic_shared_memory(fn, src.launch.dynamic_shared_bytes, "gf_tc");
  std::vector<std::unique_ptr<testing::DeviceCopy>> copies;
  std::vector<void*> table;  // the pointer table in the kernel's order
  void* c_dev = nullptr;
  for (TensorCoreGemmBuffer role : codegen::tensor_core_gemm_buffers(s)) {
    if (role == TensorCoreGemmBuffer::kC) {
      copies.push_back(std::make_unique<testing::DeviceCopy>(c.nbytes()));
      c_dev = copies.back()->p;
      GF_CUDART(cudaMemset(c_dev, 0xff, c.nbytes()));
    } else if (role == TensorCoreGemmBuffer::kMaps) {
      const std::vector<uint8_t> maps =
          cuda::tensor_core_gemm_maps_init(s, probe_cuda().devices.front().multiprocessors);
      copies.push_back(std::make_unique<testing::DeviceCopy>(maps.size()));
      GF_CUDART(cudaMemcpy(copies.back()->p, maps.data(), maps.size(), cudaMemcpyHostToDevice));
    } else {
      copies.push_back(
          std::make_unique<testing::DeviceCopy>(role == TensorCoreGemmBuffer::kA   ? *in.a
                                                : role == TensorCoreGemmBuffer::kW ? *in.w
                                                                                   : *in.bias));
    }
    table.push_back(copies.back()->p);
  }
  const testing::DeviceCopy table_copy(table.size() * sizeof(void*));
  void* table_dev = table_copy.p;
  GF_CUDART(
      cudaMemcpy(table_dev, table.data(), table.size() * sizeof(void*), cudaMemcpyHostToDevice));
  void* params[] = {&table_dev};
  check_cu(cuda_driver().cuLaunchKernel(fn, src.launch.grid, 1, 1, src.launch.block, 1, 1,
                                        src.launch.dynamic_shared_bytes, nullptr, params, nullptr),
           "cuLaunchKernel");
  GF_CUDART(cudaDeviceSynchronize());
  GF_CUDART(cudaMemcpy(c.raw(), c_dev, c.nbytes(), cudaMemcpyDeviceToHost));
}

TEST_F(TensorCoreGemmGpu, MatchesTheDefinitionForEveryTileEpilogueAndDtype) {
  codegen::NvrtcOptions cache;
  cache.cache_dir =
      std::filesystem::temp_directory_path() / ("gf_test_tc_gemm_gpu_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(cache);
  std::mt19937 rng(11);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 64, 64},      {5, 72, 8},        {64, 64, 64},
                          {127, 200, 136},  {70, 77, 64},      {300, 1000, 776},
                          {129, 3072, 768}, {1024, 3072, 768}, {2000, 520, 96}};
  std::vector<TensorCoreGemmTile> tiles = codegen::tensor_core_gemm_tiles();
  tiles.insert(tiles.begin(), TensorCoreGemmTile{});  // the tile chosen
  struct Case {
    TensorCoreGemmSpec spec;
    Tensor a, w, bias;
    codegen::CudaKernelSource kernel;
  };
  std::vector<Case> cases;
  for (const Shape& sh : shapes) {
    for (DType dtype : {DType::kF16, DType::kBF16}) {
      for (size_t ti = 0; ti < tiles.size(); ti += (sh.m * sh.n > 1000000 ? 2 : 1)) {
        TensorCoreGemmSpec s;
        s.dtype = dtype;
        s.m = sh.m, s.n = sh.n, s.k = sh.k;
        s.tile = tiles[ti];
        const int e = static_cast<int>(cases.size() % 5);  // every epilogue meets every tile
        s.has_bias = e != 0;
        s.activation = e == 2   ? TensorCoreGemmActivation::kRelu
                       : e == 3 ? TensorCoreGemmActivation::kGeluErf
                       : e == 4 ? TensorCoreGemmActivation::kGeluTanh
                                : TensorCoreGemmActivation::kNone;
        Tensor a = uniform_tensor(rng, dtype, {s.m, s.k}, 1.0f);
        Tensor w =
            uniform_tensor(rng, dtype, {s.n, s.k}, 1.7f / std::sqrt(static_cast<float>(s.k)));
        Tensor bias = uniform_tensor(rng, dtype, {s.n}, 0.5f);
        codegen::CudaKernelSource kernel =
            codegen::emit_tensor_core_gemm_kernel(s, "gf_tc", sms_, cc_);
        cases.push_back({s, std::move(a), std::move(w), std::move(bias), std::move(kernel)});
      }
    }
  }
  // Every case's kernel compiled at once, in parallel.
  std::vector<std::string> sources;
  for (const Case& c : cases) sources.push_back(c.kernel.source);
  const std::vector<codegen::CubinPtr> cubins = compiler.compile_all(
      sources, cc_,
      std::vector<codegen::ArchTarget>(sources.size(), codegen::ArchTarget::kSpecific));
  ASSERT_EQ(cubins.size(), cases.size());
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const TensorCoreGemmSpec& s = cases[ci].spec;
    SCOPED_TRACE(s.to_string());
    Tensor c(s.dtype, {s.m, s.n});
    run_kernel(s, cases[ci].kernel, *cubins[ci], {&cases[ci].a, &cases[ci].w, &cases[ci].bias}, c);
    if (HasFatalFailure()) return;
    const double tol = s.dtype == DType::kF16 ? 2e-3 : 1e-2;
    EXPECT_LE(relative_error(s, cases[ci].a, cases[ci].w, cases[ci].bias, c), tol);
  }
  std::filesystem::remove_all(cache.cache_dir);
}

// The Gelu epilogues on every finite 16-bit value: x [1024, 64] times the identity holds them
// all, so the accumulators are the inputs themselves (checked: the product without epilogue
// gives them back, but for subnormals, which the tensor cores may flush) and each result must be
// the exact Gelu of its accumulator rounded once, as the elementwise Gelu's. Tiles of one and
// two consumer warpgroups and ping-pong, with a bias (of zeros) and without.
TEST_F(TensorCoreGemmGpu, GeluEpiloguesAreTheExactValueRoundedOnceOnEveryInput) {
  codegen::NvrtcOptions cache;
  cache.cache_dir =
      std::filesystem::temp_directory_path() / ("gf_test_tc_gemm_gelu_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(cache);
  const TensorCoreGemmTile tiles[] = {{2, 192, 4}, {1, 64, 8}, {2, 128, 5, true}};
  const TensorCoreGemmActivation acts[] = {TensorCoreGemmActivation::kNone,
                                           TensorCoreGemmActivation::kGeluErf,
                                           TensorCoreGemmActivation::kGeluTanh};
  for (DType t : {DType::kF16, DType::kBF16}) {
    Tensor x(t, {1024, 64}), identity(t, {64, 64}), bias(t, {64});
    auto* bits = static_cast<uint16_t*>(x.raw());
    for (int64_t i = 0; i < x.numel(); ++i) {
      bits[i] = static_cast<uint16_t>(i);
      if (std::isinf(x.element_as_double(i)) || std::isnan(x.element_as_double(i))) bits[i] = 0;
    }
    const uint16_t one = t == DType::kF16 ? 0x3c00 : 0x3f80, zero = 0;
    for (int64_t i = 0; i < 64 * 64; ++i)
      static_cast<uint16_t*>(identity.raw())[i] = i % 65 == 0 ? one : zero;
    std::memset(bias.raw(), 0, bias.nbytes());  // +0: adding it changes no accumulator
    std::vector<TensorCoreGemmSpec> specs;
    std::vector<std::string> sources;
    std::vector<codegen::CudaKernelSource> kernels;
    for (const TensorCoreGemmTile& tile : tiles) {
      for (TensorCoreGemmActivation act : acts) {
        TensorCoreGemmSpec s;
        s.dtype = t, s.m = 1024, s.n = 64, s.k = 64, s.tile = tile, s.activation = act;
        s.has_bias = tile.consumers == 2;  // both ways
        kernels.push_back(codegen::emit_tensor_core_gemm_kernel(s, "gf_tc", sms_, cc_));
        sources.push_back(kernels.back().source);
        specs.push_back(s);
      }
    }
    const std::vector<codegen::CubinPtr> cubins = compiler.compile_all(
        sources, cc_,
        std::vector<codegen::ArchTarget>(sources.size(), codegen::ArchTarget::kSpecific));
    Tensor product(t, {1024, 64});
    for (size_t i = 0; i < specs.size(); ++i) {
      SCOPED_TRACE(specs[i].to_string());
      Tensor c(t, {1024, 64});
      run_kernel(specs[i], kernels[i], *cubins[i], {&x, &identity, &bias}, c);
      if (HasFatalFailure()) return;
      if (specs[i].activation == TensorCoreGemmActivation::kNone) {
        product = c;
        int64_t changed = 0;
        for (int64_t j = 0; j < x.numel(); ++j) {
          const double v = x.element_as_double(j);
          const bool subnormal = std::fabs(v) < (t == DType::kF16 ? 0x1p-14 : 0x1p-126);
          changed += !subnormal && c.element_as_double(j) != v;
        }
        EXPECT_EQ(changed, 0) << "normal inputs the identity product did not give back";
        continue;
      }
      const bool tanh = specs[i].activation == TensorCoreGemmActivation::kGeluTanh;
      EXPECT_EQ(testing::gelu_16bit_misses(t, tanh, product, c), 0);
    }
  }
  std::filesystem::remove_all(cache.cache_dir);
}

// act(x W + bias) as a graph: x an input [m, k], W a constant [k, n] (stored [n, k] on the
// device), bias a constant [n]; `act` 0 none, 1 Relu, 2 Gelu (erf), 3 Gelu (tanh).
Graph mlp_layer(DType t, int64_t m, int64_t k, int64_t n, int act, bool bias) {
  std::mt19937 rng(static_cast<uint32_t>(k * 31 + n));
  GraphBuilder b("mlp");
  const ValueId x = b.input("x", t, Shape{m, k});
  const ValueId w =
      b.constant("w", uniform_tensor(rng, t, {k, n}, 1.7f / std::sqrt(static_cast<float>(k))));
  ValueId y = b.matmul(x, w);
  if (bias) y = b.add(y, b.constant("bias", uniform_tensor(rng, t, {n}, 0.5f)));
  y = act == 1 ? b.unary(Op::kRelu, y) : act >= 2 ? b.gelu(y, act == 3) : b.unary(Op::kIdentity, y);
  b.output(y, "y");
  return b.build();
}

// The product, its bias and its activation (the exact GELU included) are one kernel of ours and
// no library call, in graph and eager mode, f16 and bf16, odd sizes and the BERT MLP shape.
TEST_F(TensorCoreGemmGpu, SessionsRunProductsAndEpiloguesAsOneKernel) {
  struct Case {
    int64_t m, k, n;
    int act;
    bool bias;
  };
  const Case cases[] = {{37, 64, 200, 2, true},   {256, 768, 3072, 2, true},
                        {130, 136, 72, 0, false}, {300, 96, 520, 1, true},
                        {64, 768, 768, 3, true},  {1, 64, 64, 0, true}};
  for (const Case& c : cases) {
    for (DType t : {DType::kF16, DType::kBF16}) {
      const Graph g = mlp_layer(t, c.m, c.k, c.n, c.act, c.bias);
      const std::vector<Tensor> inputs = testing::random_inputs(g, {-1, 1}, 7);
      const std::vector<Tensor> want = ref::run_graph(g, inputs);
      for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(c.m) + "x" +
                     std::to_string(c.k) + "x" + std::to_string(c.n) + " act " +
                     std::to_string(c.act) + (mode == ExecutionMode::kGraph ? " graph" : " eager"));
        SessionOptions o{Device::kCuda};
        o.mode = mode;
        o.gemm_library = GemmLibrary::kGenerated;
        o.skinny_gemm = SkinnyGemm::kOff;  // one row: the product still comes here
        const Session s(g, o);
        // The reference rounds the product, the sum and the activation each to 16 bits.
        testing::expect_matches(s.run(inputs)[0], want[0], 2);
        const SessionStats st = s.stats();
        EXPECT_EQ(st.tensor_core_gemm_steps, 1);
        EXPECT_EQ(st.library_calls, 0);
        EXPECT_EQ(st.fused_kernels, 1);
      }
    }
  }
}

// The default library (GemmLibrary::kAuto) runs a product followed by an exact Gelu as our kernel,
// the Gelu in it and no library call; the tanh form and a bare product stay with cuBLASLt.
TEST_F(TensorCoreGemmGpu, TheDefaultLibraryTakesOurKernelForAnExactGeluOnly) {
  for (int act : {2, 3, 1}) {
    for (DType t : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " act " + std::to_string(act));
      const Graph g = mlp_layer(t, 200, 256, 384, act, true);
      const std::vector<Tensor> inputs = testing::random_inputs(g, {-1, 1}, 5);
      const Session s(g, SessionOptions{Device::kCuda});
      testing::expect_matches(s.run(inputs)[0], ref::run_graph(g, inputs)[0], 2);
      const SessionStats st = s.stats();
      EXPECT_EQ(st.tensor_core_gemm_steps, act == 2 ? 1 : 0);
      EXPECT_EQ(st.library_calls, act == 2 ? 0 : 1);
      EXPECT_EQ(st.fused_kernels, act == 2 ? 1 : 0);
    }
  }
}

// The kernel loads through tensor maps of its operands' addresses: a program run on caller
// buffers, then on other buffers (the maps rebuilt), then on the first ones again, in graph and
// eager mode, gives each run the bits of the session's own run of those inputs.
TEST_F(TensorCoreGemmGpu, DeviceProgramsRebindTheProductToNewBuffers) {
  const Graph g = mlp_layer(DType::kF16, 200, 256, 384, 2, true);
  for (ExecutionMode mode : {ExecutionMode::kGraph, ExecutionMode::kEager}) {
    SCOPED_TRACE(mode == ExecutionMode::kGraph ? "graph" : "eager");
    SessionOptions o{Device::kCuda};
    o.mode = mode;
    o.gemm_library = GemmLibrary::kGenerated;
    const Session session(g, o);
    DeviceProgram program(session, {{200, 256}});
    ASSERT_EQ(program.stats().tensor_core_gemm_steps, 1);
    cudaStream_t stream;
    GF_CUDART(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<std::vector<Tensor>> inputs;
    std::vector<Buffers> buffers;
    for (int i = 0; i < 2; ++i) {
      inputs.push_back(testing::random_inputs(g, {-1, 1}, 11 + i));
      buffers.push_back(make_buffers(inputs.back(), program, 0));
    }
    for (int i : {0, 1, 0, 1}) {
      const std::vector<Tensor> want = session.run(inputs[i]);
      GF_CUDART(cudaMemset(buffers[i].out[0]->get(), 0xff, want[0].nbytes()));
      program.run(buffers[i].bindings(), stream);
      GF_CUDART(cudaStreamSynchronize(stream));
      expect_device_equals(buffers[i].out[0]->get(), want[0]);
    }
    GF_CUDART(cudaStreamDestroy(stream));
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
