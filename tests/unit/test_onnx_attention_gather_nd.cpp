// Importing ONNX's Attention (opsets 23 to 25) onto our fused Attention op, and GatherND.
// Expected values come from onnx.reference's evaluator on the same models.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "graphfuse/onnx.h"
#include "test_onnx_util.h"
#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::OnnxModel;
using TP = onnx::TensorProto;

void attr_float(onnx::NodeProto& n, const std::string& name, float value) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

// (i - offset) / divisor for i = 0..n-1, shaped as `dims`.
Tensor ramp(std::vector<int64_t> dims, float offset, float divisor) {
  Tensor t(DType::kF32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = (static_cast<float>(i) - offset) / divisor;
  return t;
}

std::vector<Tensor> run(Graph g, const std::vector<Tensor>& inputs) {
  Session s(std::move(g));
  return s.run(inputs);
}

// Y = Attention(Q, K, V) with 4-D inputs of the given shapes.
OnnxModel attention_4d(int64_t opset, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs) {
  OnnxModel m(opset, 10);
  m.input("Q", TP::FLOAT, {1, 4, 2, 2});
  m.input("K", TP::FLOAT, {1, 2, 3, 2});
  m.input("V", TP::FLOAT, {1, 2, 3, 2});
  for (const std::string& in : inputs) {
    if (in == "nonpad_kv_seqlen")
      m.input(in, TP::INT64, {1});
    else if (!in.empty())
      m.input(in, TP::FLOAT, {1, 2, 1, 2});
  }
  std::vector<std::string> all{"Q", "K", "V"};
  all.insert(all.end(), inputs.begin(), inputs.end());
  m.node("Attention", all, outputs, "attn");
  for (const std::string& out : outputs)
    if (!out.empty()) m.output(out);
  return m;
}

TEST(OnnxAttention, Causal4dGroupedQueryAttentionMatchesTheOnnxReference) {
  OnnxModel m = attention_4d(23, {}, {"Y"});
  OnnxModel::attr_int(*m.graph().mutable_node(0), "is_causal", 1);
  Graph g = m.import();
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.node(0).op, Op::kAttention);
  const auto y = run(
      std::move(g), {ramp({1, 4, 2, 2}, 8, 8), ramp({1, 2, 3, 2}, 5, 6), ramp({1, 2, 3, 2}, 0, 4)});
  expect_values(y[0], {1, 4, 2, 2},
                {0.0, 0.25, 0.20984, 0.45984, 0.0, 0.25, 0.238959, 0.488959, 1.5, 1.75, 1.768381,
                 2.018381, 1.5, 1.75, 1.7973, 2.0473},
                1e-5, 1e-5);
}

TEST(OnnxAttention, Packed3dWithBoolMaskScaleAndSoftcapMatchesTheOnnxReference) {
  OnnxModel m(24, 10);
  m.input("Q", TP::FLOAT, {1, 2, 4});
  m.input("K", TP::FLOAT, {1, 3, 2});
  m.input("V", TP::FLOAT, {1, 3, 2});
  m.input("mask", TP::BOOL, {2, 3});
  auto& n = m.node("Attention", {"Q", "K", "V", "mask"}, {"Y"}, "attn3d");
  OnnxModel::attr_int(n, "q_num_heads", 2);
  OnnxModel::attr_int(n, "kv_num_heads", 1);
  attr_float(n, "scale", 0.5f);
  attr_float(n, "softcap", 2.0f);
  // Selects what the qk_matmul_output output would hold; without that output it is moot.
  OnnxModel::attr_int(n, "qk_matmul_output_mode", 1);
  m.output("Y");
  Graph g = m.import();
  EXPECT_FALSE(g.node(0).attrs.has("qk_matmul_output_mode"));
  Tensor mask(DType::kBool, {2, 3});
  const bool mask_values[] = {true, false, true, true, true, false};
  for (int i = 0; i < 6; ++i) mask.data<bool>()[i] = mask_values[i];
  const auto y = run(std::move(g),
                     {ramp({1, 2, 4}, 4, 4), ramp({1, 3, 2}, 3, 3), ramp({1, 3, 2}, 0, 2), mask});
  expect_values(y[0], {1, 2, 4},
                {0.489262, 0.989262, 0.756698, 1.256698, 0.520809, 1.020809, 0.600261, 1.100261},
                1e-5, 1e-5);
}

TEST(OnnxAttention, KvCacheInputsAndOutputsAreUnsupportedNamingTheFeature) {
  expect_error(
      [] {
        attention_4d(23, {"", "past_key", "past_value"}, {"Y"}).import();
      },
      ErrorCode::kUnsupported,
      {"'attn'", "Attention", "input 'past_key' (KV cache)", "input 'past_value'"});
  expect_error(
      [] {
        attention_4d(23, {}, {"Y", "present_key", "present_value"}).import();
      },
      ErrorCode::kUnsupported, {"'attn'", "output 'present_key' (KV cache)"});
  expect_error(
      [] {
        attention_4d(24, {"", "", "", "nonpad_kv_seqlen"}, {"Y"}).import();
      },
      ErrorCode::kUnsupported,
      {"'attn'", "input 'nonpad_kv_seqlen' (per-batch valid key lengths)"});
}

TEST(OnnxAttention, QkMatmulOutputIsUnsupported) {
  expect_error(
      [] {
        attention_4d(23, {}, {"Y", "", "", "scores"}).import();
      },
      ErrorCode::kUnsupported, {"'attn'", "Attention", "output 'qk_matmul_output'"});
}

TEST(OnnxAttention, SlidingWindowOfOpset25IsUnsupportedButItsDefaultImports) {
  OnnxModel windowed = attention_4d(25, {}, {"Y"});
  OnnxModel::attr_int(*windowed.graph().mutable_node(0), "left_window_size", 2);
  expect_error([&] { windowed.import(); }, ErrorCode::kUnsupported,
               {"'attn'", "left_window_size=2 (sliding window)"});
  OnnxModel unbounded = attention_4d(25, {}, {"Y"});
  OnnxModel::attr_int(*unbounded.graph().mutable_node(0), "left_window_size", -1);
  OnnxModel::attr_int(*unbounded.graph().mutable_node(0), "right_window_size", -1);
  Graph g = unbounded.import();
  EXPECT_FALSE(g.node(0).attrs.has("left_window_size"));
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[1,4,2,2]");
}

TEST(OnnxAttention, UnsupportedFeaturesAreReportedWithoutConverting) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gf_onnx_attention_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(path, std::ios::binary)
      << attention_4d(23, {"", "past_key", "past_value"}, {"Y", "present_key"}).bytes();
  const std::vector<std::string> missing = onnx_unsupported_features(path.string());
  std::ofstream(path, std::ios::binary) << attention_4d(23, {}, {"Y"}).bytes();
  const std::vector<std::string> none = onnx_unsupported_features(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(missing, (std::vector<std::string>{"Attention input 'past_key' (KV cache)",
                                               "Attention input 'past_value' (KV cache)",
                                               "Attention output 'present_key' (KV cache)"}));
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(onnx_op_is_supported("Attention"));
  EXPECT_FALSE(onnx_op_is_supported("Attention", "com.microsoft"));
}

TEST(OnnxGatherND, ImportsWithBatchDimsAndComputesValues) {
  OnnxModel m(13);
  m.input("data", TP::FLOAT, {-1, 3, 2}, {"batch"});
  m.input("idx", TP::INT64, {-1, 1}, {"batch"});
  auto& n = m.node("GatherND", {"data", "idx"}, {"y"}, "gnd");
  OnnxModel::attr_int(n, "batch_dims", 1);
  m.output("y");
  Graph g = m.import();
  EXPECT_EQ(g.node(0).op, Op::kGatherND);
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[batch,2]");
  expect_values(run(std::move(g), {ramp({2, 3, 2}, 0, 1), testing::i64({2, 1}, {2, -3})})[0],
                {2, 2}, {4, 5, 6, 7});
  EXPECT_TRUE(onnx_op_is_supported("GatherND"));
}

}  // namespace
}  // namespace gf
