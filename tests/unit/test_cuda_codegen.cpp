// The CUDA code generator without a GPU: kernels are emitted and compiled by NVRTC for sm_90,
// and the cubin cache is exercised. Launching them is tests/gpu/test_cuda_kernels.cpp.
#ifdef GF_HAVE_CUDA

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "codegen/common/cache_files.h"
#include "codegen/cuda/binding_kernels.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "fusion/cost_model.h"
#include "fusion/kernel_ir.h"
#include "fusion/plan.h"
#include "gpu/cuda_kernel_cases.h"
#include "graphfuse/device.h"
#include "runtime/cuda/cuda_module.h"
#include "unit/cuda_codegen_cache.h"

namespace gf {
namespace {

namespace fs = std::filesystem;
using codegen::CudaSchedule;
using testing::expect_error;

constexpr int kSm90 = 90;

using testing::CudaCodegenCache;

// The emitted source: comment first, the documented entry point, nothing included.
void expect_well_formed(const codegen::CudaKernelSource& src, const fusion::FusedKernel& k) {
  EXPECT_EQ(src.name, k.name);
  if (!k.comment.empty()) {
    const std::string first_line = "// " + k.comment.substr(0, k.comment.find('\n'));
    EXPECT_EQ(src.source.rfind(first_line, 0), 0u) << src.source.substr(0, 200);
  }
  // 256 threads a block, and for some row kernels a minimum of blocks per SM.
  const bool plain = src.source.find("extern \"C\" __global__ void __launch_bounds__(256) " +
                                     k.name + "(void* const* buffers)") != std::string::npos;
  const bool with_minimum =
      src.source.find("extern \"C\" __global__ void __launch_bounds__(256, 3) " + k.name +
                      "(void* const* buffers)") != std::string::npos;
  EXPECT_TRUE(plain || with_minimum) << src.source.substr(0, 400);
  EXPECT_EQ(src.source.find("#include"), std::string::npos);
  EXPECT_EQ(src.launch.block, 256u);
  EXPECT_EQ(src.launch.dynamic_shared_bytes, 0u);
}

void expect_cubin_for(const codegen::CubinPtr& cubin, const std::string& kernel_name) {
  ASSERT_TRUE(cubin);
  ASSERT_GT(cubin->size(), 4u);
  EXPECT_EQ(cubin->substr(0, 4), std::string("\177ELF"));
  EXPECT_NE(cubin->find(kernel_name), std::string::npos) << "no symbol " << kernel_name;
}

TEST_F(CudaCodegenCache, HandBuiltKernelsCompileForSm90) {
  std::vector<testing::HandKernelCase> cases = testing::hand_kernel_cases();
  std::vector<std::string> sources;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto src = codegen::emit_cuda_kernel(c.kernel, Graph{});
    expect_well_formed(src, c.kernel);
    sources.push_back(src.source);
  }
  codegen::NvrtcCompiler compiler(options());
  const auto cubins = compiler.compile_all(sources, kSm90);
  ASSERT_EQ(cubins.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) expect_cubin_for(cubins[i], cases[i].kernel.name);
  EXPECT_EQ(compiler.nvrtc_runs(), static_cast<int>(cases.size()));
}

TEST_F(CudaCodegenCache, BindingKernelsCompileForSm90) {
  // Their source takes the prelude's grid-dependency helpers and nothing else of it.
  const std::string source = codegen::binding_kernels_source(codegen::binding_capacity(3));
  EXPECT_EQ(source.find("#include"), std::string::npos);
  codegen::NvrtcCompiler compiler(options());
  const codegen::CubinPtr cubin = compiler.compile(source, kSm90);
  expect_cubin_for(cubin, "gf_bind_in");
  expect_cubin_for(cubin, "gf_bind_out");
}

TEST_F(CudaCodegenCache, KernelsLoweredFromGraphsCompileForSm90) {
  std::map<CudaSchedule, int> schedules;
  std::vector<std::string> sources, names;
  for (const testing::GraphCase& c : testing::graph_cases()) {
    SCOPED_TRACE(c.name);
    const fusion::Plan plan = fusion::plan_fusion(c.graph, fusion::CostModel::h200());
    int kernels = 0;
    for (const fusion::Group& group : plan.groups) {
      if (group.kind != fusion::GroupKind::kPointwise &&
          group.kind != fusion::GroupKind::kReduction)
        continue;
      const auto k = fusion::lower_group(c.graph, group, "k" + std::to_string(group.id));
      const auto src = codegen::emit_cuda_kernel(k, c.graph);
      expect_well_formed(src, k);
      ++schedules[src.schedule];
      sources.push_back(src.source);
      names.push_back(k.name);
      ++kernels;
    }
    EXPECT_GE(kernels, 1);
  }
  // The cases cover every schedule.
  EXPECT_GE(schedules[CudaSchedule::kPointwise], 4);
  EXPECT_GE(schedules[CudaSchedule::kWarpPerRow], 2);
  EXPECT_GE(schedules[CudaSchedule::kBlockPerRow], 2);
  codegen::NvrtcCompiler compiler(options());
  const auto cubins = compiler.compile_all(sources, kSm90);
  for (size_t i = 0; i < cubins.size(); ++i) expect_cubin_for(cubins[i], names[i]);
}

TEST(CudaCodegen, SchedulesAndLaunchConfigsFollowTheIterationSpace) {
  using codegen::emit_cuda_kernel;
  // Pointwise: blocks of 256 up to 16 per SM.
  const testing::HandKernelCase add = testing::broadcast_add_exp_case();  // 2590 points
  auto src = emit_cuda_kernel(add.kernel, Graph{});
  EXPECT_EQ(src.schedule, CudaSchedule::kPointwise);
  EXPECT_EQ(src.launch.grid, 3u);  // ceil(2590 / 4 / 256): runs of 4
  fusion::FusedKernel big = add.kernel;
  big.outer_dims = {4000, 1, 1000};  // runs of 2 (the stride 70 is even, not a multiple of 4)
  EXPECT_EQ(emit_cuda_kernel(big, Graph{}).vector_width, 2);
  EXPECT_EQ(emit_cuda_kernel(big, Graph{}).launch.grid, 132u * 16u);  // 2000000 runs
  codegen::CudaEmitOptions one_sm;
  one_sm.sm_count = 1;
  const auto small_gpu = emit_cuda_kernel(big, Graph{}, one_sm);
  EXPECT_EQ(small_gpu.launch.grid, 16u);
  EXPECT_EQ(small_gpu.source, emit_cuda_kernel(big, Graph{}).source);  // the grid is not baked in
  // Rows: a warp each (8 per block) up to 1024 inner elements, a block each beyond.
  src = emit_cuda_kernel(testing::softmax_rows_case(50).kernel, Graph{});
  EXPECT_EQ(src.schedule, CudaSchedule::kWarpPerRow);
  EXPECT_EQ(src.launch.grid, 1u);  // 6 rows
  src = emit_cuda_kernel(testing::softmax_rows_case(1100).kernel, Graph{});
  EXPECT_EQ(src.schedule, CudaSchedule::kBlockPerRow);
  EXPECT_EQ(src.launch.grid, 6u);
  EXPECT_NE(src.source.find("__syncthreads()"), std::string::npos);
  src = emit_cuda_kernel(testing::integer_rows_case().kernel, Graph{});
  EXPECT_EQ(src.launch.grid, 5u);  // 40 rows / 8 per block
  // Nothing to do: a grid of 0.
  fusion::FusedKernel empty = add.kernel;
  empty.outer_dims = {37, 0, 70};
  EXPECT_EQ(emit_cuda_kernel(empty, Graph{}).launch.grid, 0u);
  codegen::CudaEmitOptions no_sm;
  no_sm.sm_count = 0;
  expect_error([&] { emit_cuda_kernel(add.kernel, Graph{}, no_sm); }, ErrorCode::kInvalidArgument,
               {"add_exp", "sm_count"});
}

TEST(CudaCodegen, VectorWidthFollowsTheSmallestElementAndTheIndexExprs) {
  using codegen::emit_cuda_kernel;
  // f32 only: runs of 4; 2590 points leave a tail of 2; the bias[o2] read is per point.
  auto src = emit_cuda_kernel(testing::broadcast_add_exp_case().kernel, Graph{});
  EXPECT_EQ(src.vector_width, 4);
  EXPECT_EQ(src.alignment, 16u);
  EXPECT_EQ(src.launch.grid, 3u);  // ceil(647 runs / 256)
  EXPECT_NE(src.source.find("gf_load_vec<float, 4>"), std::string::npos);
  EXPECT_NE(src.source.find("gf_store_vec<float, 4>"), std::string::npos);
  EXPECT_NE(src.source.find("the points after the last whole run"), std::string::npos);
  // bf16 in, f32 out: runs of 8 (16 bytes of bf16, two 16-byte pieces of f32).
  src = emit_cuda_kernel(testing::vector_tail_case().kernel, Graph{});
  EXPECT_EQ(src.vector_width, 8);
  EXPECT_NE(src.source.find("gf_load_vec<uint16_t, 8>"), std::string::npos);
  EXPECT_NE(src.source.find("gf_store_vec<float, 8>"), std::string::npos);
  // A row scale constant along the run is one scalar load; the column bias a vector.
  src = emit_cuda_kernel(testing::vector_broadcast_case().kernel, Graph{});
  EXPECT_EQ(src.vector_width, 4);
  EXPECT_EQ(src.source.find("the points after the last whole run"), std::string::npos);
  EXPECT_NE(src.source.find("const float gf_u"), std::string::npos);
  EXPECT_EQ(src.source.find("b1["), std::string::npos);  // s only through its run pointer
  // Bool/u8 outputs: runs of 16.
  EXPECT_EQ(emit_cuda_kernel(testing::casts_case().kernel, Graph{}).vector_width, 16);
  // A transposed read: vector stores, scalar loads.
  src = emit_cuda_kernel(testing::transpose_case().kernel, Graph{});
  EXPECT_EQ(src.vector_width, 4);
  EXPECT_NE(src.source.find("gf_store_vec<float, 4>"), std::string::npos);
  EXPECT_EQ(src.source.find("gf_load_vec<float"), std::string::npos);
  // Off: one access per point, natural alignment.
  codegen::CudaEmitOptions scalar;
  scalar.vectorize = false;
  src = emit_cuda_kernel(testing::vector_tail_case().kernel, Graph{}, scalar);
  EXPECT_EQ(src.vector_width, 1);
  EXPECT_EQ(src.alignment, 4u);
  EXPECT_EQ(src.launch.grid, 49u);  // ceil(12297 / 256)
}

TEST(CudaCodegen, IndexArithmeticIs32BitWhenEveryBufferFits) {
  using codegen::emit_cuda_kernel;
  testing::HandKernelCase c = testing::vector_tail_case();
  auto src = emit_cuda_kernel(c.kernel, Graph{});
  EXPECT_TRUE(src.index32);
  EXPECT_NE(src.source.find("const int32_t o0"), std::string::npos);
  EXPECT_EQ(src.source.find("const int64_t o0"), std::string::npos);
  codegen::CudaEmitOptions wide;
  wide.index32 = false;
  src = emit_cuda_kernel(c.kernel, Graph{}, wide);
  EXPECT_FALSE(src.index32);
  EXPECT_NE(src.source.find("const int64_t o0"), std::string::npos);
  // 2^31 + 5 points: 64-bit, whatever the options say.
  c = testing::single_element_case();
  const int64_t n = (int64_t{1} << 31) + 5;
  c.kernel.outer_dims = {n};
  c.kernel.buffers[0].dims = c.kernel.buffers[1].dims = {n};
  src = emit_cuda_kernel(c.kernel, Graph{});
  EXPECT_FALSE(src.index32);
  EXPECT_NE(src.source.find("const int64_t o0"), std::string::npos);
  EXPECT_EQ(src.vector_width, 4);
  // A transpose: its div/mod index exprs are narrowed with the loop index.
  src = emit_cuda_kernel(testing::transpose_case().kernel, Graph{});
  EXPECT_TRUE(src.index32);
  EXPECT_EQ(src.source.find("const int64_t t"), std::string::npos) << src.source;
}

TEST(CudaCodegen, RowsThatFitInRegistersArePersistent) {
  using codegen::emit_cuda_kernel;
  // 3x50 f32 per row: runs of 2 (50 is even, not a multiple of 4), 3 chunks per lane.
  auto src = emit_cuda_kernel(testing::softmax_rows_case(50).kernel, Graph{});
  EXPECT_TRUE(src.persistent_rows);
  EXPECT_EQ(src.vector_width, 2);
  EXPECT_NE(src.source.find("the row's loads, kept in registers"), std::string::npos);
  // One read of x, however many passes.
  EXPECT_EQ(src.source.find("gf_load_vec<float, 2>(gf_c"),
            src.source.rfind("gf_load_vec<float, 2>(gf_c"));
  src = emit_cuda_kernel(testing::softmax_rows_case(1100).kernel, Graph{});
  EXPECT_TRUE(src.persistent_rows);
  EXPECT_EQ(src.vector_width, 4);
  EXPECT_EQ(src.schedule, CudaSchedule::kBlockPerRow);
  // 18000 values per row: 72 per thread of a block, more than kMaxRowValuesPerThread.
  src = emit_cuda_kernel(testing::softmax_rows_case(6000).kernel, Graph{});
  EXPECT_FALSE(src.persistent_rows);
  EXPECT_EQ(src.vector_width, 1);
  // Odd rows (45 i32): persistent, one value per load.
  src = emit_cuda_kernel(testing::integer_rows_case().kernel, Graph{});
  EXPECT_TRUE(src.persistent_rows);
  EXPECT_EQ(src.vector_width, 1);
  // Lowered bf16 LayerNorm over 4096: runs of 8, the row read once.
  const testing::GraphCase ln = testing::bf16_norm_case(Op::kLayerNormalization, 2, 4096);
  const fusion::Plan plan = fusion::plan_fusion(ln.graph, fusion::CostModel::h200());
  int checked = 0;
  for (const fusion::Group& group : plan.groups) {
    if (group.kind != fusion::GroupKind::kReduction) continue;
    const auto k = fusion::lower_group(ln.graph, group, "ln");
    src = emit_cuda_kernel(k, ln.graph);
    EXPECT_TRUE(src.persistent_rows);
    EXPECT_EQ(src.vector_width, 8);
    EXPECT_EQ(src.alignment, 16u);
    EXPECT_NE(src.source.find("gf_store_vec_pairs<8, gf_pack_bf16_exact>"),
              std::string::npos);  // rounded per op
    ++checked;
  }
  EXPECT_EQ(checked, 1);
}

TEST_F(CudaCodegenCache, EveryCaseCompilesScalarAndWithIndices64Bit) {
  std::vector<std::string> sources;
  for (bool vectorize : {false, true}) {
    for (const auto& c : testing::hand_kernel_cases()) {
      codegen::CudaEmitOptions o;
      o.vectorize = vectorize;
      o.index32 = !vectorize;
      sources.push_back(codegen::emit_cuda_kernel(c.kernel, Graph{}, o).source);
    }
  }
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all(sources, kSm90).size(), sources.size());
}

// f32 max reductions combine with the one-instruction NaN-propagating max (gf_max_nan), in the
// per-thread loop and in the warp butterfly; integer ones keep the generic gf_min / gf_max.
TEST(CudaCodegen, FloatMaxAndMinReductionsUseTheNanPropagatingInstruction) {
  for (int64_t inner : {50, 1100, 6000}) {
    const std::string src =
        codegen::emit_cuda_kernel(testing::softmax_rows_case(inner).kernel, Graph{}).source;
    EXPECT_NE(src.find("gf_acc0 = gf_max_nan(gf_acc0, "), std::string::npos) << inner;
    EXPECT_NE(src.find("gf_acc0 = gf_max_nan(gf_acc0, gf_shfl_xor(gf_acc0, gf_m))"),
              std::string::npos)
        << inner;
    EXPECT_EQ(src.find("gf_max<float>(gf_acc"), std::string::npos) << inner;
    EXPECT_NE(src.find("asm(\"max.NaN.f32 %0, %1, %2;\""), std::string::npos);
  }
  const std::string ints =
      codegen::emit_cuda_kernel(testing::integer_rows_case().kernel, Graph{}).source;
  EXPECT_NE(ints.find("gf_min<int64_t>(gf_acc"), std::string::npos);
  EXPECT_EQ(ints.find("gf_min_nan(gf_acc"), std::string::npos);
}

// The one kernel of `g` (a row-wise op on bf16 rows of `row` elements), as the CUDA source.
std::string row_kernel_source(const Graph& g) {
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  EXPECT_EQ(plan.groups.size(), 1u);
  return codegen::emit_cuda_kernel(fusion::lower_group(g, plan.groups.front(), "rows"), g).source;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(CudaCodegenCache, PersistentRowsKeepWhatLaterPassesReadInRegistersAndAskForOccupancy) {
  // Softmax over 16k-element rows: the sum pass keeps exp(x - max) for the store pass, which
  // then only divides (one exp per element, not two). Its x is dead after the sum pass, so the
  // kept array replaces it within the register budget.
  GraphBuilder b("softmax");
  const ValueId x = b.input("x", DType::kBF16, Shape::from_static({64, 16384}));
  b.output(b.softmax(x), "y");
  const std::string kept = row_kernel_source(b.build());
  EXPECT_EQ(occurrences(kept, "= expf(t"), 1u) << kept;
  EXPECT_EQ(occurrences(kept, "float gf_v"), 1u);
  // Its store pass reads only registers: three blocks of 256 threads per SM are asked for (at
  // most 85 registers a thread, which bf16 rows of 16k fit without a spill).
  EXPECT_NE(kept.find("__launch_bounds__(256, 3)"), std::string::npos);
  // y = softmax(x) * x reads x in the store pass too: x and exp(x - max) would be two arrays of
  // 64 values a thread, past the budget, so the store pass computes exp again.
  GraphBuilder b2("softmax_times_x");
  const ValueId x2 = b2.input("x", DType::kBF16, Shape::from_static({64, 16384}));
  b2.output(b2.mul(b2.softmax(x2), x2), "y");
  const std::string recomputed = row_kernel_source(b2.build());
  EXPECT_EQ(occurrences(recomputed, "= expf(t"), 2u) << recomputed;
  EXPECT_EQ(occurrences(recomputed, "float gf_v"), 0u);
  // LayerNorm keeps x - mean from the variance pass for the store pass.
  GraphBuilder b3("layer_norm");
  const ValueId x3 = b3.input("x", DType::kBF16, Shape::from_static({64, 4096}));
  Tensor ones(DType::kBF16, {4096});
  for (int64_t i = 0; i < 4096; ++i) ones.data<BFloat16>()[i] = BFloat16(1.0f);
  b3.output(b3.layer_norm(x3, b3.constant("gamma", ones),
                          b3.constant("beta", Tensor(DType::kBF16, {4096}))),
            "y");
  const std::string norm = row_kernel_source(b3.build());
  EXPECT_EQ(occurrences(norm, "float gf_v"), 1u) << norm;
  EXPECT_NE(norm.find("__launch_bounds__(256) "), std::string::npos);  // 16 values a thread
  // The same softmax over f32 rows: twice the registers, so no minimum (it would spill).
  GraphBuilder b4("softmax_f32");
  const ValueId x4 = b4.input("x", DType::kF32, Shape::from_static({64, 16384}));
  b4.output(b4.softmax(x4), "y");
  EXPECT_NE(row_kernel_source(b4.build()).find("__launch_bounds__(256) "), std::string::npos);
  // LayerNorm over 16k-element rows loads gamma and beta in its store pass: no minimum either.
  GraphBuilder b5("layer_norm_16k");
  const ValueId x5 = b5.input("x", DType::kBF16, Shape::from_static({64, 16384}));
  Tensor ones16k(DType::kBF16, {16384});
  for (int64_t i = 0; i < 16384; ++i) ones16k.data<BFloat16>()[i] = BFloat16(1.0f);
  b5.output(b5.layer_norm(x5, b5.constant("gamma", ones16k),
                          b5.constant("beta", Tensor(DType::kBF16, {16384}))),
            "y");
  EXPECT_NE(row_kernel_source(b5.build()).find("__launch_bounds__(256) "), std::string::npos);
  codegen::NvrtcCompiler compiler(options());
  EXPECT_EQ(compiler.compile_all({kept, recomputed, norm}, kSm90).size(), 3u);
}

TEST(CudaCodegen, UnsupportedOpsAndMalformedKernelsAreErrors) {
  GraphBuilder gb("g");
  const ValueId a = gb.input("a", DType::kF32, Shape::from_static({2, 2}));
  gb.output(gb.matmul(a, a), "mm");
  const Graph g = gb.build();
  testing::KernelBuilder b("bad_op");
  const int x = b.buffer("x", DType::kF32, {4}, false);
  const int y = b.buffer("y", DType::kF32, {4}, true);
  b.k.outer_dims = {4};
  const auto i = b.outer(0);
  b.store(y, i, b.op(Op::kMatMul, DType::kF32, {b.load(x, i), b.load(x, i)}, NodeId{0}));
  expect_error([&] { codegen::emit_cuda_kernel(b.k, g); }, ErrorCode::kUnsupported,
               {"cuda", "MatMul", g.nodes()[0].name});

  testing::KernelBuilder m("store_to_input");
  const int in = m.buffer("in", DType::kF32, {4}, false);
  m.k.outer_dims = {4};
  m.store(in, m.outer(0), m.constant(DType::kF32, 1));
  expect_error([&] { codegen::emit_cuda_kernel(m.k, Graph{}); }, ErrorCode::kInvalidGraph,
               {"store_to_input", "not an output"});
}

TEST_F(CudaCodegenCache, SecondCompileIsServedFromMemoryAndAFreshCompilerReadsTheDisk) {
  const std::string source =
      codegen::emit_cuda_kernel(testing::transpose_case().kernel, Graph{}).source;
  codegen::NvrtcCompiler first(options());
  const codegen::CubinPtr a = first.compile(source, kSm90);
  EXPECT_EQ(first.nvrtc_runs(), 1);
  EXPECT_EQ(first.compile(source, kSm90), a);  // the same object
  EXPECT_EQ(first.nvrtc_runs(), 1);
  const uint64_t key = first.cache_key(source, kSm90);
  EXPECT_TRUE(fs::exists(first.cubin_path(key)));
  EXPECT_TRUE(fs::exists(fs::path(first.cubin_path(key)).replace_extension(".cu")));

  codegen::NvrtcCompiler second(options());
  const codegen::CubinPtr b = second.compile(source, kSm90);
  EXPECT_EQ(second.nvrtc_runs(), 0);
  EXPECT_EQ(*b, *a);

  codegen::NvrtcOptions no_disk = options();
  no_disk.use_disk_cache = false;
  codegen::NvrtcCompiler third(no_disk);
  third.compile(source, kSm90);
  EXPECT_EQ(third.nvrtc_runs(), 1);
}

TEST_F(CudaCodegenCache, KeyCoversSourceAndArchitecture) {
  codegen::NvrtcCompiler compiler(options());
  const std::string s = "extern \"C\" __global__ void k(void* const* b) {}\n";
  EXPECT_EQ(compiler.cache_key(s, 90), compiler.cache_key(s, 90));
  EXPECT_NE(compiler.cache_key(s, 90), compiler.cache_key(s, 80));
  EXPECT_NE(compiler.cache_key(s, 90), compiler.cache_key(s + " ", 90));
  const auto sm80 = compiler.compile(s, 80), sm90 = compiler.compile(s, 90);
  EXPECT_NE(*sm80, *sm90);
  EXPECT_EQ(compiler.nvrtc_runs(), 2);
}

TEST_F(CudaCodegenCache, CorruptOrTruncatedCacheFilesAreRecompiled) {
  const std::string source =
      codegen::emit_cuda_kernel(testing::single_element_case().kernel, Graph{}).source;
  codegen::NvrtcCompiler first(options());
  const std::string good = *first.compile(source, kSm90);
  const fs::path path = first.cubin_path(first.cache_key(source, kSm90));
  std::string bytes;
  ASSERT_TRUE(codegen::read_whole_file(path, bytes));

  std::string flipped = bytes;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
  codegen::NvrtcCompiler second(options());
  EXPECT_EQ(*second.compile(source, kSm90), good);
  EXPECT_EQ(second.nvrtc_runs(), 1);

  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
  codegen::NvrtcCompiler third(options());
  EXPECT_EQ(*third.compile(source, kSm90), good);
  EXPECT_EQ(third.nvrtc_runs(), 1);

  // The recompiles repaired the file: the next reader trusts it.
  codegen::NvrtcCompiler fourth(options());
  EXPECT_EQ(*fourth.compile(source, kSm90), good);
  EXPECT_EQ(fourth.nvrtc_runs(), 0);
}

TEST_F(CudaCodegenCache, BadSourceIsACompileErrorWithNvrtcsLog) {
  const std::string bad =
      "extern \"C\" __global__ void broken(void* const* b) { undeclared_thing = 1; }\n";
  codegen::NvrtcCompiler compiler(options());
  expect_error([&] { compiler.compile(bad, kSm90); }, ErrorCode::kCompileError,
               {"NVRTC", "sm_90", ".cu", "error", "undeclared_thing"});
  // Failures are not cached: the next call runs NVRTC again.
  expect_error([&] { compiler.compile(bad, kSm90); }, ErrorCode::kCompileError, {"NVRTC"});
  EXPECT_EQ(compiler.nvrtc_runs(), 2);
  EXPECT_FALSE(fs::exists(compiler.cubin_path(compiler.cache_key(bad, kSm90))));
  // compile_all reports it after compiling the others.
  const std::string good =
      codegen::emit_cuda_kernel(testing::single_element_case().kernel, Graph{}).source;
  expect_error(
      [&] {
        compiler.compile_all({good, bad}, kSm90);
      },
      ErrorCode::kCompileError, {"undeclared_thing"});
  EXPECT_EQ(compiler.nvrtc_runs(), 4);
}

TEST_F(CudaCodegenCache, ArchitectureNvrtcCannotTargetIsUnsupported) {
  codegen::NvrtcCompiler compiler(options());
  expect_error([&] { compiler.compile("extern \"C\" __global__ void k() {}", 35); },
               ErrorCode::kUnsupported, {"sm_35", "sm_90"});
  EXPECT_EQ(compiler.nvrtc_runs(), 0);
}

TEST_F(CudaCodegenCache, LoadingAModuleWithoutAGpuIsADeviceError) {
  if (!probe_cuda().devices.empty()) GTEST_SKIP() << "a CUDA device is present";
  codegen::NvrtcCompiler compiler(options());
  const auto cubin = compiler.compile(
      codegen::emit_cuda_kernel(testing::single_element_case().kernel, Graph{}).source, kSm90);
  expect_error([&] { CudaModule::load(*cubin, "single"); }, ErrorCode::kDeviceError,
               {"CUDA driver unavailable"});
  // Again: the failure is remembered, not a crash on the second use.
  expect_error([&] { cuda_driver(); }, ErrorCode::kDeviceError, {"CUDA driver unavailable"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
