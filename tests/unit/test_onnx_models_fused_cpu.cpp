// The torch.onnx exports in tests/models/data on the fused CPU backend: every node runs in a
// generated or anchor kernel (none on the reference kernels: the embeddings' gathers and BERT's
// GatherND included), and the outputs match the reference interpreter.
#include <filesystem>

#include "graphfuse/npy.h"
#include "graphfuse/onnx.h"
#include "recorded_models.h"
#include "test_util.h"

namespace gf {
namespace {

struct ModelCase {
  std::string file, prefix;
  std::vector<std::string> inputs;
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.file; }

class FusedCpuModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(FusedCpuModels, RunWithoutReferenceStepsAndMatchTheReference) {
  const ModelCase& c = GetParam();
  const testing::RecordedModel m = testing::load_recorded_model(c.file, c.prefix, c.inputs);
  const Graph& g = m.graph;
  const std::vector<Tensor>& inputs = m.inputs;
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  Session session(g);
  const std::vector<Tensor> got = session.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    double scale = 0;
    for (int64_t j = 0; j < want[i].numel(); ++j) scale = std::max(scale, std::fabs(want[i].element_as_double(j)));
    testing::expect_values(got[i], want[i].dims(), testing::doubles(want[i]), 1e-4, 1e-4 * scale);
  }
  const SessionStats st = session.stats();
  std::string reasons;
  for (const std::string& r : st.fallback_reasons) reasons += "\n  " + r;
  EXPECT_GT(st.fused_kernels, 0);
  EXPECT_EQ(st.fallback_nodes, 0) << "fallbacks:" << reasons;
  EXPECT_EQ(st.reference_steps, 0) << "fallbacks:" << reasons;
}

INSTANTIATE_TEST_SUITE_P(
    TorchExports, FusedCpuModels,
    ::testing::Values(ModelCase{"gpt2_tiny.torchscript.onnx", "gpt2_tiny", {"input_ids"}},
                      ModelCase{"gpt2_tiny.dynamo.onnx", "gpt2_tiny", {"input_ids"}},
                      ModelCase{"bert_tiny.torchscript.onnx", "bert_tiny", {"input_ids", "attention_mask"}},
                      ModelCase{"bert_tiny.dynamo.onnx", "bert_tiny", {"input_ids", "attention_mask"}},
                      ModelCase{"vit_tiny.torchscript.onnx", "vit_tiny", {"pixel_values"}},
                      ModelCase{"vit_tiny.dynamo.onnx", "vit_tiny", {"pixel_values"}},
                      ModelCase{"llama_tiny.torchscript.onnx", "llama_tiny", {"input_ids"}},
                      ModelCase{"llama_tiny.dynamo.onnx", "llama_tiny", {"input_ids"}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.size() - 5);
      for (char& ch : name)
        if (ch == '.') ch = '_';
      return name;
    });

}  // namespace
}  // namespace gf
