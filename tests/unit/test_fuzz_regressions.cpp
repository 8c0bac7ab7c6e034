// Regression tests for findings of the fuzz targets (tests/fuzz) and of the sanitizer build:
// each pins the input that broke, so the fix cannot silently regress without the fuzzers.
#include <string>

#include "graphfuse/npy.h"
#include "test_util.h"

#ifdef GF_HAVE_ONNX
#include "test_onnx_util.h"
#endif

namespace gf {
namespace {

// to_npy_bytes wrote a version 1.0 file (2-byte header length) whatever the header's size, so a
// tensor of rank ~22000 (accepted by parse_npy from a 2.0 file) came back as a corrupt file.
TEST(FuzzRegressions, NpyWithAHeaderOver64KiBRoundTripsAsVersion2) {
  const std::vector<int64_t> dims(30000, 1);
  Tensor t(DType::kF32, dims);
  t.data<float>()[0] = 2.5f;
  const std::string bytes = to_npy_bytes(t);
  EXPECT_EQ(bytes[6], '\x02');       // format 2.0
  EXPECT_EQ(bytes.size() % 64, 4u);  // header padded: data starts on a 64-byte boundary
  const Tensor back = parse_npy(bytes);
  EXPECT_EQ(back.dims(), dims);
  EXPECT_EQ(back.data<float>()[0], 2.5f);
  // Small headers keep version 1.0, which every numpy reads.
  EXPECT_EQ(to_npy_bytes(testing::f32({2}, {1, 2}))[6], '\x01');
}

#ifdef GF_HAVE_ONNX
// Reshape's inference skipped the element-count check when the target's product overflowed
// int64, so f32[2,3,4] "reshaped" to [2, 2^62+1]; counting that shape's elements was then
// undefined behaviour (UBSan in fuzz_onnx_import). The importer now refuses such outputs.
TEST(FuzzRegressions, ReshapeToAnOverflowingShapeIsRefusedByTheImporter) {
  const int64_t big = (int64_t{1} << 62) + 1;  // 2 * big wraps around
  testing::OnnxModel m;
  m.input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  auto* target = m.graph().add_initializer();
  target->set_name("target");
  target->set_data_type(onnx::TensorProto::INT64);
  target->add_dims(2);
  target->add_int64_data(2);
  target->add_int64_data(big);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.output("y");
  testing::expect_error(
      [&] { m.import(); }, ErrorCode::kShapeMismatch,
      {"node 'reshape' (Reshape)", std::to_string(big), "more than 2^40 elements"});
}

// Expand, Tile and ConstantOfShape refuse such shapes in their own inference (the importer's
// guard is the backstop for the rest); either way before the folding kernel allocates.
TEST(FuzzRegressions, AbsurdComputedShapesAreRefusedBeforeAllocating) {
  testing::OnnxModel m;
  auto* shape = m.graph().add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(int64_t{1} << 21);
  shape->add_int64_data(int64_t{1} << 21);
  m.input("x", onnx::TensorProto::FLOAT, {1});
  m.node("Expand", {"x", "shape"}, {"y"}, "fill");
  m.output("y");
  OnnxImportOptions options;  // folding on, as in the CLI: the guard runs before the kernel
  options.evaluate = [](const Node& n, std::span<const Tensor> in) { return ref::run_node(n, in); };
  testing::expect_error([&] { m.import(options); }, ErrorCode::kInvalidArgument,
                        {"node 'fill' (Expand)", "[2097152,2097152]", "more than 2^40"});
}
// An initializer whose typed data field is short was allocated at its declared size before the
// count was checked (out of memory in fuzz_onnx_import). Here 2^40 i64 values: 8 TiB, which no
// allocation satisfies, so the old order failed with kOutOfMemory instead of naming the field.
TEST(FuzzRegressions, TypedInitializerDataIsCountedBeforeAllocating) {
  testing::OnnxModel m;
  auto* w = m.graph().add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::INT64);
  w->add_dims(int64_t{1} << 20);
  w->add_dims(int64_t{1} << 20);
  w->add_int64_data(1);
  m.input("x", onnx::TensorProto::INT64, {1});
  m.node("Add", {"x", "w"}, {"y"}, "add");
  m.output("y");
  testing::expect_error([&] { m.import(); }, ErrorCode::kParseError,
                        {"i64[1048576,1048576]", "has 1 values in int64_data, expected 1099511627776"});
}

// Opset rewrites (Softmax before 13, PRelu before 7) read their inputs before the arity check,
// through .at() (an escaped std::out_of_range) or [] (out of bounds).
TEST(FuzzRegressions, LegacyRewritesRefuseNodesWithMissingInputs) {
  OnnxImportOptions options;
  options.run_checker = false;  // the importer's own validation, as for IR versions it lacks
  testing::OnnxModel softmax(11, 6);
  softmax.node("Softmax", {}, {"y"}, "sm");
  softmax.output("y");
  testing::expect_error([&] { softmax.import(options); }, ErrorCode::kInvalidGraph,
                        {"node 'sm' (Softmax)", "required input 0 is missing"});
  testing::OnnxModel prelu(6, 3);
  prelu.input("x", onnx::TensorProto::FLOAT, {1, 3, 2, 2});
  prelu.node("PRelu", {"x"}, {"y"}, "prelu");
  prelu.output("y");
  testing::expect_error([&] { prelu.import(options); }, ErrorCode::kInvalidGraph,
                        {"node 'prelu' (PRelu)", "required input 1 is missing"});
}
#endif

}  // namespace
}  // namespace gf
