// The ONNX importer: models, initializers, constants, symbolic dims, bindings and bad files.
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

// y = Relu(x + w), w an initializer.
OnnxModel add_relu_model(bool raw = true) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {2, 3});
  m.initializer_f32("w", {3}, {1.0f, -2.0f, 0.5f}, raw);
  m.node("Add", {"x", "w"}, {"s"}, "add");
  m.node("Relu", {"s"}, {"y"}, "relu");
  m.output("y");
  return m;
}

OnnxImportOptions no_checker() {
  OnnxImportOptions o;
  o.run_checker = false;
  return o;
}

std::vector<Tensor> run(Graph g, const std::vector<Tensor>& inputs) {
  Session s(std::move(g));
  return s.run(inputs);
}

TEST(OnnxImport, AddReluWithRawInitializerComputesValues) {
  Graph g = add_relu_model().import();
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[2,3]");
  auto out = run(std::move(g), {testing::f32({2, 3}, {0, 1, 2, -3, 4, -5})});
  expect_values(out[0], {2, 3}, {1, 0, 2.5, 0, 2, 0});
}

TEST(OnnxImport, TypedFieldInitializerMatchesRawOne) {
  auto out = run(add_relu_model(false).import(), {testing::f32({2, 3}, {0, 1, 2, -3, 4, -5})});
  expect_values(out[0], {2, 3}, {1, 0, 2.5, 0, 2, 0});
}

TEST(OnnxImport, RawInitializersShareTheModelsStorageInsteadOfCopies) {
  OnnxModel m = add_relu_model();
  m.initializer_f32("w2", {2}, {4.0f, 5.0f});
  m.output("w2");
  Graph g = m.import();  // the serialized bytes are gone after this line
  const Tensor& w = g.value(g.find_value("w")).constant;
  const Tensor& w2 = g.value(g.find_value("w2")).constant;
  // Wrapped tensors keep the parsed model alive through one shared owner; copies would each
  // own their own allocation.
  EXPECT_FALSE(w.storage().owner_before(w2.storage()) || w2.storage().owner_before(w.storage()));
  expect_values(w, {3}, {1.0, -2.0, 0.5});
  expect_values(w2, {2}, {4.0, 5.0});
}

TEST(OnnxImport, ConstantNodesBecomeConstants) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {3});
  auto& c = m.node("Constant", {}, {"c"}, "const");
  auto* a = c.add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float v : {10.0f, 20.0f, 30.0f}) a->add_floats(v);
  m.node("Add", {"x", "c"}, {"y"});
  m.output("y");
  Graph g = m.import();
  EXPECT_TRUE(g.value(g.find_value("c")).is_constant());
  EXPECT_EQ(g.num_nodes(), 1u);
  expect_values(run(std::move(g), {testing::f32({3}, {1, 2, 3})})[0], {3}, {11, 22, 33});
}

TEST(OnnxImport, ConstantValueIntIsAnI64Scalar) {
  OnnxModel m;
  m.input("x", TP::INT64, {2});
  auto& c = m.node("Constant", {}, {"c"}, "const");
  auto* a = c.add_attribute();
  a->set_name("value_int");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(7);
  m.node("Add", {"x", "c"}, {"y"});
  m.output("y", TP::INT64);
  Graph g = m.import();
  EXPECT_EQ(g.value(g.find_value("c")).constant.type_string(), "i64[]");
  expect_values(run(std::move(g), {testing::i64({2}, {1, -1})})[0], {2}, {8, 6});
}

TEST(OnnxImport, SymbolicDimsStayUntilBound) {
  OnnxModel m;
  m.input("a", TP::FLOAT, {-1, 4}, {"batch"});
  m.input("b", TP::FLOAT, {-1, 4}, {"batch"});
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y");
  Graph g = m.import();
  EXPECT_EQ(g.value(g.inputs()[0]).type.to_string(), "f32[batch,4]");
  EXPECT_EQ(g.value(g.outputs()[0]).type.to_string(), "f32[batch,4]");

  OnnxImportOptions o;
  o.input_shapes["a"] = {3, 4};
  Graph bound = m.import(o);
  // The binding of "batch" through input a also fixes input b.
  EXPECT_EQ(bound.value(bound.inputs()[1]).type.to_string(), "f32[3,4]");
  EXPECT_EQ(bound.value(bound.outputs()[0]).type.to_string(), "f32[3,4]");
}

TEST(OnnxImport, BadBindingsNameTheInput) {
  OnnxModel m;
  m.input("a", TP::FLOAT, {-1, 4}, {"batch"});
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  OnnxImportOptions rank;
  rank.input_shapes["a"] = {3};
  expect_error([&] { m.import(rank); }, ErrorCode::kShapeMismatch, {"'a'", "f32[batch,4]"});
  OnnxImportOptions fixed;
  fixed.input_shapes["a"] = {3, 5};
  expect_error([&] { m.import(fixed); }, ErrorCode::kShapeMismatch, {"'a'", "3x5"});
  OnnxImportOptions unknown;
  unknown.input_shapes["nope"] = {1};
  expect_error([&] { m.import(unknown); }, ErrorCode::kInvalidArgument, {"no input named 'nope'", "a"});
  OnnxImportOptions huge;
  huge.input_shapes["a"] = {int64_t{1} << 30, int64_t{1} << 30};
  expect_error([&] { m.import(huge); }, ErrorCode::kInvalidArgument, {"2^40"});
}

TEST(OnnxImport, UnknownOpIsUnsupportedNamingNodeOpAndDomain) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {2});
  m.node("FrobnicateV2", {"x"}, {"y"}, "frob");
  m.output("y");
  expect_error([&] { m.import(); }, ErrorCode::kUnsupported, {"'frob'", "FrobnicateV2", "ai.onnx"});

  OnnxModel ms;
  ms.input("x", TP::FLOAT, {2});
  auto& n = ms.node("Relu", {"x"}, {"y"}, "ms_relu");
  n.set_domain("com.microsoft");
  ms.output("y");
  expect_error([&] { ms.import(); }, ErrorCode::kUnsupported, {"'ms_relu'", "Relu", "com.microsoft"});
}

TEST(OnnxImport, MissingInitializerNamesTheNodeAndValue) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {2});
  m.node("Add", {"x", "weight_missing"}, {"y"}, "add");
  m.output("y");
  expect_error([&] { m.import(); }, ErrorCode::kInvalidGraph, {"'add'", "Add", "'weight_missing'"});
}

TEST(OnnxImport, CyclicGraphIsRejected) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {2});
  m.node("Add", {"x", "b"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.output("b");
  expect_error([&] { m.import(); }, ErrorCode::kInvalidGraph, {"cycle", "Add"});
}

TEST(OnnxImport, NodesOutOfOrderAreSorted) {
  OnnxModel m;
  m.input("x", TP::FLOAT, {2});
  m.node("Relu", {"a"}, {"y"}, "second");
  m.node("Add", {"x", "x"}, {"a"}, "first");
  m.output("y");
  Graph g = m.import(no_checker());
  expect_values(run(std::move(g), {testing::f32({2}, {1, -2})})[0], {2}, {2, 0});
}

TEST(OnnxImport, TruncatedAndRandomBytesAreParseErrors) {
  const std::string bytes = add_relu_model().bytes();
  expect_error([&] { import_onnx_bytes(bytes.substr(0, bytes.size() / 2)); }, ErrorCode::kParseError, {"ONNX model"});
  std::string noise(512, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 7919 + 13) % 251);
  expect_error([&] { import_onnx_bytes(noise); }, ErrorCode::kParseError, {"ONNX model"});
  expect_error([&] { import_onnx_bytes(""); }, ErrorCode::kParseError, {"ONNX model"});
  expect_error([&] { import_onnx("/nonexistent/model.onnx"); }, ErrorCode::kIoError, {"/nonexistent/model.onnx"});
}

TEST(OnnxImport, UnsupportedDtypesNameTheTensor) {
  OnnxModel m;
  m.input("text", TP::STRING, {2});
  m.node("Identity", {"text"}, {"y"});
  m.output("y", TP::STRING);
  expect_error([&] { m.import(); }, ErrorCode::kUnsupported, {"input 'text'", "STRING"});

  OnnxModel u16;
  u16.input("x", TP::FLOAT, {2});
  auto* t = u16.graph().add_initializer();
  t->set_name("w16");
  t->set_data_type(TP::UINT16);
  t->add_dims(2);
  t->add_int32_data(1);
  t->add_int32_data(2);
  u16.node("Add", {"x", "w16"}, {"y"});
  u16.output("y");
  expect_error([&] { u16.import(); }, ErrorCode::kUnsupported, {"initializer 'w16'", "UINT16"});
}

TEST(OnnxImport, InitializerDataMustMatchItsShape) {
  OnnxModel m = add_relu_model();
  m.graph().mutable_initializer(0)->add_dims(2);  // [3,2] but only 3 floats of data
  expect_error([&] { m.import(no_checker()); }, ErrorCode::kParseError, {"initializer 'w'", "f32[3,2]"});
}

TEST(OnnxImport, AbsurdAndNegativeDimsAreRefusedBeforeAllocating) {
  OnnxModel m = add_relu_model();
  auto* w = m.graph().mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 30);
  w->add_dims(int64_t{1} << 30);
  expect_error([&] { m.import(no_checker()); }, ErrorCode::kParseError, {"'w'", "2^40"});

  OnnxModel neg;
  neg.input("x", TP::FLOAT, {2, -5});
  neg.node("Relu", {"x"}, {"y"});
  neg.output("y");
  expect_error([&] { neg.import(no_checker()); }, ErrorCode::kInvalidGraph, {"input 'x'", "-5"});

  OnnxModel big;
  big.input("x", TP::FLOAT, {int64_t{1} << 50});
  big.node("Relu", {"x"}, {"y"});
  big.output("y");
  expect_error([&] { big.import(); }, ErrorCode::kInvalidGraph, {"input 'x'", "absurd"});
}

TEST(OnnxImport, CheckerMessageIsPassedOn) {
  OnnxModel m(13);
  m.input("x", TP::FLOAT, {2});
  m.node("Relu", {"x", "x"}, {"y"}, "two_inputs");  // Relu takes one input
  m.output("y");
  expect_error([&] { m.import(); }, ErrorCode::kInvalidGraph, {"ONNX checker", "two_inputs"});
}

TEST(OnnxImport, NewerIrAndOpsetThanLibonnxKnowsStillLoad) {
  // PyTorch's dynamo exporter writes IR 10 and opset 18+; libonnx 1.12 knows IR 8 and opset 17.
  OnnxModel m(/*opset=*/21, /*ir_version=*/10);
  m.input("x", TP::FLOAT, {2, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  Graph g = m.import();
  expect_values(run(std::move(g), {testing::f32({2, 3}, {-1, 2, -3, 4, -5, 6})})[0], {2, 3}, {0, 2, 0, 4, 0, 6});
}

TEST(OnnxImport, OpsetsOutsideTheSupportedRangeAreUnsupported) {
  OnnxModel old(5);
  old.input("x", TP::FLOAT, {2});
  old.node("Relu", {"x"}, {"y"});
  old.output("y");
  expect_error([&] { old.import(); }, ErrorCode::kUnsupported, {"opset 5"});
}

TEST(OnnxImport, ReduceSumAxesAttributeOfOpset11BecomesAnInput) {
  OnnxModel m(11);
  m.input("x", TP::FLOAT, {2, 3});
  auto& n = m.node("ReduceSum", {"x"}, {"y"}, "sum");
  OnnxModel::attr_ints(n, "axes", {1});
  OnnxModel::attr_int(n, "keepdims", 0);
  m.output("y");
  Graph g = m.import();
  const Node& sum = g.node(0);
  ASSERT_EQ(sum.inputs.size(), 2u);
  EXPECT_FALSE(sum.attrs.has("axes"));
  expect_values(g.value(sum.inputs[1]).constant, {1}, {1});
  expect_values(run(std::move(g), {testing::f32({2, 3}, {1, 2, 3, 4, 5, 6})})[0], {2}, {6, 15});
}

TEST(OnnxImport, ReduceSumAxesInputOfOpset18IsKept) {
  OnnxModel m(18, 10);
  m.input("x", TP::FLOAT, {2, 3});
  auto* axes = m.graph().add_initializer();
  axes->set_name("axes");
  axes->set_data_type(TP::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  m.node("ReduceSum", {"x", "axes"}, {"y"}, "sum");
  m.output("y");
  expect_values(run(m.import(), {testing::f32({2, 3}, {1, 2, 3, 4, 5, 6})})[0], {1, 3}, {5, 7, 9});
}

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gf_onnx_ext_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    const float values[4] = {0.0f, 1.0f, -2.0f, 0.5f};  // w = values[1..3] at offset 4
    std::ofstream(dir_ / "weights.bin", std::ios::binary).write(reinterpret_cast<const char*>(values), sizeof values);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  OnnxModel model(const std::string& location, const std::string& offset, const std::string& length) {
    OnnxModel m;
    m.input("x", TP::FLOAT, {3});
    auto* t = m.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(TP::FLOAT);
    t->add_dims(3);
    t->set_data_location(TP::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", location}, {"offset", offset}, {"length", length}}) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    return m;
  }
  Graph import_file(const OnnxModel& m) {
    const auto path = dir_ / "model.onnx";
    std::ofstream(path, std::ios::binary) << m.bytes();
    return import_onnx(path.string(), no_checker());
  }

  std::filesystem::path dir_;
};

TEST_F(OnnxExternalData, ReadsTheTensorAtItsOffset) {
  Graph g = import_file(model("weights.bin", "4", "12"));
  expect_values(run(std::move(g), {testing::f32({3}, {1, 1, 1})})[0], {3}, {2, -1, 1.5});
}

TEST_F(OnnxExternalData, OffsetOrLengthBeyondTheFileIsRefused) {
  expect_error([&] { import_file(model("weights.bin", "8", "12")); }, ErrorCode::kParseError,
               {"initializer 'w'", "weights.bin", "16 bytes", "offset 8"});
  expect_error([&] { import_file(model("weights.bin", "4", "8")); }, ErrorCode::kParseError, {"length 8"});
}

TEST_F(OnnxExternalData, PathsOutsideTheModelFolderAreRefused) {
  expect_error([&] { import_file(model("../weights.bin", "0", "12")); }, ErrorCode::kParseError, {"relative path"});
  expect_error([&] { import_file(model("/etc/passwd", "0", "12")); }, ErrorCode::kParseError, {"relative path"});
  expect_error([&] { import_file(model("missing.bin", "0", "12")); }, ErrorCode::kIoError, {"missing.bin"});
}

TEST_F(OnnxExternalData, InMemoryModelsRefuseExternalData) {
  expect_error([&] { model("weights.bin", "4", "12").import(no_checker()); }, ErrorCode::kUnsupported,
               {"external file"});
}

TEST(OnnxImport, TensorFileReaderReadsNameAndData) {
  TP t;
  t.set_name("input_0");
  t.set_data_type(TP::INT64);
  t.add_dims(2);
  t.add_int64_data(5);
  t.add_int64_data(-6);
  const auto path = std::filesystem::temp_directory_path() / ("gf_tensor_" + std::to_string(::getpid()) + ".pb");
  std::ofstream(path, std::ios::binary) << t.SerializeAsString();
  std::string name;
  Tensor read = read_onnx_tensor_file(path.string(), &name);
  std::filesystem::remove(path);
  EXPECT_EQ(name, "input_0");
  expect_values(read, {2}, {5, -6});
}

TEST(OnnxImport, SupportedOpTypesIncludeConstantAndTheImplementedOps) {
  const std::vector<std::string> ops = supported_onnx_op_types();
  for (const char* op : {"Constant", "Relu", "Add", "Identity", "ReduceSum"}) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  }
  EXPECT_TRUE(onnx_op_is_supported("Relu", "ai.onnx"));
  EXPECT_FALSE(onnx_op_is_supported("Relu", "com.microsoft"));
  EXPECT_FALSE(onnx_op_is_supported("Resize"));
}

}  // namespace
}  // namespace gf
