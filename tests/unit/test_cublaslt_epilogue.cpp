// Which epilogue nodes of a GEMM group the cuBLASLt call computes (plan_gemm_with_epilogue): a
// bias row, then Relu or tanh-GELU, only while each intermediate is read by the next node alone;
// where the match stops; the spec and values the call then has. No device needed; the calls
// run in tests/gpu/test_cublaslt_gemm.cpp.
#ifdef GF_HAVE_CUDA

#include <algorithm>

#include "fusion/plan.h"
#include "passes/split_gemm_scaling.h"
#include "runtime/cuda/gemm_library_choice.h"
#include "runtime/cuda/gemm_plan.h"
#include "runtime/session_programs.h"
#include "test_util.h"

namespace gf {
namespace {

using cuda::GemmEpilogue;

// Every node of `g` in one GEMM group anchored at its first MatMul/Gemm: the widest group a
// planner could form, so that only the matcher's own rules stop it.
fusion::Group whole_graph_group(const Graph& g) {
  fusion::Group group;
  group.kind = fusion::GroupKind::kGemm;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    group.nodes.push_back(id);
    const Op op = g.node(id).op;
    if (group.anchor == kNoNode && (op == Op::kMatMul || op == Op::kGemm)) group.anchor = id;
  }
  return group;
}

cuda::GemmWithEpilogue match(const Graph& g) {
  return cuda::plan_gemm_with_epilogue(g, whole_graph_group(g), false);
}

std::vector<std::string> op_names(const Graph& g, const std::vector<NodeId>& nodes) {
  std::vector<std::string> out;
  for (NodeId id : nodes) out.emplace_back(op_name(g.node(id).op));
  return out;
}

using Names = std::vector<std::string>;

// x [4, 8] times a constant W [8, 16] in `t`.
ValueId product(GraphBuilder& b, DType t = DType::kF16) {
  return b.matmul(b.input("x", t, Shape{4, 8}), b.constant("w", Tensor(t, {8, 16})));
}

TEST(CublasLtEpilogue, MatMulBiasAndTanhGeluAreOneCall) {
  GraphBuilder b;
  const ValueId bias = b.constant("bias", Tensor(DType::kF16, {16}));
  const ValueId y = b.gelu(b.add(product(b), bias), true);
  b.output(y);
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add", "Gelu"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasGeluTanh);
  EXPECT_EQ(m.plan.bias, bias);
  EXPECT_EQ(m.plan.c, y);  // the call writes the Gelu's output; the product is never stored
  EXPECT_EQ(m.plan.spec.m, 4);
  EXPECT_EQ(m.plan.spec.n, 16);
  EXPECT_EQ(m.plan.spec.k, 8);
  EXPECT_NE(m.plan.spec.to_string().find("epilogue bias+gelu_tanh"), std::string::npos)
      << m.plan.spec.to_string();
}

TEST(CublasLtEpilogue, ABiasRowIsTakenInEitherOperandOrderAndAsOneRow) {
  GraphBuilder b;
  const ValueId row = b.input("row", DType::kF32, Shape{1, 16});  // [1, N], not a constant
  b.output(b.unary(Op::kRelu, b.add(row, product(b, DType::kF32))));
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add", "Relu"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasRelu);
  EXPECT_EQ(m.plan.bias, row);
}

TEST(CublasLtEpilogue, GemmWithABiasCAndRelu) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kBF16, Shape{4, 8});
  const ValueId w = b.constant("w", Tensor(DType::kBF16, {16, 8}));  // transB: [N, K]
  const ValueId c = b.constant("c", Tensor(DType::kBF16, {16}));
  const ValueId y = b.unary(Op::kRelu, b.op1(Op::kGemm, {x, w, c}, {{"transB", int64_t{1}}}));
  b.output(y);
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"Gemm", "Relu"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasRelu);
  EXPECT_EQ(m.plan.bias, c);
  EXPECT_EQ(m.plan.c, y);
  EXPECT_TRUE(m.plan.spec.trans_b);
}

TEST(CublasLtEpilogue, ViewsRelabelTheOutputAtAnyStage) {
  // As torch.onnx exports a Linear layer: Gemm(x, W^T, b) -> Reshape [1, M, N] -> Gelu(tanh).
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF16, Shape{4, 8});
  const ValueId w = b.constant("w", Tensor(DType::kF16, {16, 8}));
  const ValueId c = b.constant("c", Tensor(DType::kF16, {16}));
  const ValueId gemm = b.op1(Op::kGemm, {x, w, c}, {{"transB", int64_t{1}}});
  const ValueId y = b.reshape(b.gelu(b.reshape(gemm, {1, 4, 16}), true), {4, 16});
  b.output(y, "y");  // named: an Identity
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"Gemm", "Reshape", "Gelu", "Reshape", "Identity"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasGeluTanh);
  EXPECT_EQ(m.plan.c, g.outputs().front());

  // A view that moves the features off the last dim ([4, 16] as [64]): an [N] row added to it
  // is no bias of the product's columns.
  GraphBuilder b2;
  const ValueId flat = b2.reshape(product(b2), {64});
  b2.output(b2.add(flat, b2.constant("bias", Tensor(DType::kF16, {64}))));
  const Graph g2 = b2.build();
  const cuda::GemmWithEpilogue m2 = match(g2);
  EXPECT_EQ(op_names(g2, m2.nodes), (Names{"MatMul", "Reshape"}));
  EXPECT_EQ(m2.plan.spec.epilogue, GemmEpilogue::kNone);
  EXPECT_EQ(m2.plan.c, flat);
}

TEST(CublasLtEpilogue, AnErfGeluStopsTheMatchAfterTheBias) {
  GraphBuilder b;
  const ValueId sum = b.add(product(b), b.constant("bias", Tensor(DType::kF16, {16})));
  b.output(b.gelu(sum, false));
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(m.plan.c, sum);  // the erf Gelu reads it from the generated kernel
}

// For cuDNN's fused matmul (exact_gelu) the erf Gelu is taken too, and its cuDNN form says so
// (cuBLASLt's refusal of that epilogue is tested on the device: test_cublaslt_gemm.cpp).
TEST(CublasLtEpilogue, AnErfGeluIsTakenForCudnnsFusedMatmul) {
  GraphBuilder b;
  const ValueId bias = b.constant("bias", Tensor(DType::kF16, {16}));
  const ValueId y = b.gelu(b.add(product(b), bias), false);
  b.output(y);
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m =
      cuda::plan_gemm_with_epilogue(g, whole_graph_group(g), false, true);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add", "Gelu"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasGeluErf);
  EXPECT_EQ(m.plan.c, y);
  const std::optional<cuda::CudnnMatmulSpec> s = cuda::cudnn_matmul_spec(m.plan);
  ASSERT_TRUE(s.has_value());
  // The constant W is stored [n, k] on the device (weight_layout.h).
  EXPECT_EQ(s->to_string(), "4x8x16 f16 B^T bias+gelu");
  EXPECT_TRUE(s->b_transposed);
}

// cuDNN's form of a plan: one unbatched call of f16/bf16 with 16-byte rows, or none.
TEST(CublasLtEpilogue, CudnnTakesOneUnbatchedSixteenBitCallWithSixteenByteRows) {
  const auto spec_of = [](DType t, Shape x, Shape w) {
    GraphBuilder b;
    b.output(b.matmul(b.input("x", t, std::move(x)), b.input("w", t, std::move(w))));
    const Graph g = b.build();
    return cuda::cudnn_matmul_spec(cuda::plan_gemm(g, g.node(0), false));
  };
  const std::optional<cuda::CudnnMatmulSpec> folded =
      spec_of(DType::kBF16, Shape{2, 7, 8}, Shape{8, 24});
  ASSERT_TRUE(folded.has_value());  // the shared W folds the batch into 14 rows
  EXPECT_EQ(folded->to_string(), "14x8x24 bf16");
  EXPECT_FALSE(spec_of(DType::kF32, Shape{4, 8}, Shape{8, 16}).has_value());        // f32
  EXPECT_FALSE(spec_of(DType::kF16, Shape{4, 12}, Shape{12, 16}).has_value());      // k % 8
  EXPECT_FALSE(spec_of(DType::kF16, Shape{4, 8}, Shape{8, 20}).has_value());        // n % 8
  EXPECT_FALSE(spec_of(DType::kF16, Shape{3, 4, 8}, Shape{3, 8, 16}).has_value());  // batched
}

// Our tensor-core GEMM's form of a plan (GemmLibrary::kGenerated): one unbatched f16/bf16 call
// with B stored [n, k] (a constant weight) and k a multiple of 8, on sm_90 only; the exact GELU
// epilogue included.
TEST(CublasLtEpilogue, TensorCoreGemmTakesOneUnbatchedCallWithAConstantWeightOnSm90) {
  GraphBuilder b;
  const ValueId bias = b.constant("bias", Tensor(DType::kF16, {16}));
  b.output(b.gelu(b.add(product(b), bias), false));
  const Graph g = b.build();
  const cuda::GemmPlan plan =
      cuda::plan_gemm_with_epilogue(g, whole_graph_group(g), false, true).plan;
  const std::optional<codegen::TensorCoreGemmSpec> s = cuda::tensor_core_gemm_spec(plan, 90);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->to_string(), "f16 m=4 n=16 k=8 +bias +gelu(erf)");
  EXPECT_FALSE(cuda::tensor_core_gemm_spec(plan, 80).has_value());   // no wgmma
  EXPECT_FALSE(cuda::tensor_core_gemm_spec(plan, 100).has_value());  // nor there

  const auto spec_of = [](DType t, Shape x, Shape w, bool constant_w) {
    GraphBuilder gb;
    const ValueId wv =
        constant_w ? gb.constant("w", Tensor(t, w.static_dims())) : gb.input("w", t, w);
    gb.output(gb.matmul(gb.input("x", t, std::move(x)), wv));
    const Graph graph = gb.build();
    return cuda::tensor_core_gemm_spec(cuda::plan_gemm(graph, graph.node(0), false), 90);
  };
  const std::optional<codegen::TensorCoreGemmSpec> folded =
      spec_of(DType::kBF16, Shape{2, 7, 8}, Shape{8, 24}, true);
  ASSERT_TRUE(folded.has_value());  // the shared W folds the batch into 14 rows
  EXPECT_EQ(folded->to_string(), "bf16 m=14 n=24 k=8");
  EXPECT_FALSE(spec_of(DType::kF16, Shape{4, 8}, Shape{8, 16}, false).has_value());   // W [k, n]
  EXPECT_FALSE(spec_of(DType::kF32, Shape{4, 8}, Shape{8, 16}, true).has_value());    // f32
  EXPECT_FALSE(spec_of(DType::kF16, Shape{4, 12}, Shape{12, 16}, true).has_value());  // k % 8
  EXPECT_FALSE(
      spec_of(DType::kF16, Shape{3, 4, 8}, Shape{3, 8, 16}, false).has_value());  // batched
}

TEST(CublasLtEpilogue, AnActivationWithoutBiasIsTakenAndNothingAfterIt) {
  GraphBuilder b;
  const ValueId act = b.gelu(product(b), true);
  b.output(b.add(act, b.constant("bias", Tensor(DType::kF16, {16}))));
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Gelu"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kGeluTanh);
  EXPECT_EQ(m.plan.bias, kNoValue);
  EXPECT_EQ(m.plan.c, act);
}

TEST(CublasLtEpilogue, AGemmBiasIsNotFollowedByASecondBias) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{4, 8});
  const ValueId w = b.constant("w", Tensor(DType::kF32, {8, 16}));
  const ValueId c = b.constant("c", Tensor(DType::kF32, {16}));
  const ValueId gemm = b.op1(Op::kGemm, {x, w, c});
  b.output(b.add(gemm, b.constant("bias2", Tensor(DType::kF32, {16}))));
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"Gemm"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(m.plan.bias, c);
  EXPECT_EQ(m.plan.c, gemm);
}

TEST(CublasLtEpilogue, AnIntermediateReadTwiceStopsTheMatch) {
  // The product also feeds a Mul: the call must store it, so nothing after it is taken.
  GraphBuilder b;
  const ValueId p = product(b);
  b.output(b.unary(Op::kRelu, b.add(p, b.constant("bias", Tensor(DType::kF16, {16})))));
  b.output(b.mul(p, b.constant_scalar(2.0f, DType::kF16)));
  const Graph g = b.build();
  cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kNone);
  EXPECT_EQ(m.plan.c, p);

  // The sum feeds the Relu and a Mul: the bias is taken, the Relu is not.
  GraphBuilder b2;
  const ValueId sum = b2.add(product(b2), b2.constant("bias", Tensor(DType::kF16, {16})));
  b2.output(b2.unary(Op::kRelu, sum));
  b2.output(b2.mul(sum, b2.constant_scalar(2.0f, DType::kF16)));
  const Graph g2 = b2.build();
  m = match(g2);
  EXPECT_EQ(op_names(g2, m.nodes), (Names{"MatMul", "Add"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(m.plan.c, sum);

  // Add(p, p) reads the product twice.
  GraphBuilder b3;
  const ValueId p3 = product(b3, DType::kF32);
  b3.output(b3.add(p3, p3));
  const Graph g3 = b3.build();
  EXPECT_EQ(op_names(g3, match(g3).nodes), (Names{"MatMul"}));
}

TEST(CublasLtEpilogue, AnIntermediateThatIsAGraphOutputStopsTheMatch) {
  GraphBuilder b;
  const ValueId sum = b.add(product(b), b.constant("bias", Tensor(DType::kF16, {16})));
  b.output(b.gelu(sum, true));
  b.output(sum);  // unnamed: no Identity reads it, the output is `sum` itself
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add"}));
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBias);
  EXPECT_EQ(m.plan.c, sum);
}

TEST(CublasLtEpilogue, OnlyABiasRowIsABias) {
  // Against the [4, 16] product: a full [M, N] matrix, a column [M, 1], one value ([1] and
  // [1, 1]): each an Add the generated kernel computes; the Relu after it is not reached.
  for (const Shape& shape : {Shape{4, 16}, Shape{4, 1}, Shape{1}, Shape{1, 1}}) {
    SCOPED_TRACE(shape.to_string());
    GraphBuilder b;
    const ValueId p = product(b, DType::kF32);
    b.output(b.unary(Op::kRelu, b.add(p, b.input("other", DType::kF32, shape))));
    const Graph g = b.build();
    const cuda::GemmWithEpilogue m = match(g);
    EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul"}));
    EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kNone);
    EXPECT_EQ(m.plan.c, p);
  }
  // A row that broadcasts the output to more dims ([1, 1, 16] onto [4, 16] is [1, 4, 16]).
  GraphBuilder b;
  b.output(b.add(product(b, DType::kF32), b.input("row", DType::kF32, Shape{1, 1, 16})));
  const Graph g = b.build();
  EXPECT_EQ(op_names(g, match(g).nodes), (Names{"MatMul"}));
}

TEST(CublasLtEpilogue, ABiasComputedInsideTheGroupIsNotTaken) {
  // The bias row is Relu(r), which the group's generated kernel would compute after the call.
  GraphBuilder b;
  const ValueId row = b.unary(Op::kRelu, b.input("r", DType::kF32, Shape{16}));
  b.output(b.add(product(b, DType::kF32), row));
  const Graph g = b.build();
  EXPECT_EQ(op_names(g, match(g).nodes), (Names{"MatMul"}));
}

TEST(CublasLtEpilogue, BatchedProductsShareTheBiasRow) {
  // Strided batch: [2, 3, 5, 8] x [2, 3, 8, 16] is one call of 6 entries, each adding the row.
  GraphBuilder b;
  const ValueId a = b.input("a", DType::kF32, Shape{2, 3, 5, 8});
  const ValueId w = b.input("w", DType::kF32, Shape{2, 3, 8, 16});
  const ValueId row = b.input("row", DType::kF32, Shape{16});
  b.output(b.gelu(b.add(b.matmul(a, w), row), true));
  const Graph g = b.build();
  const cuda::GemmWithEpilogue m = match(g);
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add", "Gelu"}));
  EXPECT_EQ(m.plan.spec.batch, 6);
  EXPECT_EQ(m.plan.calls.size(), 1u);
  EXPECT_EQ(m.plan.bias, row);

  // Broadcast batches: [2, 1, 8, 16] x [3, 16, 8] is 6 calls at offsets, each adding the row.
  GraphBuilder b2;
  const ValueId a2 = b2.input("a", DType::kF32, Shape{2, 1, 8, 16});
  const ValueId w2 = b2.input("w", DType::kF32, Shape{3, 16, 8});
  b2.output(
      b2.unary(Op::kRelu, b2.add(b2.matmul(a2, w2), b2.input("row", DType::kF32, Shape{1, 8}))));
  const Graph g2 = b2.build();
  const cuda::GemmWithEpilogue m2 = match(g2);
  EXPECT_EQ(op_names(g2, m2.nodes), (Names{"MatMul", "Add", "Relu"}));
  EXPECT_EQ(m2.plan.calls.size(), 6u);
  EXPECT_EQ(m2.plan.spec.epilogue, GemmEpilogue::kBiasRelu);
}

TEST(CublasLtEpilogue, ThePlannersGroupOfAnMlpLayerIsTakenWhole) {
  // As the executor sees it: specialised (passes run), Gemm scaling split, planned for the
  // H200. The bench's graph, MatMul(x, W) + b -> Gelu(tanh), is then one call and no kernel.
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF16, Shape{64, 96});
  const ValueId sum = b.add(b.matmul(x, b.constant("w", Tensor(DType::kF16, {96, 128}))),
                            b.constant("bias", Tensor(DType::kF16, {128})));
  b.output(b.gelu(sum, true), "y");
  const std::vector<std::vector<int64_t>> input_dims{{64, 96}};
  Graph g = specialise(b.build(), input_dims, SessionOptions{Device::kCuda});
  split_gemm_scaling(g);
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  const auto it = std::find_if(
      plan.groups.begin(), plan.groups.end(),
      [](const fusion::Group& group) { return group.kind == fusion::GroupKind::kGemm; });
  ASSERT_NE(it, plan.groups.end());
  const cuda::GemmWithEpilogue m = cuda::plan_gemm_with_epilogue(g, *it, false);
  // The output's name is an Identity after the Gelu: the call writes the output itself.
  EXPECT_EQ(op_names(g, m.nodes), (Names{"MatMul", "Add", "Gelu", "Identity"}));
  EXPECT_EQ(m.nodes.size(), it->nodes.size()) << "nothing is left for an epilogue kernel";
  EXPECT_EQ(m.plan.spec.epilogue, GemmEpilogue::kBiasGeluTanh);
  EXPECT_EQ(m.plan.c, g.outputs().front());
}

TEST(CublasLtEpilogue, EpiloguesComposeAndNameThemselves) {
  using cuda::GemmActivation;
  EXPECT_EQ(cuda::gemm_epilogue(false, GemmActivation::kNone), GemmEpilogue::kNone);
  EXPECT_EQ(cuda::gemm_epilogue(true, GemmActivation::kNone), GemmEpilogue::kBias);
  EXPECT_EQ(cuda::gemm_epilogue(false, GemmActivation::kRelu), GemmEpilogue::kRelu);
  EXPECT_EQ(cuda::gemm_epilogue(true, GemmActivation::kGeluTanh), GemmEpilogue::kBiasGeluTanh);
  EXPECT_TRUE(cuda::has_bias(GemmEpilogue::kBiasRelu));
  EXPECT_FALSE(cuda::has_bias(GemmEpilogue::kGeluTanh));
  EXPECT_STREQ(cuda::gemm_epilogue_name(GemmEpilogue::kBiasRelu), "bias+relu");
  cuda::GemmSpec plain;
  EXPECT_EQ(plain.to_string().find("epilogue"), std::string::npos);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
