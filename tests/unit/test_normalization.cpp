// Softmax, LogSoftmax, LayerNormalization and RMSNormalization: shape inference and reference
// kernels. Expected values from numpy (the ONNX reference formulas, in float64).
#include <cstdint>
#include <limits>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::run_op;
using testing::run_op1;
using testing::to_dtype;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(std::vector<int64_t> dims, std::vector<double> values) {
  return Tensor::from_vector<double>(std::move(dims), values);
}

Tensor logits() {
  return f32({2, 3}, {1, 2, 3, -1, 0.5f, 4});
}

TEST(Softmax, AlongLastAndFirstAxis) {
  expect_values(run_op1(Op::kSoftmax, {logits()}), {2, 3},
                {0.09003057317038046, 0.24472847105479764, 0.6652409557748218, 0.00649794331566194,
                 0.0291217615374784, 0.9643802951468596});
  expect_values(run_op1(Op::kSoftmax, {logits()}, {{"axis", int64_t{0}}}), {2, 3},
                {0.8807970779778823, 0.8175744761936437, 0.2689414213699951, 0.11920292202211755,
                 0.18242552380635632, 0.7310585786300049});
  expect_values(run_op1(Op::kLogSoftmax, {logits()}, {{"axis", int64_t{-1}}}), {2, 3},
                {-2.40760596444438, -1.4076059644443804, -0.40760596444438046, -5.036269565124779,
                 -3.5362695651247793, -0.036269565124779156});
  expect_values(run_op1(Op::kLogSoftmax, {logits()}, {{"axis", int64_t{-2}}}), {2, 3},
                {-0.12692801104297263, -0.2014132779827524, -1.3132616875182228,
                 -2.1269280110429727, -1.7014132779827524, -0.3132616875182228});
}

TEST(Softmax, MiddleAxisOfRank3) {
  // Along axis 1 of [2,2,2]: each pair (x, x + log 3) becomes (0.25, 0.75).
  const float l3 = 1.0986122886681098f;
  const Tensor x = f32({2, 2, 2}, {0, 5, l3, 5 + l3, -7, 2, -7 + l3, 2 + l3});
  expect_values(run_op1(Op::kSoftmax, {x}, {{"axis", int64_t{1}}}), {2, 2, 2},
                {0.25, 0.25, 0.75, 0.75, 0.25, 0.25, 0.75, 0.75}, 1e-6);
}

TEST(Softmax, StableForLargeLogitsAndInfinities) {
  expect_values(run_op1(Op::kSoftmax, {f32({2}, {1000, 1000})}), {2}, {0.5, 0.5});
  expect_values(run_op1(Op::kLogSoftmax, {f32({2}, {-1000, -1000})}), {2},
                {-0.6931471805599453, -0.6931471805599453});
  // A -inf logit gets probability 0 (log-probability -inf).
  const Tensor masked = f32({1, 3}, {0, -INFINITY, 1.0986122886681098f});
  expect_values(run_op1(Op::kSoftmax, {masked}), {1, 3}, {0.25, 0, 0.75});
  expect_values(
      run_op1(Op::kLogSoftmax, {masked}), {1, 3},
      {-1.3862943611198906, -std::numeric_limits<double>::infinity(), -0.2876820724517809});
  // A fully masked row, a +inf or a NaN gives NaN, as the ONNX reference does.
  const Tensor bad = f32({3, 2}, {-INFINITY, -INFINITY, INFINITY, 0, NAN, 1});
  expect_values(run_op1(Op::kSoftmax, {bad}), {3, 2}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  expect_values(run_op1(Op::kLogSoftmax, {bad}), {3, 2}, {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
}

TEST(Softmax, DtypeSweepAndEmpty) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const double tol = t == DType::kBF16 ? 1e-2 : t == DType::kF16 ? 1e-3 : 1e-6;
    Tensor y = run_op1(Op::kSoftmax, {to_dtype(logits(), t)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 3},
                  {0.09003057317038046, 0.24472847105479764, 0.6652409557748218,
                   0.00649794331566194, 0.0291217615374784, 0.9643802951468596},
                  tol, tol);
    expect_values(run_op1(Op::kLogSoftmax, {to_dtype(logits(), t)}), {2, 3},
                  {-2.40760596444438, -1.4076059644443804, -0.40760596444438046, -5.036269565124779,
                   -3.5362695651247793, -0.036269565124779156},
                  tol, tol);
  }
  expect_values(run_op1(Op::kSoftmax, {Tensor(DType::kF32, {3, 0})}), {3, 0}, {});
  expect_values(run_op1(Op::kLogSoftmax, {Tensor(DType::kF32, {0, 3})}, {{"axis", int64_t{0}}}),
                {0, 3}, {});
}

TEST(Softmax, ErrorsAndSymbolicShapes) {
  expect_error(
      [] {
        run_op1(Op::kSoftmax, {logits()}, {{"axis", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"Softmax_under_test", "(Softmax)", "f32[2,3]", "axis 2"});
  expect_error(
      [] {
        run_op1(Op::kLogSoftmax, {testing::i64({2}, {1, 2})});
      },
      ErrorCode::kShapeMismatch, {"LogSoftmax", "i64[2]"});
  expect_error([] { run_op1(Op::kSoftmax, {Tensor::scalar<float>(1)}); }, ErrorCode::kShapeMismatch,
               {"Softmax", "f32[]", "rank >= 1"});
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kBF16, Shape{Dim(std::string("batch")), 12, Dim()});
  EXPECT_EQ(b.type(b.softmax(x)).to_string(), "bf16[batch,12,?]");
  EXPECT_EQ(b.type(b.op1(Op::kLogSoftmax, {x}, {{"axis", int64_t{0}}})).to_string(),
            "bf16[batch,12,?]");
}

// LayerNormalization over the last axis of [2,3].
Tensor ln_x() {
  return f32({2, 3}, {1, 2, 4, -3, 0, 3});
}
Tensor ln_scale() {
  return f32({3}, {1, 0.5f, 2});
}
Tensor ln_bias() {
  return f32({3}, {0.1f, -0.2f, 0.3f});
}

TEST(LayerNorm, LastAxisWithAllThreeOutputs) {
  auto out = run_op(Op::kLayerNormalization, {ln_x(), ln_scale(), ln_bias()}, {}, 3);
  expect_values(out[0], {2, 3},
                {-0.9690415314502977, -0.33363019143128725, 2.9726038286257435, -1.1247438507721386,
                 -0.2, 2.749487701544277});
  EXPECT_EQ(out[1].dtype(), DType::kF32);
  EXPECT_EQ(out[2].dtype(), DType::kF32);
  expect_values(out[1], {2, 1}, {2.3333333333333335, 0});
  expect_values(out[2], {2, 1}, {0.8017811485877232, 0.4082479502573796});
}

TEST(LayerNorm, SeveralNormalizedDimsWithoutBias) {
  // X [2,2,3] normalized over dims 1..2 with a [2,3] scale, epsilon 1e-3.
  const Tensor x = f64({2, 2, 3}, {0.0, 1.0, 2.8284271247461903, 5.196152422706632, 8.0,
                                   11.180339887498949, 14.696938456699069, 18.520259177452132,
                                   22.627416997969522, 27.0, 31.622776601683793, 36.4828726939094});
  const Tensor scale = f64({2, 3}, {1, 2, 3, 0.5, -1, 1.5});
  auto out = run_op(Op::kLayerNormalization, {x, scale, Tensor()},
                    {{"axis", int64_t{1}}, {"epsilon", 1e-3f}}, 3);
  expect_values(out[0], {2, 2, 3},
                {-1.19775181034092, -1.8859108967161096, -1.4312366064658057, 0.0631044616365903,
                 -0.8406190855220009, 2.4764371780885917, -1.403530422191779, -1.7811700439243072,
                 -1.0186781733704409, 0.12353814275604637, -0.8672785042932021, 2.2789800682081736},
                1e-9, 1e-9);
  expect_values(out[1], {2, 1, 1}, {4.700819905825296, 25.158377321285656});
  expect_values(out[2], {2, 1, 1}, {0.2547963619828651, 0.1341622735035926});
}

TEST(LayerNorm, ScaleBroadcastsOverTheRow) {
  // A [1] scale and a [1,3] bias broadcast like a [3] one would.
  const Tensor y =
      run_op1(Op::kLayerNormalization, {ln_x(), f32({1}, {2}), f32({1, 3}, {0.1f, -0.2f, 0.3f})});
  expect_values(
      y, {2, 3},
      {2 * -1.0690449676496976 + 0.1, 2 * -0.2672612419124244 - 0.2, 2 * 1.3363062095621219 + 0.3,
       2 * -1.2247398559670486 + 0.1, -0.2, 2 * 1.2247398559670486 + 0.3},
      1e-5, 1e-5);
}

TEST(LayerNorm, DtypeSweepKeepsStatisticsInFloat32) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const double tol = t == DType::kBF16 ? 2e-2 : t == DType::kF16 ? 2e-3 : 1e-6;
    auto out =
        run_op(Op::kLayerNormalization,
               {to_dtype(ln_x(), t), to_dtype(ln_scale(), t), to_dtype(ln_bias(), t)}, {}, 2);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].dtype(), t);
    EXPECT_EQ(out[1].dtype(), DType::kF32);
    expect_values(out[0], {2, 3},
                  {-0.9690415314502977, -0.33363019143128725, 2.9726038286257435,
                   -1.1247438507721386, -0.2, 2.749487701544277},
                  tol, tol);
    expect_values(out[1], {2, 1}, {2.3333333333333335, 0}, tol, tol);
  }
}

TEST(LayerNorm, EmptyRowsAndEmptyBatch) {
  auto out = run_op(Op::kLayerNormalization,
                    {Tensor(DType::kF32, {2, 0}), Tensor(DType::kF32, {0})}, {}, 3);
  expect_values(out[0], {2, 0}, {});
  expect_values(out[1], {2, 1}, {kNaN, kNaN});  // the mean of nothing, as numpy
  auto none = run_op(Op::kLayerNormalization, {Tensor(DType::kF32, {0, 3}), ln_scale()}, {}, 3);
  expect_values(none[0], {0, 3}, {});
  expect_values(none[2], {0, 1}, {});
}

TEST(LayerNorm, Errors) {
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), f32({2}, {1, 1})});
      },
      ErrorCode::kShapeMismatch,
      {"LayerNormalization_under_test", "(LayerNormalization)", "f32[2,3]", "f32[2]",
       "Scale [2] does not broadcast"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), ln_scale(), f32({4}, {0, 0, 0, 0})});
      },
      ErrorCode::kShapeMismatch, {"LayerNormalization", "B [4]", "f32[4]"});
  // Valid ONNX, but a scale that varies per row is not supported.
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), f32({2, 1}, {1, 2})});
      },
      ErrorCode::kUnsupported, {"LayerNormalization", "Scale [2,1]", "dim 0"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), f32({1, 2, 3}, {1, 1, 1, 1, 1, 1})});
      },
      ErrorCode::kShapeMismatch, {"LayerNormalization", "higher rank"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), to_dtype(ln_scale(), DType::kF16)});
      },
      ErrorCode::kShapeMismatch, {"LayerNormalization", "f16[3]", "same dtype"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), ln_scale()}, {{"axis", int64_t{-3}}});
      },
      ErrorCode::kInvalidGraph, {"LayerNormalization", "f32[2,3]", "axis -3"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), ln_scale()}, {{"stash_type", int64_t{16}}});
      },
      ErrorCode::kUnsupported, {"LayerNormalization", "f32[2,3]", "stash_type 16"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization,
                {to_dtype(ln_x(), DType::kI32), to_dtype(ln_scale(), DType::kI32)});
      },
      ErrorCode::kShapeMismatch, {"LayerNormalization", "i32[2,3]"});
  expect_error(
      [] {
        run_op1(Op::kLayerNormalization, {ln_x(), ln_scale()}, {{"epsilon", std::string("tiny")}});
      },
      ErrorCode::kInvalidGraph, {"LayerNormalization_under_test", "'epsilon'"});
}

TEST(LayerNorm, SymbolicShapes) {
  GraphBuilder b;
  const Dim batch(std::string("batch")), seq(std::string("seq"));
  const ValueId x = b.input("x", DType::kF16, Shape{batch, seq, 8});
  const ValueId scale = b.input("scale", DType::kF16, Shape{8});
  const ValueId bias = b.input("bias", DType::kF16, Shape{8});
  EXPECT_EQ(b.type(b.layer_norm(x, scale, bias)).to_string(), "f16[batch,seq,8]");
  auto outs = b.op(Op::kLayerNormalization, {x, scale, kNoValue}, {}, 3);
  EXPECT_EQ(b.type(outs[1]).to_string(), "f32[batch,seq,1]");
  EXPECT_EQ(b.type(outs[2]).to_string(), "f32[batch,seq,1]");
  const ValueId s2 = b.input("s2", DType::kF16, Shape{seq, 8});
  auto two = b.op(Op::kLayerNormalization, {x, s2}, {{"axis", int64_t{1}}}, 2);
  EXPECT_EQ(b.type(two[1]).to_string(), "f32[batch,1,1]");
  // A symbolic scale dim before the axis might be 1: accepted until run time.
  const ValueId odd = b.input("odd", DType::kF16, Shape{Dim(std::string("k")), 8});
  EXPECT_EQ(b.type(b.layer_norm(x, odd, kNoValue)).to_string(), "f16[batch,seq,8]");
  expect_error([&] { b.layer_norm(x, b.input("s4", DType::kF16, Shape{4}), kNoValue); },
               ErrorCode::kShapeMismatch, {"LayerNormalization", "f16[batch,seq,8]", "f16[4]"});
}

// RMSNormalization (opset 23).
TEST(RmsNorm, LastAxisAndSeveralAxes) {
  expect_values(run_op1(Op::kRMSNormalization, {ln_x(), ln_scale()}), {2, 3},
                {0.3779642030348929, 0.3779642030348929, 3.0237136242791434, -1.2247438507721387,
                 0.0, 2.4494877015442773});
  const Tensor x = f64({2, 2, 3}, {0.0, 1.0, 2.8284271247461903, 5.196152422706632, 8.0,
                                   11.180339887498949, 14.696938456699069, 18.520259177452132,
                                   22.627416997969522, 27.0, 31.622776601683793, 36.4828726939094});
  const Tensor scale = f64({2, 3}, {1, 2, 3, 0.5, -1, 1.5});
  expect_values(
      run_op1(Op::kRMSNormalization, {x, scale}, {{"axis", int64_t{-2}}, {"epsilon", 1e-3f}}),
      {2, 2, 3},
      {0.0, 0.32659427780974987, 1.385622171215984, 0.42425841197081365, -1.3063771112389995,
       2.7385762734189445, 0.5601116268490954, 1.4116426394670323, 2.5870447883005157,
       0.5144953817926717, -1.2051683348909386, 2.085585501727373},
      1e-9, 1e-9);
}

TEST(RmsNorm, ScaleMayHaveAnotherFloatType) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const double tol = t == DType::kBF16 ? 2e-2 : t == DType::kF16 ? 2e-3 : 1e-6;
    Tensor y =
        run_op1(Op::kRMSNormalization, {to_dtype(ln_x(), t), to_dtype(ln_scale(), DType::kF16)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 3},
                  {0.3779642030348929, 0.3779642030348929, 3.0237136242791434, -1.2247438507721387,
                   0.0, 2.4494877015442773},
                  tol, tol);
  }
  // Zero rows stay finite thanks to epsilon; empty tensors give empty outputs.
  expect_values(run_op1(Op::kRMSNormalization, {f32({1, 2}, {0, 0}), f32({1}, {3})}), {1, 2},
                {0, 0});
  expect_values(run_op1(Op::kRMSNormalization, {Tensor(DType::kF32, {0, 4}), f32({1}, {3})}),
                {0, 4}, {});
}

TEST(RmsNorm, ErrorsAndSymbolicShapes) {
  expect_error(
      [] {
        run_op1(Op::kRMSNormalization, {ln_x(), f32({2}, {1, 1})});
      },
      ErrorCode::kShapeMismatch,
      {"RMSNormalization_under_test", "(RMSNormalization)", "f32[2,3]", "scale [2]"});
  expect_error(
      [] {
        run_op1(Op::kRMSNormalization, {ln_x(), testing::i64({3}, {1, 1, 1})});
      },
      ErrorCode::kShapeMismatch, {"RMSNormalization", "i64[3]"});
  expect_error(
      [] {
        run_op1(Op::kRMSNormalization, {ln_x(), f32({2, 1}, {1, 1})});
      },
      ErrorCode::kUnsupported, {"RMSNormalization", "scale [2,1]"});
  expect_error(
      [] {
        run_op1(Op::kRMSNormalization, {ln_x(), ln_scale()}, {{"stash_type", int64_t{0}}});
      },
      ErrorCode::kUnsupported, {"RMSNormalization", "stash_type 0"});
  expect_error(
      [] {
        run_op1(Op::kRMSNormalization, {ln_x(), ln_scale()}, {{"axis", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"RMSNormalization", "axis 2"});
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kBF16, Shape{Dim(std::string("tokens")), 64});
  const ValueId w = b.input("w", DType::kF32, Shape{64});
  EXPECT_EQ(b.type(b.op1(Op::kRMSNormalization, {x, w})).to_string(), "bf16[tokens,64]");
}

}  // namespace
}  // namespace gf
