// convert_precision against the reference interpreter: the converted graph keeps f32 at its
// boundary, computes in 16 bits inside (but for the ops kept in f32), and its outputs match the
// f32 graph within the 16-bit type's tolerance.
#include <random>

#include "passes/convert_precision.h"
#include "test_util.h"

namespace gf {
namespace {

Tensor random_f32(std::vector<int64_t> dims, uint32_t seed) {
  Tensor t(DType::kF32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// MatMul + bias -> GELU -> LayerNorm -> Softmax, a side branch through ReduceSum (kept in f32)
// and an integer input cast to f32.
Graph mixed_model() {
  GraphBuilder b("mixed");
  const ValueId x = b.input("x", DType::kF32, Shape{3, 16});
  const ValueId ids = b.input("ids", DType::kI64, Shape{3, 8});
  const ValueId w = b.constant("w", random_f32({16, 8}, 1));
  const ValueId bias = b.constant("bias", random_f32({8}, 2));
  const ValueId gamma = b.constant("gamma", random_f32({8}, 3));
  const ValueId beta = b.constant("beta", random_f32({8}, 4));
  ValueId h = b.gelu(b.add(b.matmul(x, w), bias));
  h = b.layer_norm(h, gamma, beta);
  h = b.add(h, b.cast(ids, DType::kF32));
  b.output(b.softmax(h), "probs");
  b.output(b.reduce(Op::kReduceSum, h, {1}), "total");
  return b.build();
}

void check_conversion(DType target, double tol) {
  Graph g = mixed_model();
  Graph low = g;
  const int converted = convert_precision(low, target);
  EXPECT_GT(converted, 5);
  // The boundary keeps its types and names.
  ASSERT_EQ(low.inputs().size(), 2u);
  EXPECT_EQ(low.value(low.inputs()[0]).type, g.value(g.inputs()[0]).type);
  EXPECT_EQ(low.value(low.inputs()[1]).type, g.value(g.inputs()[1]).type);
  ASSERT_EQ(low.outputs().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(low.value(low.outputs()[i]).name, g.value(g.outputs()[i]).name);
    EXPECT_EQ(low.value(low.outputs()[i]).type, g.value(g.outputs()[i]).type);
  }
  // Inside: the product, the norm and the softmax compute in `target`; ReduceSum in f32.
  int seen = 0;
  for (const Node& n : low.nodes()) {
    const DType out = low.value(n.outputs[0]).type.dtype;
    if (n.op == Op::kMatMul || n.op == Op::kLayerNormalization || n.op == Op::kSoftmax) {
      EXPECT_EQ(out, target) << n.name;
      ++seen;
    }
    if (n.op == Op::kReduceSum) {
      EXPECT_EQ(out, DType::kF32) << n.name;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 4);
  verify_graph(low);

  Tensor ids(DType::kI64, {3, 8});
  for (int64_t i = 0; i < ids.numel(); ++i) ids.data<int64_t>()[i] = i % 3;
  const std::vector<Tensor> in = {random_f32({3, 16}, 5), ids};
  const std::vector<Tensor> want = ref::run_graph(g, in);
  const std::vector<Tensor> got = ref::run_graph(low, in);
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(got[i].dtype(), DType::kF32);
    std::vector<double> expected;
    for (int64_t j = 0; j < want[i].numel(); ++j) expected.push_back(want[i].element_as_double(j));
    testing::expect_values(got[i], want[i].dims(), expected, tol, tol);
  }
}

TEST(ConvertPrecision, F16MatchesTheF32GraphWithinHalfPrecision) { check_conversion(DType::kF16, 1e-2); }
TEST(ConvertPrecision, Bf16MatchesTheF32GraphWithinBfloatPrecision) { check_conversion(DType::kBF16, 5e-2); }

TEST(ConvertPrecision, RefusesTargetsOtherThanSixteenBitFloats) {
  Graph g = mixed_model();
  testing::expect_error([&] { convert_precision(g, DType::kF64); }, ErrorCode::kInvalidArgument, {"f64"});
}

TEST(ConvertPrecision, KeepsCastsToIntegersReadingF32) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{4});
  b.output(b.cast(b.unary(Op::kRelu, x), DType::kI64), "n");
  Graph g = b.build();
  convert_precision(g, DType::kF16);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kCast && g.value(n.outputs[0]).type.dtype == DType::kI64) {
      EXPECT_EQ(g.value(n.inputs[0]).type.dtype, DType::kF32);  // read at full precision
    }
  }
  const Tensor in = testing::f32({4}, {3.7f, -2, 20.25f, 7.9f});
  testing::expect_values(ref::run_graph(g, std::vector<Tensor>{in})[0], {4}, {3, 0, 20, 7});
}

// The converted weight of two graphs made from one (a session's programs for two shapes) is one
// tensor; a memo entry goes when its result is no longer held.
TEST(ConvertPrecision, MemoGivesGraphsOfOneSourceTheSameConvertedWeights) {
  const Graph source = mixed_model();
  ConvertedConstants memo;
  auto weight_data = [](const Graph& g) {
    for (size_t v = 0; v < g.num_values(); ++v) {
      const Value& val = g.value(static_cast<ValueId>(v));
      if (val.is_constant() && val.name.rfind("w/", 0) == 0) return val.constant.raw();
    }
    return static_cast<const void*>(nullptr);
  };
  Graph a = source, b = source, alone = source;
  convert_precision(a, DType::kF16, &memo);
  convert_precision(b, DType::kF16, &memo);
  convert_precision(alone, DType::kF16);
  ASSERT_NE(weight_data(a), nullptr);
  EXPECT_EQ(weight_data(a), weight_data(b));
  EXPECT_NE(weight_data(a), weight_data(alone));
  // The shared weight holds the converted values (the memo is not a shortcut past them).
  const Tensor& w = source.value(source.find_value("w")).constant;
  const Half* low = static_cast<const Half*>(weight_data(b));
  for (int64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(float(low[i]), float(Half(w.data<float>()[i])));
  // Another target is another entry.
  Graph bf = source;
  convert_precision(bf, DType::kBF16, &memo);
  EXPECT_NE(weight_data(bf), weight_data(a));
}

}  // namespace
}  // namespace gf
