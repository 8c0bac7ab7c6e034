// The CUDA anchor kernels (attention, pools, direct Conv) without a GPU: every case of
// tests/gpu/cuda_anchor_cases.h is emitted and compiled by NVRTC for sm_90, launch configs are
// checked, and what has no kernel is refused with kUnsupported naming the node. Running them is
// tests/gpu/test_cuda_anchor_kernels.cpp. Also the cuDNN wrapper's behaviour without a device.
#ifdef GF_HAVE_CUDA

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <set>

#include "codegen/cuda/anchor_attention.h"
#include "codegen/cuda/anchor_kernels.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "gpu/cuda_anchor_cases.h"
#include "graphfuse/device.h"
#include "runtime/cuda/cudnn_conv.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using codegen::emit_anchor_kernel;
using testing::anchor_data;
using testing::AnchorCase;
using testing::expect_error;

std::string kernel_name(const AnchorCase& c) {
  return "anchor_" + c.name;
}

// Every kernel a case may take (the split-KV decode kernels included).
codegen::CudaEmitOptions every_kernel() {
  codegen::CudaEmitOptions o;
  o.split_kv_attention = true;
  return o;
}

int64_t output_numel(const AnchorCase& c) {
  int64_t n = 1;
  for (int64_t d : c.graph.value(c.node().outputs[0]).type.shape.static_dims()) n *= d;
  return n;
}

TEST(CudaAnchorKernels, EveryCaseEmitsTheDocumentedEntryPointAndASaneLaunch) {
  const std::vector<AnchorCase> cases = testing::all_anchor_cases();
  ASSERT_GE(cases.size(), 30u);
  for (const AnchorCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(codegen::has_cuda_anchor_kernel(c.node().op));
    const codegen::CudaKernelSource src =
        emit_anchor_kernel(c.node(), c.graph, kernel_name(c), every_kernel());
    EXPECT_EQ(src.name, kernel_name(c));
    EXPECT_EQ(src.source.rfind("// node '" + c.name + "' (" + std::string(op_name(c.node().op)), 0),
              0u)
        << src.source.substr(0, 200);
    const bool decode = src.source.find("split across the keys") != std::string::npos;
    const uint32_t cluster = src.launch.cluster_blocks;
    if (!decode) {
      EXPECT_EQ(cluster, 1u);
    }
    EXPECT_TRUE(cluster == 1 || cluster == 2 || cluster == 4 || cluster == 8) << cluster;
    const std::string clusters =
        cluster > 1 ? "__cluster_dims__(" + std::to_string(cluster) + ", 1, 1) " : "";
    // The wgmma attention kernel also asks for two resident blocks per SM where they fit.
    const bool wgmma = src.source.find("wgmma tensor cores") != std::string::npos;
    const std::string bounds =
        std::to_string(src.launch.block) +
        (wgmma && src.source.find(", 2) ") != std::string::npos ? ", 2" : "");
    EXPECT_NE(src.source.find("extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " +
                              clusters + kernel_name(c) + "(void* const* buffers)"),
              std::string::npos);
    EXPECT_EQ(src.source.find("#include"), std::string::npos);
    EXPECT_GE(src.launch.block, 32u);
    EXPECT_LE(src.launch.block, 1024u);
    EXPECT_EQ(src.launch.block % 32, 0u);
    // Static shared memory (<= 48 KiB), except the tensor-core attention kernels' Q, K and V
    // tiles (dynamic: at most 64 KiB for mma.sync, the 227 KiB a Hopper block may take for
    // wgmma) and the decode kernel's rings of K/V stages (dynamic, at most 128 KiB: one block
    // per SM on sm_90).
    if (decode) {
      EXPECT_GT(src.launch.dynamic_shared_bytes, 0u);
      EXPECT_LE(src.launch.dynamic_shared_bytes, 128u * 1024);
    } else if (src.source.find("tensor cores") == std::string::npos) {
      EXPECT_EQ(src.launch.dynamic_shared_bytes, 0u);
    } else {
      EXPECT_GT(src.launch.dynamic_shared_bytes, 0u);
      EXPECT_LE(src.launch.dynamic_shared_bytes, wgmma ? 227u * 1024 : 64u * 1024);
    }
    if (output_numel(c) == 0) {
      EXPECT_EQ(src.launch.grid, 0u);
    } else {
      EXPECT_GE(src.launch.grid, 1u);
    }
    // Same node, same source: the kernel cache keys on it.
    EXPECT_EQ(emit_anchor_kernel(c.node(), c.graph, kernel_name(c), every_kernel()).source,
              src.source);
  }
}

TEST(CudaAnchorKernels, EveryCaseCompilesWithNvrtcForSm90) {
  const std::vector<AnchorCase> cases = testing::all_anchor_cases();
  std::vector<std::string> sources;
  std::vector<codegen::ArchTarget> targets;
  for (const AnchorCase& c : cases) {
    const codegen::CudaKernelSource src =
        emit_anchor_kernel(c.node(), c.graph, kernel_name(c), every_kernel());
    sources.push_back(src.source);
    targets.push_back(codegen::arch_target_of(src));
  }
  codegen::NvrtcOptions o;
  o.cache_dir = fs::temp_directory_path() / ("gf_test_cuda_anchor_" + std::to_string(getpid()));
  o.use_disk_cache = false;
  codegen::NvrtcCompiler compiler(o);
  const auto cubins = compiler.compile_all(sources, 90, targets);
  for (size_t i = 0; i < cubins.size(); ++i) {
    EXPECT_FALSE(cubins[i]->empty()) << cases[i].name;
  }
  std::error_code ec;
  fs::remove_all(o.cache_dir, ec);
}

TEST(CudaAnchorKernels, BuffersArePresentInputsThenOutputs) {
  // Attention with the mask left out but a later (past-key) slot named: the hole is skipped.
  Node n{Op::kAttention, "a", {3, 5, 7, kNoValue}, {9}, {}};
  EXPECT_EQ(codegen::anchor_kernel_buffers(n), (std::vector<ValueId>{3, 5, 7, 9}));
  n.inputs = {1, kNoValue, 2};
  n.outputs = {4, 6};
  EXPECT_EQ(codegen::anchor_kernel_buffers(n), (std::vector<ValueId>{1, 2, 4, 6}));
}

TEST(CudaAnchorKernels, KernelsAreSpecialisedToTheNodesShapesAndAttributes) {
  const auto cases = testing::attention_cases();
  const AnchorCase& causal = cases.at(3);
  ASSERT_EQ(causal.name, "attention_causal_short_queries_f32");
  const std::string src = emit_anchor_kernel(causal.node(), causal.graph, "k").source;
  for (const char* line : {"constexpr int64_t kSq = 19;", "constexpr int64_t kSkv = 70;",
                           "constexpr int64_t kD = 40;", "constexpr bool kCausal = true;",
                           "constexpr bool kHasMask = false;", "typedef float gf_elem;"}) {
    EXPECT_NE(src.find(line), std::string::npos) << line;
  }
  const auto pools = testing::pool_cases();
  const std::string pool = emit_anchor_kernel(pools.at(1).node(), pools.at(1).graph, "p").source;
  // maxpool_ceil_dilated: 15x16, kernel 3x2, strides 2x3, dilations 2x1, pads 0,1 / 1,0, ceil.
  EXPECT_NE(pool.find("__device__ constexpr int64_t kOut[] = {7, 6};"), std::string::npos) << pool;
  EXPECT_NE(pool.find("__device__ constexpr int64_t kPadBegin[] = {0, 1};"), std::string::npos);
}

TEST(CudaAnchorKernels, SixteenBitStorageUsesTheSharedConversions) {
  const auto cases = testing::attention_cases();
  for (const AnchorCase& c : cases) {
    const std::string src = emit_anchor_kernel(c.node(), c.graph, "k").source;
    const DType t = c.inputs[0].dtype();
    if (t == DType::kF16) {
      EXPECT_NE(src.find("return gf_f32_to_f16(v);"), std::string::npos) << c.name;
    } else if (t == DType::kBF16) {
      EXPECT_NE(src.find("return gf_f32_to_bf16(v);"), std::string::npos) << c.name;
    } else {
      EXPECT_NE(src.find("typedef float gf_elem;"), std::string::npos) << c.name;
    }
  }
}

AnchorCase attention_case(DType t, std::vector<int64_t> q, std::vector<int64_t> k,
                          std::vector<int64_t> v, Attributes a = {}) {
  return testing::make_anchor_case(
      "attn", Op::kAttention, {anchor_data(q, 1, t), anchor_data(k, 2, t), anchor_data(v, 3, t)},
      std::move(a), t);
}

TEST(CudaAnchorKernels, WhatHasNoKernelIsUnsupportedWithNodeOpAndShapes) {
  // f64 attention.
  const AnchorCase f64 = attention_case(DType::kF64, {1, 2, 3, 8}, {1, 2, 4, 8}, {1, 2, 4, 8});
  expect_error([&] { emit_anchor_kernel(f64.node(), f64.graph, "k"); }, ErrorCode::kUnsupported,
               {"node 'attn'", "(Attention)", "f64[1,2,3,8]", "dtype f64"});
  // A value head too large for the per-lane registers.
  const AnchorCase wide = attention_case(DType::kF32, {1, 1, 2, 8}, {1, 1, 3, 8}, {1, 1, 3, 1024});
  expect_error([&] { emit_anchor_kernel(wide.node(), wide.graph, "k"); }, ErrorCode::kUnsupported,
               {"node 'attn'", "(Attention)", "f32[1,1,3,1024]", "value head size 1024"});
  // Symbolic batch.
  Graph g;
  const ValueId q = g.add_input("q", TensorType{DType::kF32, Shape({Dim("batch"), 2, 3, 8})});
  const ValueId k = g.add_input("k", TensorType{DType::kF32, Shape({Dim("batch"), 2, 4, 8})});
  const ValueId v = g.add_input("v", TensorType{DType::kF32, Shape({Dim("batch"), 2, 4, 8})});
  g.add_node(Op::kAttention, "sym", {q, k, v}, {"y"});
  infer_shapes(g);
  expect_error([&] { emit_anchor_kernel(g.node(0), g, "k"); }, ErrorCode::kUnsupported,
               {"node 'sym'", "(Attention)", "[batch,2,3,8]", "not static"});
  // An op without an anchor kernel.
  Graph m;
  const ValueId a = m.add_input("a", TensorType{DType::kF32, Shape({2, 3})});
  const ValueId b = m.add_input("b", TensorType{DType::kF32, Shape({3, 4})});
  m.add_node(Op::kMatMul, "mm", {a, b}, {"y"});
  infer_shapes(m);
  EXPECT_FALSE(codegen::has_cuda_anchor_kernel(Op::kMatMul));
  expect_error([&] { emit_anchor_kernel(m.node(0), m, "k"); }, ErrorCode::kUnsupported,
               {"node 'mm'", "(MatMul)", "f32[2,3]", "no CUDA kernel"});
  // MaxPool of int8 (the reference has it; the CUDA kernel does not).
  const AnchorCase i8 =
      testing::make_anchor_case("pool", Op::kMaxPool, {anchor_data({1, 1, 4, 4}, 4, DType::kI8)},
                                {{"kernel_shape", std::vector<int64_t>{2, 2}}}, DType::kI8);
  expect_error([&] { emit_anchor_kernel(i8.node(), i8.graph, "k"); }, ErrorCode::kUnsupported,
               {"node 'pool'", "(MaxPool)", "i8[1,1,4,4]", "dtype i8"});
}

TEST(CudaAnchorKernels, BadNamesSmCountsClusterSizesAndTilesAreInvalidArguments) {
  const AnchorCase c = testing::pool_cases().at(0);
  expect_error([&] { emit_anchor_kernel(c.node(), c.graph, "not-an-identifier"); },
               ErrorCode::kInvalidArgument, {"not-an-identifier", "C identifier"});
  codegen::CudaEmitOptions o;
  o.sm_count = 0;
  expect_error([&] { emit_anchor_kernel(c.node(), c.graph, "k", o); }, ErrorCode::kInvalidArgument,
               {"sm_count 0"});
  codegen::CudaEmitOptions clusters;
  clusters.decode_cluster_blocks = 17;
  expect_error([&] { emit_anchor_kernel(c.node(), c.graph, "k", clusters); },
               ErrorCode::kInvalidArgument, {"decode_cluster_blocks 17", "0..16"});
  codegen::CudaEmitOptions tiles;
  tiles.attention_key_tile = 96;
  expect_error([&] { emit_anchor_kernel(c.node(), c.graph, "k", tiles); },
               ErrorCode::kInvalidArgument, {"attention_key_tile 96", "64 or 128"});
  codegen::CudaEmitOptions groups;
  groups.attention_row_groups = 3;
  expect_error([&] { emit_anchor_kernel(c.node(), c.graph, "k", groups); },
               ErrorCode::kInvalidArgument, {"attention_row_groups 3", "1 or 2"});
  // The executor emits attention through emit_attention_kernel_for: it checks them too.
  const AnchorCase att = testing::mma_attention_cases().at(0);
  const codegen::AttentionNode a = codegen::read_attention_node(att.node(), att.graph);
  expect_error([&] { codegen::emit_attention_kernel_for(att.node(), att.graph, a, "k", groups); },
               ErrorCode::kInvalidArgument, {"attention_row_groups 3", "(Attention)"});
  expect_error([&] { codegen::emit_attention_kernel_for(att.node(), att.graph, a, "k", tiles); },
               ErrorCode::kInvalidArgument, {"attention_key_tile 96"});
}

TEST(CudaAnchorKernels, GridStrideKernelsAreBoundedByTheSmCount) {
  const AnchorCase c = testing::make_anchor_case(
      "big", Op::kAveragePool, {anchor_data({8, 64, 64, 64}, 5, DType::kF32)},
      {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
      DType::kF32);
  codegen::CudaEmitOptions o;
  o.sm_count = 10;
  const auto src = emit_anchor_kernel(c.node(), c.graph, "k", o);
  EXPECT_EQ(src.launch.grid, 10u * codegen::kCudaBlocksPerSm);
  EXPECT_EQ(src.launch.block, 256u);
}

TEST(CudaAnchorKernels, AttentionTakesTheTensorCoreKernelWhereItFits) {
  // "wgmma" on sm_90 (the default options) where that kernel takes the node, "mma" for the
  // mma.sync kernel.
  const auto emitted_kind = [](const AnchorCase& c, codegen::CudaEmitOptions o = {}) {
    const std::string src = emit_anchor_kernel(c.node(), c.graph, "k", o).source;
    if (src.find("wgmma tensor cores") != std::string::npos) return "wgmma";
    return src.find("tensor cores") != std::string::npos ? "mma" : "row";
  };
  // The wgmma kernel: head sizes 64 and 128 with at least 64 query rows, on sm_90 only.
  const auto wgmma_takes = [](const AnchorCase& c) {
    const codegen::AttentionNode a = codegen::read_attention_node(c.node(), c.graph);
    return (a.head_dim == 64 || a.head_dim == 128) && a.q_len >= 64;
  };
  for (const AnchorCase& c : testing::mma_attention_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_STREQ(emitted_kind(c), wgmma_takes(c) ? "wgmma" : "mma");
    codegen::CudaEmitOptions mma_sync;
    mma_sync.wgmma_attention = false;
    EXPECT_STREQ(emitted_kind(c, mma_sync), "mma");
    codegen::CudaEmitOptions ampere;
    ampere.compute_capability = 80;
    EXPECT_STREQ(emitted_kind(c, ampere), "mma");
    codegen::CudaEmitOptions blackwell;  // sm_90a instructions: sm_90 only
    blackwell.compute_capability = 100;
    EXPECT_STREQ(emitted_kind(c, blackwell), "mma");
    codegen::CudaEmitOptions off;
    off.tensor_core_attention = false;
    EXPECT_STREQ(emitted_kind(c, off), "row");
    codegen::CudaEmitOptions turing;
    turing.compute_capability = 75;
    EXPECT_STREQ(emitted_kind(c, turing), "row");
  }
  const DType f16 = DType::kF16;
  const auto attention = [](std::vector<Tensor> in, DType t) {
    return testing::make_anchor_case("a", Op::kAttention, std::move(in), {}, t);
  };
  // f32, a head size that is not a power of two, different Q/K and V head sizes, fewer than 8
  // query rows: the one-warp-per-row kernel.
  EXPECT_STREQ(
      emitted_kind(attention(testing::qkv4(1, 2, 2, 64, 64, 64, 64, DType::kF32, 1), DType::kF32)),
      "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 64, 64, 96, 96, f16, 1), f16)), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 64, 64, 64, 32, f16, 1), f16)), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 7, 64, 64, 64, f16, 1), f16)), "row");
  // Launch: one block of 128 threads per (batch, head, row tile); tiles of 128 query rows, or
  // of 64 where 128 would leave SMs idle. Shared memory: the Q tile and 64-key K and V tiles.
  const AnchorCase c = attention(testing::qkv4(3, 5, 1, 130, 64, 64, 64, f16, 1), f16);
  codegen::CudaEmitOptions few_sms;
  few_sms.sm_count = 20;
  few_sms.wgmma_attention = false;
  codegen::CudaKernelSource src = emit_anchor_kernel(c.node(), c.graph, "k", few_sms);
  EXPECT_EQ(src.launch.block, 128u);
  EXPECT_EQ(src.launch.grid, 3u * 5u * 2u);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 64 * (128 + 128));
  codegen::CudaEmitOptions mma_sync;  // 132 SMs: 30 blocks of 128 rows would idle most
  mma_sync.wgmma_attention = false;
  src = emit_anchor_kernel(c.node(), c.graph, "k", mma_sync);
  EXPECT_EQ(src.launch.grid, 3u * 5u * 3u);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 64 * (64 + 128));
  EXPECT_FALSE(src.arch_specific);
  // The wgmma kernel: two warpgroups per 128 query rows; Q, two K and two V tiles of 128 keys
  // (or 64), and 1024 bytes to align them; compiled for sm_90a.
  src = emit_anchor_kernel(c.node(), c.graph, "k");
  EXPECT_EQ(src.launch.block, 256u);
  EXPECT_EQ(src.launch.grid, 3u * 5u * 2u);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 64 * (128 + 4 * 128) + 1024);
  EXPECT_TRUE(src.arch_specific);
  codegen::CudaEmitOptions short_tiles;
  short_tiles.attention_key_tile = 64;
  src = emit_anchor_kernel(c.node(), c.graph, "k", short_tiles);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 64 * (128 + 4 * 64) + 1024);
  // Head size 128 takes 64-key tiles unless told otherwise: two blocks per SM fit then.
  const AnchorCase wide = attention(testing::qkv4(1, 2, 2, 256, 256, 128, 128, f16, 1), f16);
  src = emit_anchor_kernel(wide.node(), wide.graph, "k");
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 128 * (128 + 4 * 64) + 1024);
  EXPECT_NE(src.source.find("__launch_bounds__(256, 2) k("), std::string::npos);
  codegen::CudaEmitOptions long_tiles;
  long_tiles.attention_key_tile = 128;
  src = emit_anchor_kernel(wide.node(), wide.graph, "k", long_tiles);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 2u * 128 * (128 + 4 * 128) + 1024);
  EXPECT_NE(src.source.find("__launch_bounds__(256) k("), std::string::npos);
  // Fewer than 64 query rows: the mma.sync kernel.
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 63, 64, 64, 64, f16, 1), f16)), "mma");
}

TEST(CudaAnchorKernels, DecodeShapedAttentionTakesTheSplitKernelWhereItFits) {
  codegen::CudaEmitOptions on;
  on.split_kv_attention = true;
  const auto emitted_kind = [&](const AnchorCase& c,
                                std::optional<codegen::CudaEmitOptions> o = {}) {
    const std::string src = emit_anchor_kernel(c.node(), c.graph, "k", o.value_or(on)).source;
    if (src.find("split across the keys") != std::string::npos) return "split";
    return src.find("tensor cores") != std::string::npos ? "mma" : "row";
  };
  for (const AnchorCase& c : testing::decode_attention_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_STREQ(emitted_kind(c), "split");
    EXPECT_STREQ(emitted_kind(c, codegen::CudaEmitOptions{}), "split");  // the default
    codegen::CudaEmitOptions off;
    off.split_kv_attention = false;
    EXPECT_STREQ(emitted_kind(c, off), "row");
    codegen::CudaEmitOptions ampere = on;
    ampere.compute_capability = 80;
    EXPECT_STREQ(emitted_kind(c, ampere), "row");
    codegen::CudaEmitOptions blackwell = on;  // sm_100: the same 227 KiB of shared memory
    blackwell.compute_capability = 100;
    EXPECT_STREQ(emitted_kind(c, blackwell), "split");
    codegen::CudaEmitOptions consumer = on;  // sm_120: 99 KiB per block, less than the rings take
    consumer.compute_capability = 120;
    EXPECT_STREQ(emitted_kind(c, consumer), "row");
    // Clusters of blocks per (batch, key/value head), declared on the kernel: 8 on CUDA cores; on
    // tensor cores (f16/bf16, head sizes 16-128) the largest power of two up to 8 that keeps
    // 2 x cluster x (batch x key/value heads) within the SMs, else 1. On tensor cores 8 warps
    // where the grid has at most one block per SM, else 4; 8 on CUDA cores.
    const codegen::CudaKernelSource src = emit_anchor_kernel(c.node(), c.graph, "k", on);
    const codegen::AttentionNode a = codegen::read_attention_node(c.node(), c.graph);
    const bool tensor_cores = a.dtype != DType::kF32 && a.head_dim >= 16 && a.head_dim <= 128;
    EXPECT_EQ(
        src.source.find("split across the keys in clusters, tensor cores") != std::string::npos,
        tensor_cores);
    const bool wide = src.launch.grid <= static_cast<uint32_t>(on.sm_count);
    EXPECT_EQ(src.launch.block, !tensor_cores || wide ? 256u : 128u);
    const int64_t pairs = a.batch * a.kv_heads;
    int64_t cluster = 8;
    while (tensor_cores && cluster > 1 && 2 * cluster * pairs > on.sm_count) cluster /= 2;
    EXPECT_EQ(src.launch.cluster_blocks, static_cast<uint32_t>(cluster));
    EXPECT_EQ(src.launch.grid, static_cast<uint32_t>(pairs * cluster));
    EXPECT_NE(src.source.find("__cluster_dims__(" + std::to_string(cluster) +
                              ", 1, 1) k(void* const* buffers)"),
              std::string::npos);
  }
  const DType f16 = DType::kF16;
  const auto attention = [](std::vector<Tensor> in, Attributes a = {}) {
    return testing::make_anchor_case("a", Op::kAttention, std::move(in), std::move(a), DType::kF16);
  };
  // Too few keys, too many queries, causal, a head size that is not 8 x 2^n, too many rows per
  // key/value head (16 on tensor cores, 8 on CUDA cores): not split.
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 1, 255, 64, 64, f16, 1))), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 5, 512, 64, 64, f16, 1))), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 1, 512, 64, 64, f16, 1),
                                      {{"is_causal", int64_t{1}}})),
               "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 2, 2, 1, 512, 48, 48, f16, 1))), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 17, 1, 1, 512, 64, 64, f16, 1))), "row");
  EXPECT_STREQ(emitted_kind(attention(testing::qkv4(1, 16, 1, 1, 512, 64, 64, f16, 1))), "split");
  const auto attention32 = [](std::vector<Tensor> in) {
    return testing::make_anchor_case("a", Op::kAttention, std::move(in), {}, DType::kF32);
  };
  EXPECT_STREQ(emitted_kind(attention32(testing::qkv4(1, 9, 1, 1, 512, 64, 64, DType::kF32, 1))),
               "row");
  EXPECT_STREQ(emitted_kind(attention32(testing::qkv4(1, 8, 1, 1, 512, 64, 64, DType::kF32, 1))),
               "split");
  // The grid on 132 SMs: 6 (batch, key/value head) pairs take clusters of 8 (48 blocks of 8
  // warps); 32 pairs clusters of 2 (64 blocks); 128 pairs clusters of 1 (128 blocks). Asked for
  // clusters of 8 explicitly, 128 pairs take 1024 blocks of 4 warps.
  const auto launch = [&](const AnchorCase& x, int clusters = 0) {
    codegen::CudaEmitOptions o = on;
    o.decode_cluster_blocks = clusters;
    return emit_anchor_kernel(x.node(), x.graph, "k", o).launch;
  };
  const AnchorCase c = attention(testing::qkv4(3, 8, 2, 1, 4096, 128, 128, f16, 1));
  EXPECT_EQ(launch(c).grid, 3u * 2u * 8u);
  EXPECT_EQ(launch(c).block, 256u);
  // Clusters of 16 take the narrow blocks even where the grid (96 blocks) would fit the SMs.
  EXPECT_EQ(launch(c, 16).grid, 3u * 2u * 16u);
  EXPECT_EQ(launch(c, 16).block, 128u);
  const AnchorCase four = attention(testing::qkv4(4, 32, 8, 1, 4096, 128, 128, f16, 1));
  EXPECT_EQ(launch(four).cluster_blocks, 2u);
  EXPECT_EQ(launch(four).grid, 4u * 8u * 2u);
  const AnchorCase many = attention(testing::qkv4(16, 32, 8, 1, 256, 128, 128, f16, 1));
  EXPECT_EQ(launch(many).cluster_blocks, 1u);
  EXPECT_EQ(launch(many).grid, 16u * 8u);
  EXPECT_EQ(launch(many).block, 256u);
  EXPECT_EQ(launch(many, 8).grid, 16u * 8u * 8u);
  EXPECT_EQ(launch(many, 8).block, 128u);
  // More blocks than SMs (20 x 8 pairs, clusters of 1): two 96 KiB blocks per SM in one wave,
  // not 128 KiB blocks in two.
  const AnchorCase twenty = attention(testing::qkv4(20, 32, 8, 1, 256, 128, 128, f16, 1));
  EXPECT_EQ(launch(twenty).grid, 160u);
  EXPECT_EQ(launch(twenty).block, 128u);
}

TEST(CudnnConvWithoutDevice, RefusesCleanly) {
  const CudaProbe probe = probe_cuda();
  if (!cuda::cudnn_available()) {
    expect_error([] { cuda::CudnnHandle h; }, ErrorCode::kUnsupported, {"no cuDNN"});
    return;
  }
  if (!probe.devices.empty()) GTEST_SKIP() << "a CUDA device is present: see tests/gpu";
  // With cuDNN but without a device, creating the handle is a device error naming the call.
  expect_error([] { cuda::CudnnHandle h; }, ErrorCode::kDeviceError, {"cudnnCreate"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
