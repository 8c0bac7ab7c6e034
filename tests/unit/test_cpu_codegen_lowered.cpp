// Planner -> lower_group -> CPU code generator -> JIT, on small models, against the reference
// interpreter running the same graph unfused.
#include <map>

#include "fusion/plan.h"
#include "test_cpu_codegen_util.h"

namespace gf {
namespace {

// Runs `g` group by group: kernel groups through the JIT (all compiled up front, in parallel),
// view and opaque groups through the reference kernels. Returns g.outputs().
std::vector<Tensor> run_fused(const Graph& g, const std::vector<Tensor>& inputs,
                              int* kernel_count = nullptr) {
  const fusion::Plan plan = fusion::plan_fusion(g, fusion::CostModel::h200());
  std::vector<fusion::FusedKernel> kernels(plan.groups.size());
  std::vector<std::string> sources;
  std::vector<size_t> source_of(plan.groups.size(), SIZE_MAX);
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const fusion::Group& group = plan.groups[i];
    if (group.kind == fusion::GroupKind::kView || group.kind == fusion::GroupKind::kOpaque)
      continue;
    kernels[i] = fusion::lower_group(g, group, "fused_" + std::to_string(i));
    source_of[i] = sources.size();
    sources.push_back(codegen::emit_cpu_kernel(kernels[i], g));
  }
  if (kernel_count) *kernel_count = static_cast<int>(sources.size());
  const auto libs = testing::jit().compile_all(sources);

  std::map<ValueId, Tensor> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[g.inputs()[i]] = inputs[i];
  auto value = [&](ValueId v) -> Tensor& {
    if (!values.count(v)) values[v] = g.value(v).constant;
    return values.at(v);
  };
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    if (source_of[i] == SIZE_MAX) {
      for (NodeId id : plan.groups[i].nodes) {
        const Node& n = g.node(id);
        std::vector<Tensor> ins;
        for (ValueId v : n.inputs) ins.push_back(v == kNoValue ? Tensor() : value(v));
        const std::vector<Tensor> outs = ref::run_node(n, ins);
        for (size_t o = 0; o < outs.size(); ++o) values[n.outputs[o]] = outs[o];
      }
      continue;
    }
    std::vector<void*> buffers;
    for (const fusion::KernelBuffer& b : kernels[i].buffers) {
      if (b.is_output) values[b.value] = Tensor(b.dtype, b.dims);
      buffers.push_back(value(b.value).raw());
    }
    libs[source_of[i]]->kernel(kernels[i].name)(buffers.data());
  }
  std::vector<Tensor> outputs;
  for (ValueId v : g.outputs()) outputs.push_back(value(v));
  return outputs;
}

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 23) + offset;
  return v;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    EXPECT_EQ(got[i].dtype(), want[i].dtype());
    testing::expect_values(got[i], want[i].dims(), testing::as_doubles(want[i]), rtol, atol);
  }
}

TEST(CpuCodegenLowered, BiasGeluLayerNormSoftmaxAndColumnSum) {
  GraphBuilder b("block");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({4, 16}));
  const ValueId bias = b.constant("bias", testing::f32({16}, ramp(16, 0.1f, -1.f)));
  const ValueId gamma = b.constant("gamma", testing::f32({16}, ramp(16, 0.05f, 0.5f)));
  const ValueId beta = b.constant("beta", testing::f32({16}, ramp(16, -0.02f, 0.1f)));
  const ValueId h = b.gelu(b.add(x, bias));
  const ValueId y = b.layer_norm(h, gamma, beta);
  b.output(b.softmax(y), "probs");
  b.output(b.reduce(Op::kReduceSum, h, {0}, false), "col_sum");
  const Graph g = b.build();

  const std::vector<Tensor> in = {testing::f32({4, 16}, ramp(64, 0.3f, -3.f))};
  int kernels = 0;
  const auto got = run_fused(g, in, &kernels);
  EXPECT_GE(kernels, 2);
  expect_same(got, ref::run_graph(g, in), 1e-5, 1e-6);
}

TEST(CpuCodegenLowered, HalfPrecisionChainMatchesTheReferenceBitForBit) {
  // f16 in, per-op rounding in the kernel as in the reference: exact equality.
  GraphBuilder b("half");
  const ValueId x = b.input("x", DType::kF16, Shape::from_static({3, 8}));
  const ValueId s = b.input("s", DType::kF16, Shape::from_static({8}));
  const ValueId t = b.unary(Op::kTanh, b.mul(b.add(x, s), s));
  b.output(b.cast(b.unary(Op::kRelu, t), DType::kF32), "out32");
  b.output(t, "out16");
  const Graph g = b.build();
  const std::vector<Tensor> in = {
      testing::to_dtype(testing::f32({3, 8}, ramp(24, 0.37f, -4.f)), DType::kF16),
      testing::to_dtype(testing::f32({8}, ramp(8, 0.11f, 0.3f)), DType::kF16)};
  expect_same(run_fused(g, in), ref::run_graph(g, in), 0, 0);
}

}  // namespace
}  // namespace gf
