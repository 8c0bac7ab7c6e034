// MatMul and Gemm: shape inference (symbolic and concrete) and the reference kernels.
#include <cmath>
#include <limits>

#include "test_linear_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::pattern;
using testing::run_op1;
using testing::to_dtype;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(LinearMatMul, TwoByThreeTimesThreeByTwo) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]], by hand.
  Tensor y =
      run_op1(Op::kMatMul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  expect_values(y, {2, 2}, {58, 64, 139, 154});
}

TEST(LinearMatMul, VectorTimesVectorIsAScalar) {
  Tensor y = run_op1(Op::kMatMul, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})});
  expect_values(y, {}, {32});
}

TEST(LinearMatMul, OneDimensionalOperandsArePromotedAndTheDimRemoved) {
  // Values from onnx.reference (MatMul) on pattern([4], 3) x pattern([2,4,3], 4).
  expect_values(run_op1(Op::kMatMul, {pattern({4}, 3), pattern({2, 4, 3}, 4)}), {2, 3},
                {-0.5625, 1.9375, -2.875, 1.8125, -0.5625, 1.9375});
  // pattern([2,3,4], 5) x pattern([4], 6).
  expect_values(run_op1(Op::kMatMul, {pattern({2, 3, 4}, 5), pattern({4}, 6)}), {2, 3},
                {-0.125, -0.25, -0.375, -0.5, -0.625, -0.75});
  // Matrix x vector, by hand.
  expect_values(run_op1(Op::kMatMul, {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, -1})}), {2},
                {-1, -1});
}

// onnx.reference (MatMul) on pattern([2,1,2,3], 1) x pattern([3,3,2], 2): batch dims 2x1 and 3
// broadcast to 2x3.
const std::vector<double> kBatchBroadcast = {0,       0.375,   0.6875, -3.0625, -0.1875, 0.1875,
                                             2.5625,  -1.1875, -2,     0,       0.375,   0.6875,
                                             -0.25,   1.625,   -0.375, 2.25,    -1.1875, 0.6875,
                                             -1.6875, 0.9375,  1.9375, -0.25,   -1.375,  -0.375};

TEST(LinearMatMul, BatchDimsBroadcast) {
  Tensor y = run_op1(Op::kMatMul, {pattern({2, 1, 2, 3}, 1), pattern({3, 3, 2}, 2)});
  expect_values(y, {2, 3, 2, 2}, kBatchBroadcast);
}

TEST(LinearMatMul, OddSizedBatchAgreesWithTheDefinition) {
  // Sizes off every BLAS blocking boundary, with the right operand broadcast over the batch;
  // the expectation is the triple loop of the definition, in double.
  const int64_t batch = 3, m = 33, k = 47, n = 29;
  const Tensor a = pattern({batch, m, k}, 1), b = pattern({k, n}, 2);
  std::vector<double> expected;
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.element_as_double((t * m + i) * k + p) * b.element_as_double(p * n + j);
        expected.push_back(acc);
      }
  expect_values(run_op1(Op::kMatMul, {a, b}), {batch, m, n}, expected, 1e-5, 1e-5);
  expect_values(run_op1(Op::kMatMul, {to_dtype(a, DType::kF64), to_dtype(b, DType::kF64)}),
                {batch, m, n}, expected, 1e-12, 1e-12);
}

TEST(LinearMatMul, EveryDtype) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(Op::kMatMul, {pattern({2, 1, 2, 3}, 1, t), pattern({3, 3, 2}, 2, t)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 3, 2, 2}, kBatchBroadcast, testing::tolerance(t), 1e-3);
  }
  for (DType t : {DType::kI32, DType::kI64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor a = to_dtype(f32({2, 3}, {1, -2, 3, 4, 5, -6}), t);
    Tensor b = to_dtype(f32({3, 2}, {7, 8, 9, 10, 11, 12}), t);
    Tensor y = run_op1(Op::kMatMul, {a, b});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 2}, {22, 24, 7, 10});
  }
}

TEST(LinearMatMul, Int32WrapsLikeTheHardware) {
  // 65536 * 65536 = 2^32 wraps to 0 in int32 (as numpy's int32 matmul does); +3 stays.
  Tensor a = Tensor::from_vector<int32_t>({2}, {65536, 1});
  Tensor b = Tensor::from_vector<int32_t>({2}, {65536, 3});
  expect_values(run_op1(Op::kMatMul, {a, b}), {}, {3});
  Tensor c = Tensor::from_vector<int64_t>({1}, {int64_t{1} << 40});
  expect_values(run_op1(Op::kMatMul, {c, Tensor::from_vector<int64_t>({1}, {4})}), {},
                {static_cast<double>(int64_t{1} << 42)});
}

TEST(LinearMatMul, EmptyDims) {
  // K = 0: an empty sum is 0.
  expect_values(run_op1(Op::kMatMul, {Tensor(DType::kF32, {2, 0}), Tensor(DType::kF32, {0, 3})}),
                {2, 3}, std::vector<double>(6, 0.0));
  expect_values(run_op1(Op::kMatMul, {Tensor(DType::kI64, {2, 0}), Tensor(DType::kI64, {0, 1})}),
                {2, 1}, {0, 0});
  // M = 0 and a zero batch.
  expect_values(run_op1(Op::kMatMul, {Tensor(DType::kF32, {0, 4}), pattern({4, 3}, 1)}), {0, 3},
                {});
  expect_values(
      run_op1(Op::kMatMul, {Tensor(DType::kF16, {0, 2, 4}), pattern({4, 3}, 1, DType::kF16)}),
      {0, 2, 3}, {});
}

TEST(LinearMatMul, NanAndInfPropagate) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor y =
      run_op1(Op::kMatMul, {f32({2, 2}, {std::nanf(""), 1, inf, 1}), f32({2, 2}, {1, 0, 1, 1})});
  // Row 0 has a NaN; row 1 has +inf * 1 and +inf * 0 (= NaN).
  expect_values(y, {2, 2}, {kNaN, kNaN, INFINITY, kNaN});
}

TEST(LinearMatMul, Errors) {
  expect_error(
      [] {
        run_op1(Op::kMatMul, {pattern({2, 3}, 0), pattern({4, 2}, 0)});
      },
      ErrorCode::kShapeMismatch,
      {"MatMul_under_test", "MatMul", "f32[2,3]", "f32[4,2]", "inner dimensions"});
  expect_error(
      [] {
        run_op1(Op::kMatMul, {pattern({2, 2, 3}, 0), pattern({3, 3, 2}, 0)});
      },
      ErrorCode::kShapeMismatch, {"MatMul", "cannot broadcast", "[2]", "[3]"});
  expect_error(
      [] {
        run_op1(Op::kMatMul, {pattern({2, 3}, 0), pattern({3, 2}, 0, DType::kF64)});
      },
      ErrorCode::kShapeMismatch, {"MatMul", "f32", "f64"});
  expect_error(
      [] {
        run_op1(Op::kMatMul, {Tensor::scalar(2.0f), pattern({3}, 0)});
      },
      ErrorCode::kShapeMismatch, {"MatMul", "rank >= 1"});
  expect_error(
      [] {
        run_op1(Op::kMatMul, {to_dtype(pattern({2, 2}, 0), DType::kI8),
                              to_dtype(pattern({2, 2}, 0), DType::kI8)});
      },
      ErrorCode::kShapeMismatch, {"MatMul", "i8[2,2]", "expected one of"});
}

TEST(LinearMatMul, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  const Dim batch(std::string("batch")), seq(std::string("seq"));
  ValueId x = b.input("x", DType::kF32, Shape{batch, seq, 64});
  ValueId w = b.input("w", DType::kF32, Shape{64, 128});
  EXPECT_EQ(b.type(b.matmul(x, w)).to_string(), "f32[batch,seq,128]");
  // Batch dims broadcast symbolically; a 1-D right operand drops its dim.
  ValueId q = b.input("q", DType::kF32, Shape{batch, 1, seq, 8});
  ValueId k = b.input("k", DType::kF32, Shape{12, 8, seq});
  EXPECT_EQ(b.type(b.matmul(q, k)).to_string(), "f32[batch,12,seq,seq]");
  ValueId v = b.input("v", DType::kF32, Shape{64});
  EXPECT_EQ(b.type(b.matmul(x, v)).to_string(), "f32[batch,seq]");
  // A static mismatch is caught at build time, naming the node.
  ValueId bad = b.input("bad", DType::kF32, Shape{32, 4});
  expect_error(
      [&] {
        b.op1(Op::kMatMul, {x, bad}, {}, "proj");
      },
      ErrorCode::kShapeMismatch, {"proj", "MatMul", "f32[batch,seq,64]", "f32[32,4]"});
}

// Gemm

TEST(LinearGemm, AlphaBetaAndRowBroadcastOfC) {
  // 2 * [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] + 0.5 * [10, 20], by hand.
  Attributes attrs{{"alpha", 2.0f}, {"beta", 0.5f}};
  Tensor y = run_op1(
      Op::kGemm,
      {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {1, 0, 0, 1, 1, 1}), f32({2}, {10, 20})},
      attrs);
  expect_values(y, {2, 2}, {13, 20, 25, 32});
}

TEST(LinearGemm, TransposedOperands) {
  // onnx.reference (Gemm, transA=1, transB=1, alpha=0.5, beta=2) on A = pattern([3,2], 1),
  // B = pattern([4,3], 2), C = pattern([4], 3).
  Attributes attrs{{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}};
  Tensor y = run_op1(Op::kGemm, {pattern({3, 2}, 1), pattern({4, 3}, 2), pattern({4}, 3)}, attrs);
  expect_values(y, {2, 4},
                {1.84375, -1.03125, 1.78125, -1.09375, 0.75, -2.5625, 2.65625, -0.65625});
}

TEST(LinearGemm, ColumnAndScalarC) {
  // onnx.reference (Gemm, alpha=1.5, beta=-1) on pattern([2,3], 4), pattern([3,4], 5) and
  // C = pattern([2,1], 6) broadcast along rows.
  Attributes attrs{{"alpha", 1.5f}, {"beta", -1.0f}};
  const std::vector<double> expected = {-2, 5.3125, -2, 5.3125, -0.9375, -4.6875, -1.125, -4.875};
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(
        Op::kGemm, {pattern({2, 3}, 4, t), pattern({3, 4}, 5, t), pattern({2, 1}, 6, t)}, attrs);
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 4}, expected, testing::tolerance(t));
  }
  // Scalar C, and no C at all.
  Tensor ones = f32({2, 2}, {1, 1, 1, 1});
  expect_values(run_op1(Op::kGemm, {ones, ones, Tensor::scalar(3.0f)}), {2, 2}, {5, 5, 5, 5});
  expect_values(run_op1(Op::kGemm, {ones, ones}), {2, 2}, {2, 2, 2, 2});
}

TEST(LinearGemm, CIsScaledEvenWhenBetaIsZero) {
  // ONNX's reference computes alpha * AB + beta * C literally: 0 * inf is NaN.
  Tensor y = run_op1(Op::kGemm, {f32({1, 1}, {2}), f32({1, 2}, {3, 3}), f32({1, 2}, {INFINITY, 1})},
                     Attributes{{"beta", 0.0f}});
  expect_values(y, {1, 2}, {kNaN, 6});
}

TEST(LinearGemm, EmptyInnerDimension) {
  expect_values(run_op1(Op::kGemm, {Tensor(DType::kF32, {2, 0}), Tensor(DType::kF32, {0, 2}),
                                    f32({2}, {1, 2})}),
                {2, 2}, {1, 2, 1, 2});
}

TEST(LinearGemm, Errors) {
  expect_error(
      [] {
        run_op1(Op::kGemm, {pattern({2, 3}, 0), pattern({2, 3}, 0)});
      },
      ErrorCode::kShapeMismatch,
      {"Gemm_under_test", "Gemm", "f32[2,3]", "inner dimensions", "transB=0"});
  expect_error(
      [] {
        run_op1(Op::kGemm, {pattern({2, 3}, 0), pattern({3, 2}, 0), pattern({3}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Gemm", "C [3]", "[2,2]"});
  expect_error(
      [] {
        run_op1(Op::kGemm, {pattern({2, 3, 1}, 0), pattern({3, 2}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Gemm", "f32[2,3,1]", "rank 2"});
  expect_error(
      [] {
        run_op1(Op::kGemm, {pattern({2, 3}, 0), pattern({3, 2}, 0)}, {{"transA", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"Gemm", "transA", "0 or 1"});
  expect_error(
      [] {
        run_op1(Op::kGemm, {pattern({2, 3}, 0), pattern({3, 2}, 0)}, {{"alpha", std::string("x")}});
      },
      ErrorCode::kInvalidGraph, {"Gemm_under_test", "alpha"});
  expect_error(
      [] {
        run_op1(Op::kGemm, {to_dtype(pattern({2, 3}, 0), DType::kI64),
                            to_dtype(pattern({3, 2}, 0), DType::kI64)});
      },
      ErrorCode::kUnsupported, {"Gemm", "i64[2,3]", "float"});
}

TEST(LinearGemm, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("batch")), 64});
  ValueId w = b.input("w", DType::kF32, Shape{10, 64});
  ValueId c = b.input("c", DType::kF32, Shape{10});
  ValueId y = b.op1(Op::kGemm, {x, w, c}, {{"transB", int64_t{1}}});
  EXPECT_EQ(b.type(y).to_string(), "f32[batch,10]");
}

}  // namespace
}  // namespace gf
