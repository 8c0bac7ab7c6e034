// The CUDA executor's skinny GEMM steps without a GPU (runtime/cuda/skinny_gemm_step.h): which
// products take them under each SessionOptions::skinny_gemm choice, which epilogue nodes their
// kernel fuses and where it stops, the buffers of a step (the k-split workspace as its private
// buffer, outside every lifetime), how the step builder hands the rest of an epilogue to a
// generated kernel, and every case of tests/gpu/skinny_gemm_step_cases.h matched whole and
// compiled by NVRTC for sm_90 (running them is tests/gpu/test_cuda_skinny_gemm_steps.cpp).
// Whole exports at one token (GPT-2, BERT) take the kernel under auto, on their weights stored
// [n, k].
#ifdef GF_HAVE_CUDA

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "codegen/cuda/nvrtc_compiler.h"
#include "fusion/op_costs.h"
#include "fusion/plan.h"
#include "gpu/skinny_gemm_step_cases.h"
#include "passes/split_gemm_scaling.h"
#include "runtime/cuda/skinny_gemm_step.h"
#include "runtime/cuda/weight_layout.h"
#include "runtime/session_programs.h"
#include "test_util.h"
#ifdef GF_HAVE_ONNX
#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "runtime/cpu/reference/interpreter.h"
#endif

namespace gf {
namespace {

using codegen::SkinnyActivation;
using testing::SkinnyEpilogue;
constexpr int kSms = 132;

// The compile options with skinny GEMMs as `choice` and that prefetch distance, the rest default.
cuda::CudaProgramOptions with_skinny(SkinnyGemm choice, int prefetch_distance = 1) {
  cuda::CudaProgramOptions o;
  o.skinny_gemm = choice;
  o.skinny_prefetch_distance = prefetch_distance;
  return o;
}

// The graph as the executor builds its steps from: specialised (passes run), Gemm scaling split.
Graph prepared(const Graph& g) {
  std::vector<std::vector<int64_t>> dims;
  for (ValueId v : g.inputs()) dims.push_back(g.value(v).type.shape.static_dims());
  Graph s = specialise(g, dims, SessionOptions{Device::kCuda});
  split_gemm_scaling(s);
  return s;
}

const fusion::Group& gemm_group(const fusion::Plan& plan) {
  const auto it = std::find_if(plan.groups.begin(), plan.groups.end(),
                               [](const fusion::Group& group) { return group.kind == fusion::GroupKind::kGemm; });
  GF_ASSERT(it != plan.groups.end(), "the test graph has a GEMM");
  return *it;
}

std::vector<std::string> op_names(const Graph& g, std::vector<NodeId> nodes) {
  std::vector<std::string> out;
  for (NodeId id : nodes) out.emplace_back(op_name(g.node(id).op));
  return out;
}

// The step of the graph's one GEMM group.
std::optional<cuda::SkinnyGemmStep> step_of(const Graph& g,
                                            SkinnyGemm choice = SkinnyGemm::kAlways) {
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  return cuda::skinny_gemm_step(g, gemm_group(plan), "gf_skinny_test", kSms, choice);
}

// The value in the step's output entry.
ValueId written(const cuda::CudaStep& s) {
  std::vector<ValueId> out;
  for (size_t i = 0; i < s.buffers.size(); ++i)
    if (s.is_output[i]) out.push_back(s.buffers[i]);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? kNoValue : out[0];
}

TEST(SkinnyGemmSteps, TheChoiceDecidesByRowsAndLayout) {
  using cuda::prefers_skinny_gemm;
  constexpr int64_t kAutoRows = cuda::kSkinnyGemmAutoMaxRows;
  static_assert(kAutoRows >= 1 && kAutoRows <= codegen::kSkinnyGemmMaxRows);
  for (SkinnyGemm c : {SkinnyGemm::kAuto, SkinnyGemm::kAlways, SkinnyGemm::kOff}) {
    SCOPED_TRACE(std::string(skinny_gemm_name(c)));
    for (bool w_transposed : {false, true}) {
      EXPECT_FALSE(prefers_skinny_gemm(c, 0, w_transposed));
      EXPECT_FALSE(prefers_skinny_gemm(c, 17, w_transposed));  // past the kernel's range
    }
  }
  // always: every row count the kernel takes, in both layouts; off: none.
  for (int64_t rows = 1; rows <= 16; ++rows) {
    EXPECT_TRUE(prefers_skinny_gemm(SkinnyGemm::kAlways, rows, false));
    EXPECT_TRUE(prefers_skinny_gemm(SkinnyGemm::kAlways, rows, true));
    EXPECT_FALSE(prefers_skinny_gemm(SkinnyGemm::kOff, rows, true));
    // auto: only W stored [n, k], and only up to kSkinnyGemmAutoMaxRows rows.
    EXPECT_EQ(prefers_skinny_gemm(SkinnyGemm::kAuto, rows, true), rows <= kAutoRows) << rows << " rows";
    EXPECT_FALSE(prefers_skinny_gemm(SkinnyGemm::kAuto, rows, false)) << rows << " rows";
  }
}

TEST(SkinnyGemmSteps, AutoTakesFewRowsAgainstAWeightStoredNK) {
  auto product = [](Shape a, bool constant_w) {
    GraphBuilder b;
    const ValueId x = b.input("a", DType::kF16, a);
    const int64_t k = a.static_dims().back();
    const ValueId w = constant_w ? b.constant("w", Tensor(DType::kF16, {k, 24}))
                                 : b.input("w", DType::kF16, Shape{k, 24});
    b.output(b.matmul(x, w));
    return prepared(b.build());
  };
  // A constant MatMul weight is stored [n, k] (weight_layout.h): auto takes it up to the bound.
  const std::optional<cuda::SkinnyGemmStep> one = step_of(product(Shape{1, 40}, true), SkinnyGemm::kAuto);
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(one->spec.w_transposed);
  EXPECT_EQ(one->spec.m, 1);
  const int64_t bound = cuda::kSkinnyGemmAutoMaxRows;
  EXPECT_TRUE(step_of(product(Shape{bound, 40}, true), SkinnyGemm::kAuto).has_value());
  EXPECT_FALSE(step_of(product(Shape{bound + 1, 40}, true), SkinnyGemm::kAuto).has_value());
  EXPECT_TRUE(step_of(product(Shape{codegen::kSkinnyGemmMaxRows, 40}, true), SkinnyGemm::kAlways)
                  .has_value());
  // A W computed at run time (here an input) is read [k, n]: auto leaves it to cuBLASLt.
  EXPECT_FALSE(step_of(product(Shape{1, 40}, false), SkinnyGemm::kAuto).has_value());
  const std::optional<cuda::SkinnyGemmStep> kn = step_of(product(Shape{1, 40}, false), SkinnyGemm::kAlways);
  ASSERT_TRUE(kn.has_value());
  EXPECT_FALSE(kn->spec.w_transposed);
  EXPECT_FALSE(step_of(product(Shape{1, 40}, true), SkinnyGemm::kOff).has_value());
}

TEST(SkinnyGemmSteps, ProductsOfOneToSixteenRowsTakeTheSkinnyKernel) {
  auto product = [](Shape a, Shape w, Attributes attrs = {}, Op op = Op::kMatMul) {
    GraphBuilder b;
    b.output(b.op1(op, {b.input("a", DType::kF32, std::move(a)), b.input("w", DType::kF32, std::move(w))},
                   std::move(attrs)));
    return prepared(b.build());
  };
  // Rows counted after folding the batch dims, as plan_gemm folds them.
  const std::optional<cuda::SkinnyGemmStep> folded = step_of(product(Shape{2, 8, 40}, Shape{40, 24}));
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->spec.m, 16);
  EXPECT_EQ(folded->spec.n, 24);
  EXPECT_EQ(folded->spec.k, 40);
  EXPECT_FALSE(folded->spec.w_transposed);
  EXPECT_FALSE(step_of(product(Shape{3, 6, 40}, Shape{40, 24})).has_value());  // 18 rows
  // A vector is one row; a W per batch entry is not one product.
  EXPECT_EQ(step_of(product(Shape{40}, Shape{40, 24}))->spec.m, 1);
  EXPECT_FALSE(step_of(product(Shape{2, 3, 40}, Shape{2, 40, 24})).has_value());
  // Gemm: transB is W stored [n, k]; transA has no skinny form.
  const std::optional<cuda::SkinnyGemmStep> linear =
      step_of(product(Shape{5, 40}, Shape{24, 40}, {{"transB", int64_t{1}}}, Op::kGemm));
  ASSERT_TRUE(linear.has_value());
  EXPECT_TRUE(linear->spec.w_transposed);
  EXPECT_EQ(linear->spec.n, 24);
  EXPECT_FALSE(step_of(product(Shape{40, 5}, Shape{40, 24}, {{"transA", int64_t{1}}}, Op::kGemm)).has_value());
}

TEST(SkinnyGemmSteps, EpilogueStopsWhereTheKernelsOrderEnds) {
  // Relu then a bias row: the kernel adds its bias before the activation, so the Add stays.
  GraphBuilder b;
  Tensor bias(DType::kF32, {48});
  const ValueId relu = b.unary(Op::kRelu, b.matmul(b.input("x", DType::kF32, Shape{3, 64}),
                                                   b.input("w", DType::kF32, Shape{64, 48})));
  b.output(b.add(relu, b.constant("bias", bias)), "y");
  const Graph g = prepared(b.build());
  const std::optional<cuda::SkinnyGemmStep> s = step_of(g);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(op_names(g, s->nodes), (std::vector<std::string>{"MatMul", "Relu"}));
  EXPECT_EQ(s->spec.activation, SkinnyActivation::kRelu);
  EXPECT_FALSE(s->spec.has_bias);
  EXPECT_EQ(g.node(g.value(written(s->step)).producer).op, Op::kRelu);
}

TEST(SkinnyGemmSteps, AValueReadOutsideTheGroupEndsTheFusedEpilogue) {
  // h = x W + bias is an output too: the kernel writes h and the Gelu reads it back.
  GraphBuilder b;
  Tensor bias(DType::kF16, {40});
  const ValueId h = b.add(b.matmul(b.input("x", DType::kF16, Shape{1, 2, 32}), b.input("w", DType::kF16, Shape{32, 40})),
                          b.constant("bias", bias));
  b.output(h);
  b.output(b.gelu(h, true));
  const Graph g = prepared(b.build());
  const std::optional<cuda::SkinnyGemmStep> s = step_of(g);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(op_names(g, s->nodes), (std::vector<std::string>{"MatMul", "Add"}));
  EXPECT_TRUE(s->spec.has_bias);
  EXPECT_EQ(s->spec.activation, SkinnyActivation::kNone);
  const ValueId h_out = written(s->step);
  EXPECT_EQ(g.node(g.value(h_out).producer).op, Op::kAdd);
  EXPECT_NE(std::find(g.outputs().begin(), g.outputs().end(), h_out), g.outputs().end());
}

// A's and the residual's addresses are read before the kernel's wait only where no binding can
// repoint their pointer-table entries: neither is, nor shares storage through views with, a
// graph input or output.
TEST(SkinnyGemmSteps, InputAddressesAreReadEarlyOnlyWhereNoBindingCanMoveThem) {
  const auto stable = [](bool a_is_input, bool a_through_view, bool input_residual) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF16, Shape{2, 32});
    ValueId a = a_is_input ? x : b.softmax(x);
    if (a_through_view) a = b.reshape(a, std::vector<int64_t>{2, 32});
    ValueId y = b.matmul(a, b.input("w", DType::kF16, Shape{32, 40}));
    if (input_residual) y = b.add(y, b.input("r", DType::kF16, Shape{2, 40}));
    b.output(y, "y");
    const Graph g = prepared(b.build());
    const std::optional<cuda::SkinnyGemmStep> s = step_of(g);
    EXPECT_TRUE(s.has_value());
    EXPECT_EQ(s && s->spec.has_residual, input_residual);
    return s && s->spec.stable_input_addresses;
  };
  EXPECT_TRUE(stable(false, false, false));  // A computed inside the program
  EXPECT_TRUE(stable(false, true, false));   // a view of a computed value
  EXPECT_FALSE(stable(true, false, false));  // A is an input
  EXPECT_FALSE(stable(true, true, false));   // A is a view of an input
  EXPECT_FALSE(stable(false, false, true));  // the residual is an input
  // (A computed residual: every product of the GPT-2 export below.)
  // A computed value that a view makes a graph output shares the output's binding.
  GraphBuilder b;
  const ValueId a = b.softmax(b.input("x", DType::kF16, Shape{2, 32}));
  b.output(b.reshape(a, std::vector<int64_t>{64}), "a_flat");
  b.output(b.matmul(a, b.input("w", DType::kF16, Shape{32, 40})), "y");
  const Graph g = prepared(b.build());
  const std::optional<cuda::SkinnyGemmStep> s = step_of(g);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->spec.stable_input_addresses);
}

TEST(SkinnyGemmSteps, TheBuilderLeavesTheRestOfTheEpilogueToAGeneratedKernel) {
  // MatMul, Relu (fused), then Add of a bias row after the activation (not fused): two kernel
  // steps, the second reading what the first wrote. No library call, so no device is needed.
  // W is an input, read [k, n]: the layout in which the kernel splits k (a constant would be
  // stored [n, k], which it never splits).
  GraphBuilder b;
  Tensor bias(DType::kF32, {48});
  const ValueId relu = b.unary(Op::kRelu, b.matmul(b.input("x", DType::kF32, Shape{3, 64}),
                                                   b.input("w", DType::kF32, Shape{64, 48})));
  b.output(b.add(relu, b.constant("bias", bias)), "y");
  const Graph g = prepared(b.build());
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  cuda::build_cuda_steps(g, state, stats, kSms, 90, with_skinny(SkinnyGemm::kAlways));
  EXPECT_EQ(stats.skinny_gemm_steps, 1);
  EXPECT_EQ(stats.generated_kernels, 2);
  EXPECT_EQ(stats.library_calls, 0);
  ASSERT_EQ(state.steps.size(), 2u);
  const cuda::CudaStep& skinny = state.steps[0];
  const cuda::CudaStep& rest = state.steps[1];
  EXPECT_EQ(skinny.kind, cuda::CudaStep::Kind::kKernel);
  EXPECT_NE(skinny.kernel.source.find("// fused: MatMul"), std::string::npos);
  const ValueId relu_out = written(skinny);
  EXPECT_EQ(g.node(g.value(relu_out).producer).op, Op::kRelu);
  EXPECT_NE(std::find(rest.buffers.begin(), rest.buffers.end(), relu_out), rest.buffers.end());
  // 64 rows of k over 3 rows of 48 columns: the kernel splits k, so it has a private buffer,
  // which is no value: lifetimes and graph edges never see it.
  ASSERT_GT(skinny.private_bytes, 0u);
  EXPECT_EQ(std::count(skinny.buffers.begin(), skinny.buffers.end(), cuda::kStepPrivateBuffer), 1);
  const StepBuffers uses = skinny.reads_and_writes(g);
  for (ValueId v : uses.reads) EXPECT_GE(v, 0);
  EXPECT_EQ(uses.reads.size(), 2u);  // x and w
  EXPECT_EQ(uses.writes, std::vector<ValueId>{relu_out});
}

// x [rows, 96] -> norm -> Reshape -> MatMul by a constant W [96, 40] (stored [n, k]) -> Add bias:
// a LayerNormalization (or RMSNormalization), alone in its group, goes into the skinny kernel,
// whose A is then the norm's input, followed by the norm's scale (and bias); with the norm's
// output read elsewhere too, or skinny GEMMs off, the norm stays a kernel of its own.
Graph norm_then_product(Op norm, bool output_read_twice) {
  GraphBuilder b;
  Tensor w(DType::kF16, {96, 40}), bias(DType::kF16, {40}), scale(DType::kF16, {96});
  const ValueId x = b.input("x", DType::kF16, Shape{2, 96});
  const ValueId s = b.constant("scale", scale);
  const ValueId y =
      norm == Op::kLayerNormalization
          ? b.layer_norm(x, s, b.constant("beta", Tensor(DType::kF16, {96})))
          : b.op1(Op::kRMSNormalization, {x, s}, {{"axis", int64_t{-1}}, {"epsilon", 1e-6f}});
  const ValueId a = b.reshape(y, {2, 96});
  b.output(b.add(b.matmul(a, b.constant("w", w)), b.constant("bias", bias)), "out");
  if (output_read_twice) b.output(b.unary(Op::kNeg, y), "neg");
  return prepared(b.build());
}

TEST(SkinnyGemmSteps, ANormAloneBeforeTheProductGoesIntoTheSkinnyKernel) {
  for (Op norm : {Op::kLayerNormalization, Op::kRMSNormalization}) {
    SCOPED_TRACE(op_name(norm));
    const Graph g = norm_then_product(norm, false);
    cuda::CudaProgramState state;
    cuda::CudaProgramStats stats;
    cuda::build_cuda_steps(g, state, stats, kSms, 90, with_skinny(SkinnyGemm::kAuto));
    EXPECT_EQ(stats.skinny_gemm_steps, 1);
    EXPECT_EQ(stats.generated_kernels, 1) << "the norm kept a kernel";
    ASSERT_EQ(state.steps.size(), 1u);
    const cuda::CudaStep& s = state.steps[0];
    const bool layer_norm = norm == Op::kLayerNormalization;
    EXPECT_NE(s.label.find(layer_norm ? "after LayerNorm" : "after RMSNorm"), std::string::npos)
        << s.label;
    ASSERT_GE(s.buffers.size(), 4u);
    EXPECT_EQ(s.buffers[0], g.inputs()[0]);            // A is the norm's input
    EXPECT_TRUE(g.value(s.buffers[1]).is_constant());  // its scale
    EXPECT_EQ(g.value(s.buffers[1]).type.shape.static_dims(), std::vector<int64_t>{96});
    if (layer_norm) {
      EXPECT_EQ(g.value(s.buffers[2]).type.shape.static_dims(), std::vector<int64_t>{96});
    }
    EXPECT_NE(s.kernel.source.find(layer_norm ? "kRowNorm = 1" : "kRowNorm = 2"),
              std::string::npos);
  }
  // The norm's output read by another node too: the norm keeps its kernel, the product reads it.
  const Graph g = norm_then_product(Op::kLayerNormalization, true);
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  cuda::build_cuda_steps(g, state, stats, kSms, 90, with_skinny(SkinnyGemm::kAuto));
  EXPECT_EQ(stats.skinny_gemm_steps, 1);
  for (const cuda::CudaStep& s : state.steps)
    EXPECT_EQ(s.label.find("after LayerNorm"), std::string::npos);
  EXPECT_GE(stats.generated_kernels, 2) << "the norm needs its own kernel";
}

// Per case and row count, the spec the whole epilogue should give.
void expect_spec(const testing::SkinnyStepCase& c, const codegen::SkinnyGemmSpec& s) {
  const bool bias_epilogue = c.epilogue == SkinnyEpilogue::kBias || c.epilogue == SkinnyEpilogue::kBiasRelu ||
                             c.epilogue == SkinnyEpilogue::kBiasGelu;
  const bool residual = c.epilogue == SkinnyEpilogue::kResidual;
  // A MatMul's residual of one row, [1, N], is a bias row: added at the same point.
  const bool residual_as_bias = residual && !c.gemm && s.m == 1;
  EXPECT_EQ(s.dtype, c.dtype);
  EXPECT_EQ(s.n, c.n);
  EXPECT_EQ(s.k, c.k);
  EXPECT_EQ(s.w_transposed, c.gemm || !testing::skinny_case_w_is_input(s.m));
  EXPECT_EQ(s.has_bias, bias_epilogue || (residual && c.gemm) || residual_as_bias);
  EXPECT_EQ(s.has_residual, residual && !residual_as_bias);
  const SkinnyActivation act = c.epilogue == SkinnyEpilogue::kBiasRelu ? SkinnyActivation::kRelu
                               : c.epilogue != SkinnyEpilogue::kBiasGelu ? SkinnyActivation::kNone
                               : c.gemm                                  ? SkinnyActivation::kGeluTanh
                                                                         : SkinnyActivation::kGeluErf;
  EXPECT_EQ(s.activation, act);
}

TEST(SkinnyGemmSteps, EveryCaseIsSixteenSkinnyKernelsWithTheirWholeEpilogue) {
  codegen::NvrtcOptions cache;
  cache.cache_dir = std::filesystem::temp_directory_path() / ("gf_test_skinny_steps_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(cache);
  std::vector<std::string> sources;
  const std::vector<testing::SkinnyStepCase> cases = testing::skinny_step_cases();
  ASSERT_EQ(cases.size(), 30u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const testing::SkinnyStepCase& c = cases[i];
    SCOPED_TRACE(c.name);
    const Graph g = prepared(c.graph);
    const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
    std::set<int64_t> rows;
    for (const fusion::Group& group : plan.groups) {
      if (group.kind == fusion::GroupKind::kView) {  // aliases, no kernel
        for (NodeId id : group.nodes) EXPECT_TRUE(fusion::is_metadata_view(g.node(id).op));
        continue;
      }
      ASSERT_EQ(group.kind, fusion::GroupKind::kGemm) << describe_node(g, g.node(group.nodes[0]));
      const std::optional<cuda::SkinnyGemmStep> s =
          cuda::skinny_gemm_step(g, group, "gf_skinny_" + std::to_string(group.id), kSms);
      ASSERT_TRUE(s.has_value());
      SCOPED_TRACE(s->spec.to_string());
      std::vector<NodeId> taken = s->nodes, all = group.nodes;
      std::sort(taken.begin(), taken.end());
      std::sort(all.begin(), all.end());
      EXPECT_EQ(taken, all) << "the kernel left part of the epilogue";
      expect_spec(c, s->spec);
      ASSERT_EQ(group.outputs.size(), 1u);
      EXPECT_EQ(written(s->step), group.outputs[0]);
      EXPECT_EQ(s->step.private_bytes, codegen::skinny_gemm_workspace_bytes(s->spec, kSms));
      EXPECT_EQ(std::count(s->step.buffers.begin(), s->step.buffers.end(), cuda::kStepPrivateBuffer),
                s->step.private_bytes > 0 ? 1 : 0);
      rows.insert(s->spec.m);
      // NVRTC takes a while per kernel: one row count per case, a different one each time.
      if (s->spec.m == static_cast<int64_t>(i % 16) + 1) sources.push_back(s->step.kernel.source);
    }
    EXPECT_EQ(rows.size(), 16u);
    EXPECT_EQ(*rows.begin(), 1);
    EXPECT_EQ(*rows.rbegin(), 16);
  }
  EXPECT_EQ(sources.size(), cases.size());
  EXPECT_NO_THROW(compiler.compile_all(sources, 90));
  std::filesystem::remove_all(cache.cache_dir);
}

#ifdef GF_HAVE_ONNX
TEST(SkinnyGemmSteps, Gpt2ExportAtOneTokenRunsEveryProductSkinnyWithItsEpilogue) {
  // The TorchScript export: Gemm (bias in C, W [k, n]) -> Reshape -> Add (residual) and
  // Gemm -> Reshape -> Gelu -> Reshape, under auto. No library call is left, so no device is
  // needed (the embedding's Gather is a host step today, whatever the GEMMs do).
  const std::filesystem::path data =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "models" / "data";
  OnnxImportOptions options;
  options.input_shapes["input_ids"] = {1, 1};
  options.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  const Graph g = prepared(import_onnx((data / "gpt2_tiny.torchscript.onnx").string(), options));
  int products = 0;  // at one token, every product has one row
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Op op = g.node(static_cast<NodeId>(i)).op;
    products += op == Op::kGemm || op == Op::kMatMul;
  }
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  cuda::build_cuda_steps(g, state, stats, kSms, 90,
                         with_skinny(SkinnyGemm::kAuto));  // W [n, k], one row: auto's
  EXPECT_GT(products, 0);
  EXPECT_EQ(stats.skinny_gemm_steps, products);
  EXPECT_EQ(stats.library_calls, 0);
  int with_gelu = 0, with_residual = 0;
  for (const cuda::CudaStep& s : state.steps) {
    if (s.label.rfind("skinny GEMM", 0) != 0) continue;
    EXPECT_NE(s.label.find("+bias"), std::string::npos) << s.label;
    // Gemm W [k, n] (transB 0): stored [n, k], which is why auto takes it.
    EXPECT_NE(s.label.find("W[n,k]"), std::string::npos) << s.label;
    // Every A and residual is computed inside the program: their addresses are read early.
    EXPECT_NE(s.label.find("(early input addresses)"), std::string::npos) << s.label;
    with_gelu += s.label.find("Gelu") != std::string::npos;
    with_residual += s.label.find("+residual") != std::string::npos;
  }
  EXPECT_GT(with_gelu, 0);
  EXPECT_GT(with_residual, 0);
  // Each product's kernel but the last `distance` moves the weight of the product that many later
  // towards L2: its last table entry is a constant that product's kernel reads. Distance 0 (and
  // the session's default of 1, above) as well as 2.
  for (int distance : {0, 1, 2}) {
    SCOPED_TRACE("distance " + std::to_string(distance));
    cuda::CudaProgramState at_distance;
    cuda::CudaProgramStats distance_stats;
    cuda::build_cuda_steps(g, at_distance, distance_stats, kSms, 90,
                           with_skinny(SkinnyGemm::kAuto, distance));
    std::vector<const cuda::CudaStep*> skinny;
    for (const cuda::CudaStep& s : (distance == 1 ? state : at_distance).steps)
      if (s.label.rfind("skinny GEMM", 0) == 0) skinny.push_back(&s);
    ASSERT_EQ(skinny.size(), static_cast<size_t>(products));
    for (size_t i = 0; i < skinny.size(); ++i) {
      const size_t later = i + static_cast<size_t>(distance);
      const bool has_next = distance > 0 && later < skinny.size();
      EXPECT_EQ(skinny[i]->label.find("(next weights to L2") != std::string::npos, has_next)
          << skinny[i]->label;
      if (!has_next) continue;
      const ValueId next_w = skinny[i]->buffers.back();
      EXPECT_TRUE(g.value(next_w).is_constant()) << skinny[i]->label;
      const std::vector<ValueId>& reads = skinny[later]->buffers;
      EXPECT_NE(std::find(reads.begin(), reads.end(), next_w), reads.end()) << skinny[i]->label;
      // ... and only that product's kernel (no other skinny kernel reads it as its own weight).
      for (size_t j = 0; j < skinny.size(); ++j) {
        if (j == later || j == i) continue;
        const std::vector<ValueId>& other = skinny[j]->buffers;
        const size_t own = other.size() - (j + distance < skinny.size() ? 1 : 0);
        EXPECT_EQ(
            std::find(other.begin(), other.begin() + static_cast<std::ptrdiff_t>(own), next_w),
            other.begin() + static_cast<std::ptrdiff_t>(own))
            << skinny[i]->label << " / " << skinny[j]->label;
      }
    }
  }
  // ln_1 and ln_2 of each layer are read by one product only (the QKV product, the MLP's
  // first): each goes into its product's kernel. ln_f's output is the model's output here (this
  // export ends before the LM head), so it keeps its kernel.
  int norms = 0, folded = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i)
    norms += g.node(static_cast<NodeId>(i)).op == Op::kLayerNormalization;
  for (const cuda::CudaStep& s : state.steps)
    folded += s.label.find("after LayerNorm") != std::string::npos;
  EXPECT_GT(norms, 1);
  EXPECT_EQ(folded, norms - 1);
}

TEST(SkinnyGemmSteps, BertExportAtOneTokenTakesTheKernelUnderAutoOnItsTransposedWeights) {
  // The TorchScript export's Linear layers are MatMul by W [k, n] (then Add of the bias): each
  // weight is stored [n, k], so auto takes every such product at one row.
  const std::filesystem::path data =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "models" / "data";
  OnnxImportOptions options;
  options.input_shapes["input_ids"] = {1, 1};
  options.input_shapes["attention_mask"] = {1, 1};
  options.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  const Graph g = prepared(import_onnx((data / "bert_tiny.torchscript.onnx").string(), options));
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  int weighted = 0;
  for (const fusion::Group& group : plan.groups) {
    if (group.kind != fusion::GroupKind::kGemm) continue;
    const Node& anchor = g.node(group.anchor);
    if (!g.value(anchor.inputs[1]).is_constant()) continue;
    SCOPED_TRACE(describe_node(g, anchor));
    ++weighted;
    EXPECT_EQ(anchor.op, Op::kMatMul);
    EXPECT_TRUE(cuda::stores_transposed(g, anchor.inputs[1]));
    const std::optional<cuda::SkinnyGemmStep> s = cuda::skinny_gemm_step(
        g, group, "gf_skinny_" + std::to_string(group.id), kSms, SkinnyGemm::kAuto);
    ASSERT_TRUE(s.has_value());
    EXPECT_TRUE(s->spec.w_transposed);
    EXPECT_EQ(s->spec.m, 1);
    EXPECT_TRUE(s->spec.has_bias);
  }
  EXPECT_GE(weighted, 6);  // per layer: Q, K, V (or one merged product), out, two MLP products
}
#endif

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
