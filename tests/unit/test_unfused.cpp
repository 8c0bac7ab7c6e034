// SessionOptions::fuse_kernels = false, the op-by-op baseline: the planner merges nothing
// (fusion::CostModel::one_op_per_kernel), the CPU runs one kernel per op with the reference
// interpreter's results, and the CUDA step builder folds nothing into another op's kernel (no
// norm read by a product, no attention reading its views in place).
#include <filesystem>
#include <tuple>

#include "fusion/plan.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/session_programs.h"
#include "test_util.h"

#if defined(GF_HAVE_CUDA) && defined(GF_HAVE_ONNX)
#include "graphfuse/onnx.h"
#include "runtime/cuda/cuda_steps.h"
#endif

namespace gf {
namespace {

// x -> Add -> Relu -> Mul -> LayerNormalization -> y: one kernel fused, one per op unfused.
Graph chain() {
  GraphBuilder b("chain");
  const ValueId x = b.input("x", DType::kF32, Shape{4, 32});
  const ValueId bias = b.constant("bias", testing::f32({32}, std::vector<float>(32, 0.25f)));
  const ValueId scale = b.constant("scale", testing::f32({32}, std::vector<float>(32, 1.5f)));
  const ValueId v = b.mul(b.op1(Op::kRelu, {b.add(x, bias)}), scale);
  Tensor gamma = testing::f32({32}, std::vector<float>(32, 1.0f));
  Tensor beta = testing::f32({32}, std::vector<float>(32, 0.0f));
  b.output(b.layer_norm(v, b.constant("gamma", gamma), b.constant("beta", beta)), "y");
  return b.build();
}

TEST(Unfused, ThePlannerMergesNothingWithABudgetOfOneOp) {
  const Graph g = chain();
  const fusion::CostModel model = fusion::CostModel::cpu();
  const fusion::Plan fused = fusion::plan_fusion(g, model);
  const fusion::Plan unfused = fusion::plan_fusion(g, model.one_op_per_kernel());
  EXPECT_LT(fused.groups.size(), g.num_nodes());
  EXPECT_EQ(unfused.groups.size(), g.num_nodes());
  for (const fusion::Group& group : unfused.groups) EXPECT_EQ(group.nodes.size(), 1u);
}

TEST(Unfused, TheCpuRunsOneKernelPerOpWithTheReferenceResults) {
  Tensor x(DType::kF32, {4, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 13) - 6.0f;
  const std::vector<Tensor> expected = ref::run_graph(chain(), std::span(&x, 1));
  SessionOptions options;
  options.fuse_kernels = false;
  const Session unfused(chain(), options);
  const std::vector<Tensor> got = unfused.run({x});
  // One kernel per node of the program's graph (the four ops and the output's Identity).
  const Graph program = specialise(chain(), {{4, 32}}, options);
  EXPECT_EQ(unfused.stats().fused_kernels, static_cast<int>(program.num_nodes()));
  EXPECT_GE(program.num_nodes(), 4u);
  const Session fused(chain());
  fused.run({x});
  EXPECT_EQ(fused.stats().fused_kernels, 1);
  ASSERT_EQ(got.size(), 1u);
  testing::expect_values(got[0], {4, 32}, testing::doubles(expected[0]), 1e-5, 1e-5);
}

#if defined(GF_HAVE_CUDA) && defined(GF_HAVE_ONNX)
// The GPT-2 export at one token, every product a skinny GEMM kernel (so no device is needed to
// plan it): fused, each layer's LayerNorm is read by the product after it and the attention
// reads its views in place; unfused, both are steps of their own.
TEST(Unfused, TheCudaStepsFoldNothingIntoAnotherOpsKernel) {
  const std::filesystem::path data =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "models" / "data";
  OnnxImportOptions import;
  import.input_shapes = {{ "input_ids", { 1, 1 } }};
  import.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in);
};
const Graph model = import_onnx((data / "gpt2_tiny.torchscript.onnx").string(), import);
SessionOptions session{Device::kCuda};
session.precision = Precision::kFp16;
const Graph g = specialise(model, {{1, 1}}, session);
auto steps = [&](bool fuse) {
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  cuda::build_cuda_steps(g, state, stats, 132, 90, SkinnyGemm::kAlways, true, fuse);
  int norms = 0, views = 0, attention_in_place = 0;
  for (const cuda::CudaStep& step : state.steps) {
    norms += step.label.find("LayerNormalization") != std::string::npos &&
             step.label.rfind("skinny GEMM", 0) != 0;
    views += step.label.rfind("kernel gf_view", 0) == 0;
    attention_in_place += step.label.find("in place") != std::string::npos;
  }
  return std::tuple{static_cast<int>(state.steps.size()), norms, views, attention_in_place};
};
const auto [fused_steps, fused_norms, fused_views, fused_in_place] = steps(true);
const auto [steps_unfused, norms, views, in_place] = steps(false);
EXPECT_GT(steps_unfused, fused_steps);
EXPECT_GT(norms, fused_norms);  // the norms a product read are kernels again
EXPECT_GT(views, 0);
EXPECT_EQ(fused_views, 0);
EXPECT_GT(fused_in_place, 0);
EXPECT_EQ(in_place, 0);
}
#endif

}  // namespace gf
}  // namespace gf
