// Generated CUDA kernels launched on the device, against oracles: hand-built kernels against
// the fused-kernel IR evaluator, kernels lowered from small models against the reference
// interpreter running the model unfused. Every test skips where no CUDA device is present.
#ifdef GF_HAVE_CUDA

#include <cmath>
#include <cstring>
#include <map>

#include "cuda_device_runner.h"
#include "cuda_kernel_cases.h"
#include "fusion/plan.h"
#include "kernel_ir_eval.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf {
namespace {

using testing::CudaTestDevice;

// Two poisons: NaN (all ones) and a finite value, so an element the kernel leaves unwritten
// fails in at least one run whatever its expected value.
constexpr unsigned char kPoisons[] = {0xff, 0x5a};

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    device_ = CudaTestDevice::get(&reason);
    if (!device_) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  CudaTestDevice* device_ = nullptr;
};

// Values within rtol/atol, NaN where NaN is expected; bool and integer outputs byte-exact.
void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  if (want.dtype() == DType::kBool || is_integer(want.dtype())) {
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << got.type_string();
    for (int64_t i = 0; i < want.numel() && want.dtype() != DType::kBool; ++i)
      ASSERT_EQ(got.element_as_int(i), want.element_as_int(i)) << "element " << i;
    return;
  }
  testing::expect_values(got, want.dims(), testing::as_doubles(want), rtol, atol);
}

std::vector<Tensor> fresh_outputs(const fusion::FusedKernel& k, const std::vector<Tensor>& bufs) {
  std::vector<Tensor> out = bufs;
  for (size_t i = 0; i < k.buffers.size(); ++i)
    if (k.buffers[i].is_output) out[i] = Tensor(k.buffers[i].dtype, k.buffers[i].dims);
  return out;
}

class HandBuiltCudaKernels : public CudaKernels,
                             public ::testing::WithParamInterface<size_t> {};

TEST_P(HandBuiltCudaKernels, MatchTheIrEvaluator) {
  const testing::HandKernelCase c = testing::hand_kernel_cases().at(GetParam());
  std::vector<Tensor> want = fresh_outputs(c.kernel, c.buffers);
  testing::KernelIrEvaluator(Graph{}, c.kernel).run(want);
  // Vector accesses and 32-bit indices, then one scalar access per point with 64-bit indices.
  for (bool fast : {true, false}) {
    codegen::CudaEmitOptions options;
    options.vectorize = options.index32 = fast;
    for (unsigned char poison : kPoisons) {
      SCOPED_TRACE("poison " + std::to_string(poison) + (fast ? ", vectorized" : ", scalar"));
      std::vector<Tensor> got = fresh_outputs(c.kernel, c.buffers);
      device_->run(c.kernel, Graph{}, got, poison, c.round_16bit_intermediates, options);
      for (size_t i = 0; i < got.size(); ++i) {
        if (!c.kernel.buffers[i].is_output) continue;
        SCOPED_TRACE("output " + c.kernel.buffers[i].name);
        expect_close(got[i], want[i], c.rtol, c.atol);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, HandBuiltCudaKernels,
                         ::testing::Range<size_t>(0, testing::hand_kernel_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::hand_kernel_cases().at(info.param).name;
                         });

// Runs `g` group by group: pointwise and reduction groups as generated kernels on the device,
// everything else (views, opaque ops) with the reference kernels on the host.
std::vector<Tensor> run_on_device(CudaTestDevice& device, const Graph& g,
                                  const std::vector<Tensor>& inputs, unsigned char poison,
                                  int* kernels) {
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  std::map<ValueId, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs()[i]] = inputs[i];
  auto value = [&](ValueId v) -> Tensor& {
    if (!values.count(v)) values[v] = g.value(v).constant;
    return values.at(v);
  };
  for (const fusion::Group& group : plan.groups) {
    if (group.outputs.empty()) continue;  // dead: nothing reads it
    if (group.kind != fusion::GroupKind::kPointwise &&
        group.kind != fusion::GroupKind::kReduction) {
      for (NodeId id : group.nodes) {
        const Node& n = g.node(id);
        std::vector<Tensor> ins;
        for (ValueId v : n.inputs) ins.push_back(v == kNoValue ? Tensor() : value(v));
        const std::vector<Tensor> outs = ref::run_node(n, ins);
        for (size_t o = 0; o < outs.size(); ++o) values[n.outputs[o]] = outs[o];
      }
      continue;
    }
    const fusion::FusedKernel k = fusion::lower_group(g, group, "k" + std::to_string(group.id));
    std::vector<Tensor> buffers;
    for (const fusion::KernelBuffer& b : k.buffers)
      buffers.push_back(b.is_output ? Tensor(b.dtype, b.dims) : value(b.value));
    device.run(k, g, buffers, poison);
    for (size_t i = 0; i < k.buffers.size(); ++i)
      if (k.buffers[i].is_output) values[k.buffers[i].value] = buffers[i];
    ++*kernels;
  }
  std::vector<Tensor> outputs;
  for (ValueId v : g.outputs()) outputs.push_back(value(v));
  return outputs;
}

class LoweredCudaKernels : public CudaKernels, public ::testing::WithParamInterface<size_t> {};

TEST_P(LoweredCudaKernels, MatchTheReferenceInterpreter) {
  const testing::GraphCase c = testing::graph_cases().at(GetParam());
  const std::vector<Tensor> want = ref::run_graph(c.graph, c.inputs);
  for (unsigned char poison : kPoisons) {
    SCOPED_TRACE("poison " + std::to_string(poison));
    int kernels = 0;
    const std::vector<Tensor> got = run_on_device(*device_, c.graph, c.inputs, poison, &kernels);
    EXPECT_GE(kernels, 1);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      expect_close(got[i], want[i], c.rtol, c.atol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LoweredCudaKernels,
                         ::testing::Range<size_t>(0, testing::graph_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::graph_cases().at(info.param).name;
                         });

TEST_F(CudaKernels, OutOfRangeGatherIndicesReadTheNearestElement) {
  // The reference rejects these indices; the kernels clamp them (gather_cases.h has the values).
  const testing::OutOfRangeCase c = testing::out_of_range_case();
  for (unsigned char poison : kPoisons) {
    SCOPED_TRACE("poison " + std::to_string(poison));
    int kernels = 0;
    const std::vector<Tensor> got =
        run_on_device(*device_, c.gather.graph, c.gather.inputs, poison, &kernels);
    EXPECT_EQ(kernels, 4);
    ASSERT_EQ(got.size(), c.values.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      testing::expect_values(got[i], c.dims[i], c.values[i], 0, 0);
    }
  }
}

TEST_F(CudaKernels, ALargePointwiseKernelCoversEveryElementWithAGridStrideLoop) {
  // More runs of 4 points than the grid has threads (16 blocks per SM), and not a multiple of
  // 256 or 4.
  testing::HandKernelCase c = testing::single_element_case();
  const int64_t n = int64_t{device_->sm_count()} * 16 * 256 * 4 * 3 + 77;
  c.kernel.outer_dims = {n};
  c.kernel.buffers[0].dims = c.kernel.buffers[1].dims = {n};
  c.buffers = testing::buffers_for(c.kernel, {testing::case_f32({n}, 0.01f, -0.1f)});
  std::vector<double> want;
  for (int64_t i = 0; i < n; ++i) {
    const float x = c.buffers[0].data<float>()[i];
    want.push_back(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
  }
  std::vector<Tensor> got = fresh_outputs(c.kernel, c.buffers);
  device_->run(c.kernel, Graph{}, got, 0xff);
  testing::expect_values(got[1], {n}, want, 1e-6, 1e-7);
}

TEST_F(CudaKernels, MoreThanInt32MaxPointsUse64BitIndicesAndEndInTheScalarTail) {
  // u8 x + 3 over 2^31 + 77 points: 64-bit indices, runs of 16, a tail of 13.
  testing::KernelBuilder b("big_u8");
  const int64_t n = (int64_t{1} << 31) + 77;
  const int x = b.buffer("x", DType::kU8, {n}, false);
  const int y = b.buffer("y", DType::kU8, {n}, true);
  b.k.outer_dims = {n};
  const auto i = b.outer(0);
  b.store(y, i, b.op(Op::kAdd, DType::kU8, {b.load(x, i), b.constant(DType::kU8, 3)}));
  std::vector<Tensor> bufs = {Tensor(DType::kU8, {n}), Tensor(DType::kU8, {n})};
  uint8_t* in = bufs[0].data<uint8_t>();
  for (int64_t k = 0; k < n; ++k) in[k] = static_cast<uint8_t>((k * 7) >> 5);
  const auto src = device_->run(b.k, Graph{}, bufs, 0xff);
  EXPECT_FALSE(src.index32);
  EXPECT_EQ(src.vector_width, 16);
  const uint8_t* out = bufs[1].data<uint8_t>();
  int64_t wrong = 0, first_wrong = -1;
  for (int64_t k = 0; k < n; ++k) {
    if (out[k] != static_cast<uint8_t>(in[k] + 3)) {
      if (first_wrong < 0) first_wrong = k;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0) << "first at " << first_wrong;
}

TEST_F(CudaKernels, AMissingFunctionIsADeviceError) {
  const auto src = codegen::emit_cuda_kernel(testing::single_element_case().kernel, Graph{});
  const auto cubin = device_->compiler().compile(src.source, device_->compute_capability());
  const auto module = CudaModule::load(*cubin, "single");
  testing::expect_error([&] { module->function("not_there"); }, ErrorCode::kDeviceError,
                        {"cuModuleGetFunction", "not_there", "single"});
  EXPECT_NE(module->function("single"), nullptr);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
