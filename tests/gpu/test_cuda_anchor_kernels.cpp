// The CUDA anchor kernels (attention, pools, direct Conv) launched on the device and compared
// with the reference kernels (ref::run_node) over tests/gpu/cuda_anchor_cases.h. Every test
// skips where no CUDA device is present.
#ifdef GF_HAVE_CUDA

#include "codegen/cuda/anchor_kernels.h"
#include "cuda_anchor_cases.h"
#include "cuda_device_runner.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/cuda_steps.h"
#include "unit/test_cpu_codegen_util.h"

namespace gf {
namespace {

using testing::AnchorCase;
using testing::CudaTestDevice;

// Two poisons: NaN (all ones) and a finite value, so an element the kernel leaves unwritten
// fails in at least one run whatever its expected value.
constexpr unsigned char kPoisons[] = {0xff, 0x5a};

// Emits `c`'s node for this device (for `sm_count` SMs where nonzero) and runs it (buffers
// `offset_bytes` past their allocations); returns its output.
Tensor run_anchor(CudaTestDevice& device, const AnchorCase& c, unsigned char poison,
                  codegen::CudaEmitOptions options = {}, size_t offset_bytes = 0,
                  int sm_count = 0) {
  options.sm_count = sm_count > 0 ? sm_count : device.sm_count();
  options.compute_capability = device.compute_capability();
  const codegen::CudaKernelSource src =
      codegen::emit_anchor_kernel(c.node(), c.graph, "anchor_" + c.name, options);
  std::vector<Tensor> buffers = c.inputs;
  std::vector<bool> is_output(buffers.size(), false);
  const TensorType& out = c.graph.value(c.node().outputs[0]).type;
  buffers.emplace_back(out.dtype, out.shape.static_dims());
  is_output.push_back(true);
  device.run_source(src, buffers, is_output, poison, offset_bytes);
  return buffers.back();
}

class CudaAnchorKernels : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    std::string reason;
    device_ = CudaTestDevice::get(&reason);
    if (!device_) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  CudaTestDevice* device_ = nullptr;
};

TEST_P(CudaAnchorKernels, MatchTheReferenceKernel) {
  const AnchorCase c = testing::all_anchor_cases().at(GetParam());
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  for (unsigned char poison : kPoisons) {
    SCOPED_TRACE("poison " + std::to_string(poison));
    const Tensor got = run_anchor(*device_, c, poison);
    ASSERT_EQ(got.dtype(), want.dtype());
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaAnchorKernels,
                         ::testing::Range<size_t>(0, testing::all_anchor_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::all_anchor_cases().at(info.param).name;
                         });

// The tensor-core attention kernels: their cases once more with 128-row blocks (as sized for a
// GPU of one SM), with pointers 2 bytes off 16-byte alignment (plain loads instead of cp.async),
// and with the kernel switched off (the one-warp-per-row kernel takes the same nodes). On sm_90
// the cases the wgmma kernel takes run on it with both key tiles, and on the mma.sync kernel.
class CudaMmaAttention : public CudaAnchorKernels {
 protected:
  void SetUp() override {
    CudaAnchorKernels::SetUp();
    if (device_ && device_->compute_capability() < 80)
      GTEST_SKIP() << "tensor-core attention needs sm_80";
  }
};

TEST_P(CudaMmaAttention, MatchesTheReferenceInBothBlockSizesFromUnalignedBuffersAndSwitchedOff) {
  const AnchorCase c = testing::mma_attention_cases().at(GetParam());
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  codegen::CudaEmitOptions options;
  options.compute_capability = device_->compute_capability();
  const codegen::CudaKernelSource src =
      codegen::emit_anchor_kernel(c.node(), c.graph, "k", options);
  EXPECT_NE(src.source.find("tensor cores"), std::string::npos) << "not the tensor-core kernel";
  {
    SCOPED_TRACE("128-row blocks");
    const Tensor got = run_anchor(*device_, c, 0xff, {}, 0, 1);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  {
    SCOPED_TRACE("unaligned");
    const Tensor got = run_anchor(*device_, c, 0xff, {}, 2);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  {
    SCOPED_TRACE("tensor cores off");
    codegen::CudaEmitOptions off;
    off.tensor_core_attention = false;
    const Tensor got = run_anchor(*device_, c, 0xff, off);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  if (src.source.find("wgmma tensor cores") != std::string::npos) {
    {
      SCOPED_TRACE("wgmma, 64-key tiles");
      codegen::CudaEmitOptions short_tiles;
      short_tiles.attention_key_tile = 64;
      const Tensor got = run_anchor(*device_, c, 0x5a, short_tiles);
      testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
    }
    SCOPED_TRACE("mma.sync kernel");
    codegen::CudaEmitOptions mma_sync;
    mma_sync.wgmma_attention = false;
    const Tensor got = run_anchor(*device_, c, 0xff, mma_sync);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaMmaAttention,
                         ::testing::Range<size_t>(0, testing::mma_attention_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::mma_attention_cases().at(info.param).name;
                         });

// The split-KV decode kernels (CudaEmitOptions::split_kv_attention): their cases from aligned
// and unaligned buffers (plain loads), with 4 and 8 warps per block (the tensor-core kernel's
// two sizes, chosen by how many blocks the grid has per SM; the tensor-core kernel's clusters
// shrink to 1 block on one SM), in clusters of 2, 4 and 16 blocks (16: the non-portable size),
// and with the kernel off.
class CudaDecodeAttention : public CudaAnchorKernels {
 protected:
  void SetUp() override {
    CudaAnchorKernels::SetUp();
    if (device_ && device_->compute_capability() < 90)
      GTEST_SKIP() << "thread-block clusters need sm_90";
  }
};

TEST_P(CudaDecodeAttention, MatchesTheReferenceFromAlignedAndUnalignedBuffersAndSwitchedOff) {
  const AnchorCase c = testing::decode_attention_cases().at(GetParam());
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  codegen::CudaEmitOptions options;
  options.compute_capability = device_->compute_capability();
  options.split_kv_attention = true;
  const codegen::CudaKernelSource src =
      codegen::emit_anchor_kernel(c.node(), c.graph, "k", options);
  EXPECT_NE(src.source.find("split across the keys"), std::string::npos) << "not the decode kernel";
  {
    SCOPED_TRACE("aligned");
    const Tensor got = run_anchor(*device_, c, 0xff, options);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  {
    SCOPED_TRACE("unaligned");
    const size_t offset = c.inputs[0].dtype() == DType::kF32 ? 4 : 2;
    const Tensor got = run_anchor(*device_, c, 0xff, options, offset);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  for (const int sm_count : {1, 1 << 20}) {
    SCOPED_TRACE("sm_count " + std::to_string(sm_count));
    codegen::CudaEmitOptions sized = options;
    sized.sm_count = sm_count;
    const codegen::CudaKernelSource s = codegen::emit_anchor_kernel(c.node(), c.graph, "k", sized);
    if (s.source.find("clusters, tensor cores") != std::string::npos) {
      EXPECT_EQ(s.launch.block, s.launch.grid <= static_cast<uint32_t>(sm_count) ? 256u : 128u);
      EXPECT_EQ(s.launch.cluster_blocks, sm_count == 1 ? 1u : 8u);
    }
    const Tensor got = run_anchor(*device_, c, 0xff, sized, 0, sm_count);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  for (const int clusters : {2, 4, 16}) {
    SCOPED_TRACE("clusters of " + std::to_string(clusters));
    codegen::CudaEmitOptions sized = options;
    sized.decode_cluster_blocks = clusters;
    const Tensor got = run_anchor(*device_, c, 0xff, sized);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  {
    SCOPED_TRACE("split off");
    codegen::CudaEmitOptions off;
    off.split_kv_attention = false;
    const Tensor got = run_anchor(*device_, c, 0xff, off);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaDecodeAttention,
                         ::testing::Range<size_t>(0, testing::decode_attention_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::decode_attention_cases().at(info.param).name;
                         });

class CudaAnchorKernelsLarge : public CudaAnchorKernels {};

TEST_F(CudaAnchorKernelsLarge, APoolLargerThanTheGridCoversEveryOutput) {
  // 2M outputs: several passes of the grid-stride loop on any GPU.
  const AnchorCase c = testing::make_anchor_case(
      "big_avgpool", Op::kAveragePool, {testing::anchor_data({8, 64, 64, 64}, 5, DType::kF32)},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
      DType::kF32);
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  const Tensor got = run_anchor(*device_, c, 0xff);
  testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
}

// The executor takes the decode kernel by default: a Session runs a decode-shaped node in graph
// mode (a kernel with compiled-in clusters and more than 48 KiB of dynamic shared memory, as a
// node of the program's CUDA graph) and matches the reference, replay after replay.
TEST_F(CudaAnchorKernelsLarge, DecodeAttentionRunsInASessionsGraph) {
  if (device_->compute_capability() < 90) GTEST_SKIP() << "thread-block clusters need sm_90";
  const AnchorCase c = testing::make_anchor_case(
      "session_decode", Op::kAttention,
      testing::qkv4(2, 8, 2, 1, 1000, 128, 128, DType::kBF16, 120), {}, DType::kBF16);
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  cuda::CudaProgramOptions options;
  options.attention = AttentionPath::kGenerated;
  cuda::build_cuda_steps(c.graph, state, stats, device_->sm_count(), device_->compute_capability(),
                         options);
  int split = 0;
  for (const cuda::CudaStep& step : state.steps)
    split += step.kernel.source.find("split across the keys") != std::string::npos;
  EXPECT_EQ(split, 1);
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  SessionOptions o{Device::kCuda};
  o.attention = AttentionPath::kGenerated;
  Session session(c.graph, o);
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::vector<Tensor> got = session.run(c.inputs);
    testing::expect_values(got.at(0), want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
  const SessionStats st = session.stats();
  EXPECT_EQ(st.programs_compiled, 1);
  EXPECT_EQ(st.cuda_graph_programs, 1);
}

TEST_F(CudaAnchorKernelsLarge, LongCausalAttentionInHalfPrecision) {
  // A prefill-sized head: 2 x 8 heads (2 K/V heads) x 512 positions x 64.
  const AnchorCase c = testing::make_anchor_case(
      "long_causal", Op::kAttention, testing::qkv4(2, 8, 2, 512, 512, 64, 64, DType::kF16, 70),
      {{"is_causal", int64_t{1}}}, DType::kF16);
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  const Tensor got = run_anchor(*device_, c, 0xff);
  testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
}

TEST_F(CudaAnchorKernelsLarge, LongAttentionWithHeadSize128InBfloat16) {
  // 1000 queries and keys (not multiples of the 64-row blocks and 64-key tiles), GQA 4:1.
  const AnchorCase c = testing::make_anchor_case(
      "long_d128", Op::kAttention, testing::qkv4(1, 8, 2, 1000, 1000, 128, 128, DType::kBF16, 71),
      {}, DType::kBF16);
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  const Tensor got = run_anchor(*device_, c, 0xff);
  testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
