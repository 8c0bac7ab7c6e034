// cuDNN's fused attention (runtime/cuda/cudnn_sdpa.h) on the device against the reference
// Attention op: f16 and bf16, grouped and multi-query heads, causal with fewer and with more
// queries than keys, lengths that are not multiples of any tile, Q/K/V read in place from a
// packed [B, S, 3, H, D] projection, and the native CUDA graph path (populate into a child graph
// of ours, then update it to new buffers in place). Skips without a device or without cuDNN.
#ifdef GF_HAVE_CUDA

#include <cstdio>
#include <filesystem>

#include "codegen/cuda/nvrtc_compiler.h"
#include "cuda_anchor_cases.h"
#include "cuda_device_runner.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/cudnn_sdpa.h"
#include "unit/test_cpu_codegen_util.h"

namespace gf {
namespace {

using testing::AnchorCase;
using testing::CudaTestDevice;
using testing::DeviceBuffer;

struct SdpaCase {
  std::string name;
  int64_t b, hq, hkv, sq, skv, d;
  bool causal;
  DType dtype;
  float scale = 0;  // 0: 1/sqrt(d)
};

std::vector<SdpaCase> sdpa_cases() {
  const DType f16 = DType::kF16, bf16 = DType::kBF16;
  return {
      {"mha_d64_f16", 2, 4, 4, 64, 64, 64, false, f16},
      {"gqa_odd_lengths_d128_f16", 2, 8, 2, 100, 200, 128, false, f16},
      {"multi_query_d64_bf16", 1, 6, 1, 33, 77, 64, false, bf16},
      {"causal_square_d128_bf16", 1, 2, 1, 130, 130, 128, true, bf16},
      {"causal_fewer_queries_d64_f16", 2, 4, 2, 19, 70, 64, true, f16},
      {"causal_more_queries_d64_f16", 1, 4, 4, 70, 50, 64, true, f16},
      {"decode_one_query_d128_bf16", 3, 8, 2, 1, 1000, 128, false, bf16},
      {"scaled_d32_f16", 2, 3, 3, 40, 45, 32, false, f16, 0.7f},
  };
}

AnchorCase reference_case(const SdpaCase& c) {
  Attributes a;
  if (c.causal) a.set("is_causal", int64_t{1});
  if (c.scale != 0) a.set("scale", c.scale);
  return testing::make_anchor_case(
      c.name, Op::kAttention, testing::qkv4(c.b, c.hq, c.hkv, c.sq, c.skv, c.d, c.d, c.dtype, 7),
      std::move(a), c.dtype);
}

cuda::SdpaDims dims_of(const SdpaCase& c) {
  const float scale = c.scale != 0 ? c.scale : 1.0f / std::sqrt(static_cast<float>(c.d));
  return cuda::SdpaDims::contiguous(c.b, c.hq, c.hkv, c.sq, c.skv, c.d, c.dtype, c.causal, scale);
}

void* ptr(const DeviceBuffer& b) {
  return reinterpret_cast<void*>(b.ptr());
}

class CudnnSdpaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cudnn_available())
      GTEST_SKIP() << "built without cuDNN (configure with -DGF_CUDNN_ROOT)";
    std::string reason;
    if (!CudaTestDevice::get(&reason)) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  static cuda::CudnnHandle& handle() {
    static cuda::CudnnHandle h;
    return h;
  }

  // Device copies of c's Q, K, V, an output poisoned with NaN, and the workspace.
  struct Buffers {
    std::vector<std::unique_ptr<DeviceBuffer>> in;
    std::unique_ptr<DeviceBuffer> out, workspace;
    Tensor result;
    cuda::SdpaBuffers view() const {
      return {ptr(*in[0]), ptr(*in[1]), ptr(*in[2]), ptr(*out),
              workspace ? ptr(*workspace) : nullptr};
    }
    void read_back() {
      GF_CU(cuda_driver().cuCtxSynchronize());
      GF_CU(cuda_driver().cuMemcpyDtoH(result.raw(), out->ptr(), result.nbytes()));
    }
  };
  static Buffers upload(const AnchorCase& c, size_t workspace) {
    Buffers b;
    for (const Tensor& t : c.inputs) {
      b.in.push_back(std::make_unique<DeviceBuffer>(t.nbytes()));
      GF_CU(cuda_driver().cuMemcpyHtoD(b.in.back()->ptr(), t.raw(), t.nbytes()));
    }
    const TensorType& type = c.graph.value(c.node().outputs[0]).type;
    b.result = Tensor(type.dtype, type.shape.static_dims());
    b.out = std::make_unique<DeviceBuffer>(b.result.nbytes());
    GF_CU(cuda_driver().cuMemsetD8(b.out->ptr(), 0xff, b.result.nbytes()));
    if (workspace > 0) b.workspace = std::make_unique<DeviceBuffer>(workspace);
    return b;
  }
  static void expect_reference(const AnchorCase& c, const Tensor& got) {
    const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
    testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
  }
};

TEST_F(CudnnSdpaTest, MatchesTheReferenceAttention) {
  for (const SdpaCase& sc : sdpa_cases()) {
    SCOPED_TRACE(sc.name);
    const AnchorCase c = reference_case(sc);
    const cuda::CudnnSdpa sdpa(handle(), dims_of(sc), "test '" + sc.name + "'");
    Buffers b = upload(c, sdpa.workspace_bytes());
    sdpa.run(b.view(), nullptr);
    b.read_back();
    expect_reference(c, b.result);
  }
}

// Q, K and V as slices of one [B, S, 3, H, D] tensor (a fused QKV projection's output), O as
// [B, S, H, D]: cuDNN reads and writes them in place through their strides.
TEST_F(CudnnSdpaTest, ReadsAndWritesStridedViewsInPlace) {
  const SdpaCase sc{"packed_qkv_causal_d64_f16", 2, 4, 4, 37, 37, 64, true, DType::kF16};
  const AnchorCase c = reference_case(sc);
  const int64_t B = sc.b, S = sc.sq, H = sc.hq, D = sc.d;
  Tensor packed(DType::kF16, {B, S, 3, H, D});
  for (int64_t which = 0; which < 3; ++which) {
    const Tensor& src = c.inputs[static_cast<size_t>(which)];  // [B, H, S, D]
    for (int64_t bi = 0; bi < B; ++bi)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t d = 0; d < D; ++d) {
            packed.data<Half>()[(((bi * S + s) * 3 + which) * H + h) * D + d] =
                src.data<Half>()[((bi * H + h) * S + s) * D + d];
          }
  }
  cuda::SdpaDims dims = dims_of(sc);
  dims.q_strides = dims.k_strides = dims.v_strides = {S * 3 * H * D, D, 3 * H * D, 1};
  dims.o_strides = {S * H * D, D, H * D, 1};
  const cuda::CudnnSdpa sdpa(handle(), dims, "test '" + sc.name + "'");
  DeviceBuffer qkv(packed.nbytes()), out(static_cast<size_t>(B * S * H * D * 2));
  GF_CU(cuda_driver().cuMemcpyHtoD(qkv.ptr(), packed.raw(), packed.nbytes()));
  GF_CU(cuda_driver().cuMemsetD8(out.ptr(), 0xff, out.bytes()));
  std::unique_ptr<DeviceBuffer> ws;
  if (sdpa.workspace_bytes() > 0) ws = std::make_unique<DeviceBuffer>(sdpa.workspace_bytes());
  char* base = static_cast<char*>(ptr(qkv));
  sdpa.run({base, base + H * D * 2, base + 2 * H * D * 2, ptr(out), ws ? ptr(*ws) : nullptr},
           nullptr);
  GF_CU(cuda_driver().cuCtxSynchronize());
  Tensor bshd(DType::kF16, {B, S, H, D});
  GF_CU(cuda_driver().cuMemcpyDtoH(bshd.raw(), out.ptr(), bshd.nbytes()));
  Tensor got(DType::kF16, {B, H, S, D});
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < D; ++d) {
          got.data<Half>()[((bi * H + h) * S + s) * D + d] =
              bshd.data<Half>()[((bi * S + s) * H + h) * D + d];
        }
  expect_reference(c, got);
}

// The native CUDA graph path: cuDNN fills a graph we add as one child node of ours; after an
// update to new buffers, the instantiated graph writes the new output from the new inputs and
// leaves the old output alone.
TEST_F(CudnnSdpaTest, PopulatesAChildGraphAndUpdatesItInPlace) {
  const SdpaCase first{"native_a", 2, 8, 2, 100, 200, 128, true, DType::kBF16};
  SdpaCase second = first;
  second.name = "native_b";
  const cuda::CudnnSdpa sdpa(handle(), dims_of(first), "test 'native'");
  if (!sdpa.native_graph()) {
    GTEST_SKIP() << "cuDNN chose " << sdpa.engine() << ", which lacks the native CUDA graph API";
  }
  const AnchorCase a = reference_case(first);
  AnchorCase b = reference_case(second);
  b.inputs = testing::qkv4(2, 8, 2, 100, 200, 128, 128, DType::kBF16, 99);  // other values
  Buffers ba = upload(a, sdpa.workspace_bytes()), bb = upload(b, sdpa.workspace_bytes());

  // Driver graph handles are the runtime's (CUgraph is cudaGraph_t).
  const CudaDriverApi& cu = cuda_driver();
  CUgraph child = nullptr, parent = nullptr;
  GF_CU(cu.cuGraphCreate(&child, 0));
  GF_CU(cu.cuGraphCreate(&parent, 0));
  sdpa.populate(ba.view(), child);
  CUgraphNode node = nullptr;
  GF_CU(cu.cuGraphAddChildGraphNode(&node, parent, nullptr, 0, child));
  CUgraphExec exec = nullptr;
  GF_CU(cu.cuGraphInstantiateWithFlags(&exec, parent, 0));
  GF_CU(cu.cuGraphLaunch(exec, nullptr));
  ba.read_back();
  expect_reference(a, ba.result);

  GF_CU(cu.cuMemsetD8(ba.out->ptr(), 0, ba.result.nbytes()));
  sdpa.update(bb.view(), child);
  GF_CU(cu.cuGraphExecChildGraphNodeSetParams(exec, node, child));
  GF_CU(cu.cuGraphLaunch(exec, nullptr));
  bb.read_back();
  expect_reference(b, bb.result);
  ba.read_back();
  for (int64_t i = 0; i < ba.result.numel(); ++i)
    ASSERT_EQ(ba.result.data<BFloat16>()[i].bits, 0) << i;
  GF_CU(cu.cuGraphExecDestroy(exec));
  GF_CU(cu.cuGraphDestroy(parent));
  GF_CU(cu.cuGraphDestroy(child));
}

// Calls of one shape on one handle (the attention of every layer of a model) share one plan
// and keep their own buffers, run eagerly and as two child graphs of one parent graph.
TEST_F(CudnnSdpaTest, CallsOfOneShapeShareAPlan) {
  const cuda::CudnnHandle h;  // a handle of this test alone: its plan count starts at 0
  const SdpaCase sc{"shared_plan", 2, 8, 2, 100, 130, 64, true, DType::kF16};
  const cuda::CudnnSdpa first(h, dims_of(sc), "layer 1"), second(h, dims_of(sc), "layer 2");
  EXPECT_EQ(h.shared_plans(), 1u);
  SdpaCase noncausal = sc;
  noncausal.causal = false;
  const cuda::CudnnSdpa other(h, dims_of(noncausal), "other");
  EXPECT_EQ(h.shared_plans(), 2u);
  EXPECT_EQ(first.engine(), second.engine());

  const AnchorCase a = reference_case(sc);
  AnchorCase b = reference_case(sc);
  b.inputs = testing::qkv4(2, 8, 2, 100, 130, 64, 64, DType::kF16, 41);  // other values
  Buffers ba = upload(a, first.workspace_bytes()), bb = upload(b, second.workspace_bytes());
  first.run(ba.view(), nullptr);
  second.run(bb.view(), nullptr);
  ba.read_back();
  bb.read_back();
  expect_reference(a, ba.result);
  expect_reference(b, bb.result);
  if (!first.native_graph()) return;

  const CudaDriverApi& cu = cuda_driver();
  for (const Buffers* x : {&ba, &bb}) GF_CU(cu.cuMemsetD8(x->out->ptr(), 0xff, x->result.nbytes()));
  CUgraph c1 = nullptr, c2 = nullptr, parent = nullptr;
  GF_CU(cu.cuGraphCreate(&c1, 0));
  GF_CU(cu.cuGraphCreate(&c2, 0));
  GF_CU(cu.cuGraphCreate(&parent, 0));
  first.populate(ba.view(), c1);
  second.populate(bb.view(), c2);
  CUgraphNode n1 = nullptr, n2 = nullptr;
  GF_CU(cu.cuGraphAddChildGraphNode(&n1, parent, nullptr, 0, c1));
  GF_CU(cu.cuGraphAddChildGraphNode(&n2, parent, &n1, 1, c2));
  CUgraphExec exec = nullptr;
  GF_CU(cu.cuGraphInstantiateWithFlags(&exec, parent, 0));
  GF_CU(cu.cuGraphLaunch(exec, nullptr));
  ba.read_back();
  bb.read_back();
  expect_reference(a, ba.result);
  expect_reference(b, bb.result);
  GF_CU(cu.cuGraphExecDestroy(exec));
  GF_CU(cu.cuGraphDestroy(parent));
  GF_CU(cu.cuGraphDestroy(c2));
  GF_CU(cu.cuGraphDestroy(c1));
}

// A session's Attention node through each path (SessionOptions::attention): the same answer,
// and the step count says which path ran. kAuto times both on this shape (large enough) and
// keeps the faster, which the test prints.
TEST_F(CudnnSdpaTest, SessionsRunAttentionThroughEitherPath) {
  const SdpaCase sc{"session_causal_gqa_d128_bf16", 2, 8, 2, 1000, 1000, 128, true, DType::kBF16};
  const AnchorCase c = reference_case(sc);
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  for (AttentionPath path :
       {AttentionPath::kGenerated, AttentionPath::kCudnn, AttentionPath::kAuto}) {
    SCOPED_TRACE(std::string(attention_path_name(path)));
    SessionOptions o{Device::kCuda};
    o.attention = path;
    Session session(c.graph, o);
    const std::vector<Tensor> got = session.run(c.inputs);
    testing::expect_values(got.at(0), want.dims(), testing::as_doubles(want), c.rtol, c.atol);
    const SessionStats st = session.stats();
    EXPECT_EQ(st.cudnn_attention_steps, path == AttentionPath::kCudnn ? 1
                                        : path == AttentionPath::kGenerated
                                            ? 0
                                            : st.cudnn_attention_steps);
    EXPECT_EQ(st.cuda_graph_programs, st.programs_compiled);
    std::printf("attention %s: %s\n", std::string(attention_path_name(path)).c_str(),
                st.cudnn_attention_steps ? "cuDNN" : "ours");
  }
  // kAuto kept its choice beside the kernel cache for the next process.
  const codegen::NvrtcOptions& cache = cuda::process_nvrtc().options();
  if (cache.use_disk_cache) {
    int choices = 0;
    for (const auto& entry : std::filesystem::directory_iterator(cache.cache_dir)) {
      const std::string name = entry.path().filename().string();
      choices += name.rfind("attention_", 0) == 0 && entry.path().extension() == ".choice";
    }
    EXPECT_GT(choices, 0) << cache.cache_dir;
  }
}

TEST_F(CudnnSdpaTest, RefusesWhatItCannotRunByName) {
  const auto refused = [&](cuda::SdpaDims d, const std::string& why) {
    try {
      cuda::CudnnSdpa sdpa(handle(), d, "node 'attn' (Attention)");
      ADD_FAILURE() << "accepted " << d.to_string();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("node 'attn' (Attention)"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(cuda::SdpaDims::contiguous(1, 2, 2, 8, 8, 64, DType::kF32, false, 0.125f), "f16 or bf16");
  refused(cuda::SdpaDims::contiguous(1, 2, 2, 8, 8, 20, DType::kF16, false, 0.2f), "multiple of 8");
  refused(cuda::SdpaDims::contiguous(1, 2, 2, 8, 0, 64, DType::kF16, false, 0.125f), "no keys");
  try {
    cuda::CudnnSdpa sdpa(handle(),
                         cuda::SdpaDims::contiguous(1, 3, 2, 8, 8, 64, DType::kF16, false, 0.125f),
                         "node 'attn' (Attention)");
    ADD_FAILURE() << "accepted 3 query heads over 2 key heads";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("do not divide"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
