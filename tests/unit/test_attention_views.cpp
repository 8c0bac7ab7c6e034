// The CUDA executor's attention in place, without a GPU (runtime/cuda/attention_views.h): the
// GPT-2 and BERT exports' Q, K and V resolve to views of their products' outputs (offsets and
// strides checked by hand against the layout), the copy after each attention is gone from the
// steps, and the attention kernels that write in place compile with NVRTC for sm_90 (reading
// in place behind cuBLASLt products, and running all of it against the reference, is the GPU
// model tests' work).
#if defined(GF_HAVE_CUDA) && defined(GF_HAVE_ONNX)

#include <unistd.h>

#include <filesystem>

#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/onnx.h"
#include "passes/split_gemm_scaling.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/attention_views.h"
#include "runtime/cuda/cuda_steps.h"
#include "runtime/session_programs.h"
#include "runtime/step_lifetimes.h"
#include "test_util.h"

namespace gf {
namespace {

Graph export_at(const std::string& file,
                const std::map<std::string, std::vector<int64_t>>& shapes) {
  const std::filesystem::path data =
      std::filesystem::path(__FILE__).parent_path().parent_path() / "models" / "data";
  OnnxImportOptions options;
  options.input_shapes = shapes;
  options.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  const Graph g = import_onnx((data / file).string(), options);
  std::vector<std::vector<int64_t>> dims;
  for (ValueId v : g.inputs()) dims.push_back(g.value(v).type.shape.static_dims());
  SessionOptions session{Device::kCuda};
  session.precision = Precision::kFp16;
  Graph s = specialise(g, dims, session);
  split_gemm_scaling(s);
  return s;
}

struct Steps {
  int attention = 0, in_place = 0, in_place_outputs = 0, views = 0;
  std::vector<std::string> attention_sources;
  std::vector<codegen::ArchTarget> attention_targets;
};

Steps build(const Graph& g) {
  cuda::CudaProgramState state;
  cuda::CudaProgramStats stats;
  // Every product skinny (at most 16 rows here), so no library handle, and no device, is needed.
  cuda::CudaProgramOptions options;
  options.skinny_gemm = SkinnyGemm::kAlways;
  cuda::build_cuda_steps(g, state, stats, 132, 90, options);
  // Every value a step reads is written by an earlier step (or is an input or a constant), as
  // the executor's arena placement requires: it throws otherwise.
  std::vector<StepBuffers> uses;
  for (const cuda::CudaStep& step : state.steps) uses.push_back(step.reads_and_writes(g));
  step_lifetimes(g, uses, LifetimeOptions{true, true, true, state.storage_of});
  Steps s;
  for (const cuda::CudaStep& step : state.steps) {
    s.views += step.label.rfind("kernel gf_view", 0) == 0;
    if (step.label.find("(Attention)") == std::string::npos) continue;
    ++s.attention;
    s.in_place += step.label.find("operands' views in place") != std::string::npos;
    s.in_place_outputs += step.label.find("transposed view in place") != std::string::npos;
    s.attention_sources.push_back(step.kernel.source);
    s.attention_targets.push_back(codegen::arch_target_of(step.kernel));
  }
  return s;
}

int count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

TEST(AttentionViews, Gpt2SplitHeadsAreReadWhereTheQkvProductWroteThem) {
  // GPT-2's c_attn makes [B, S, 3 * H * D]; Split along the last axis, Reshape to [B, S, H, D],
  // Transpose to [B, H, S, D].
  const Graph g = export_at("gpt2_tiny.torchscript.onnx", {{"input_ids", {2, 16}}});
  int checked = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kAttention) continue;
    const std::vector<int64_t> q = g.value(n.inputs[0]).type.shape.static_dims();  // [B, H, S, D]
    const int64_t h = q[1], s = q[2], d = q[3], row = 3 * h * d;
    for (int i = 0; i < 3; ++i) {
      const std::optional<cuda::HeadView> view =
          cuda::input_head_view(g, n.inputs[static_cast<size_t>(i)]);
      ASSERT_TRUE(view.has_value()) << "operand " << i;
      // Element [b, h, s, d] of part i sits at row b * S + s, column i * H * D + h * D + d.
      EXPECT_EQ(view->strides.batch, s * row);
      EXPECT_EQ(view->strides.head, d);
      EXPECT_EQ(view->strides.pos, row);
      EXPECT_EQ(view->strides.offset, i * h * d);
      EXPECT_EQ(g.value(view->buffer).type.shape.static_dims().back(), row);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(AttentionViews, BertSlicedHeadsAreReadWhereTheSiblingProductWroteThem) {
  // fuse_sibling_matmuls makes one [B, S, 3 * H * D] product of BERT's query, key and value and
  // Slices it back along the last axis.
  const Graph g = export_at("bert_tiny.torchscript.onnx",
                            {{"input_ids", {2, 16}}, {"attention_mask", {2, 16}}});
  int checked = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kAttention) continue;
    const std::vector<int64_t> q = g.value(n.inputs[0]).type.shape.static_dims();
    const int64_t h = q[1], s = q[2], d = q[3];
    for (int i = 0; i < 3; ++i) {
      const std::optional<cuda::HeadView> view =
          cuda::input_head_view(g, n.inputs[static_cast<size_t>(i)]);
      ASSERT_TRUE(view.has_value()) << "operand " << i;
      EXPECT_EQ(g.node(view->through.back()).op, Op::kSlice);
      EXPECT_EQ(view->strides.batch, s * 3 * h * d);
      EXPECT_EQ(view->strides.pos, 3 * h * d);
      EXPECT_EQ(view->strides.offset, i * h * d);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(AttentionViews, OperandsAndOutputsAreInPlaceAndTheKernelsCompile) {
  codegen::NvrtcOptions cache;
  cache.cache_dir = std::filesystem::temp_directory_path() /
                    ("gf_test_attention_views_" + std::to_string(getpid()));
  codegen::NvrtcCompiler compiler(cache);
  std::vector<std::string> sources;
  std::vector<codegen::ArchTarget> targets;
  // One token (the row kernel) and 16 (the tensor-core kernel), GPT-2 and BERT.
  // Every product here is a skinny GEMM kernel (no device is needed to plan it); cuBLASLt
  // products (the GPU model tests) take the same views.
  struct Case {
    std::string file;
    std::map<std::string, std::vector<int64_t>> shapes;
  };
  for (const Case& c :
       {Case{"gpt2_tiny.torchscript.onnx", {{"input_ids", {1, 1}}}},
        Case{"gpt2_tiny.torchscript.onnx", {{"input_ids", {1, 16}}}},
        Case{"bert_tiny.torchscript.onnx", {{"input_ids", {1, 16}}, {"attention_mask", {1, 16}}}},
        Case{"llama_tiny.torchscript.onnx", {{"input_ids", {1, 16}}}}}) {
    SCOPED_TRACE(c.file + " at " + std::to_string(c.shapes.begin()->second[1]) + " tokens");
    const Graph g = export_at(c.file, c.shapes);
    const Steps s = build(g);
    EXPECT_EQ(s.attention, count(g, Op::kAttention));
    EXPECT_GT(s.attention, 0);
    EXPECT_EQ(s.in_place_outputs, s.attention);
    EXPECT_EQ(s.in_place, s.attention);
    EXPECT_EQ(s.views, 0);  // no view kernel is left around any attention
    sources.insert(sources.end(), s.attention_sources.begin(), s.attention_sources.end());
    targets.insert(targets.end(), s.attention_targets.begin(), s.attention_targets.end());
  }
  EXPECT_NO_THROW(compiler.compile_all(sources, 90, targets));
  std::filesystem::remove_all(cache.cache_dir);
}

TEST(AttentionViews, AnOperandThatIsNoTransposedViewHasNone) {
  GraphBuilder b("plain");
  const ValueId x = b.input("x", DType::kF16, Shape{2, 4, 8, 16});
  const ValueId y = b.unary(Op::kRelu, x);
  const ValueId t =
      b.op1(Op::kTranspose, {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});  // no Reshape
  b.output(t, "t");
  const Graph g = b.build();
  EXPECT_FALSE(cuda::input_head_view(g, y).has_value());
  EXPECT_FALSE(cuda::input_head_view(g, t).has_value());
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA && GF_HAVE_ONNX
