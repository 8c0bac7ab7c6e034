// Every op of the op table is fully wired: inference, a reference kernel, a name that parses.
#include "ir/infer.h"
#include "runtime/cpu/reference/kernels.h"
#include "test_util.h"

namespace gf {
namespace {

TEST(OpTable, EveryOpHasInferenceAndAReferenceKernel) {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    EXPECT_NE(infer_table()[static_cast<size_t>(i)], nullptr) << op_name(op) << " has no inference";
    EXPECT_NE(ref::kernel_table()[static_cast<size_t>(i)], nullptr)
        << op_name(op) << " has no reference kernel";
    EXPECT_EQ(parse_op(op_name(op)), op);
    const OpInfo& info = op_info(op);
    EXPECT_LE(info.min_inputs, info.max_inputs) << op_name(op);
    EXPECT_LE(info.min_outputs, info.max_outputs) << op_name(op);
  }
  EXPECT_FALSE(parse_op("NoSuchOp").has_value());
}

TEST(OpTable, WrongKindAttributeErrorsNameTheNode) {
  // Attribute readers know nothing of nodes; inference adds the node, op and shapes.
  testing::expect_error(
      [] { testing::run_op1(Op::kSoftmax, {testing::f32({2}, {1, 2})}, {{"axis", std::string("x")}}); },
      ErrorCode::kInvalidGraph, {"Softmax_under_test", "Softmax", "f32[2]", "axis"});
}

TEST(OpTable, AxisOnAScalarIsOutOfRange) {
  testing::expect_error(
      [] { testing::run_op1(Op::kSoftmax, {Tensor::scalar<float>(1.0f)}, {{"axis", int64_t{0}}}); },
      ErrorCode::kShapeMismatch, {"Softmax"});
}

}  // namespace
}  // namespace gf
