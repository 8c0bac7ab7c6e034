// Unary elementwise ops: values against ONNX's reference evaluator (computed in float64 and
// pasted), every float dtype, NaN/Inf handling, integer edge cases, logic ops, Identity and
// Dropout, and the errors inference raises.
#include <limits>

#include "test_util.h"

namespace gf {
namespace {

using testing::expect_error;
using testing::expect_values;
using testing::f32;
using testing::i64;
using testing::run_op;
using testing::run_op1;
using testing::to_dtype;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr DType kFloatDTypes[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};

struct UnaryCase {
  Op op;
  Attributes attrs;
  std::vector<double> x;
  std::vector<double> expected;
};

// Expected values: onnx.reference.ReferenceEvaluator on float64 inputs (opset 22). Inputs are
// exact in every float dtype, so only the result rounding differs between dtypes.
const std::vector<UnaryCase>& float_math_cases() {
  static const std::vector<UnaryCase> cases = {
      {Op::kExp,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {0.049787068367863944, 0.22313016014842982, 0.6065306597126334, 1.0, 1.2840254166877414,
        2.718281828459045, 12.182493960703473}},
      {Op::kLog,
       {},
       {0.25, 0.5, 1.0, 2.0, 10.0},
       {-1.3862943611198906, -0.6931471805599453, 0.0, 0.6931471805599453, 2.302585092994046}},
      {Op::kSqrt, {}, {0.0, 0.25, 2.0, 9.0, 100.0}, {0.0, 0.5, 1.4142135623730951, 3.0, 10.0}},
      {Op::kReciprocal,
       {},
       {-4.0, -0.5, 0.25, 1.0, 3.0},
       {-0.25, -2.0, 4.0, 1.0, 0.3333333333333333}},
      {Op::kTanh,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.9950547536867305, -0.9051482536448665, -0.46211715726000974, 0.0, 0.24491866240370913,
        0.7615941559557649, 0.9866142981514303}},
      {Op::kErf,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.9999778866767883, -0.9661051630973816, -0.5204998850822449, 0.0, 0.27632638812065125,
        0.8427007794380188, 0.9995930194854736}},
      {Op::kSigmoid,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {0.04742587317756679, 0.18242552380635632, 0.37754066879814546, 0.5, 0.5621765008857981,
        0.7310585786300049, 0.9241418199787566}},
      {Op::kLeakyRelu,
       {{"alpha", 0.1f}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.30000000447034836, -0.15000000223517418, -0.05000000074505806, 0.0, 0.25, 1.0, 2.5}},
      {Op::kElu,
       {{"alpha", 0.5f}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.475106465816068, -0.3884349199257851, -0.1967346701436833, 0.0, 0.25, 1.0, 2.5}},
      {Op::kSelu,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-1.6705687339891528, -1.3658143576366604, -0.6917581899652426, 0.0, 0.2626752555370331,
        1.0507010221481323, 2.626752555370331}},
      {Op::kCelu,
       {{"alpha", 2.0f}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-1.5537396797031404, -1.0552668945179706, -0.44239843385719024, 0.0, 0.25, 1.0, 2.5}},
      {Op::kThresholdedRelu,
       {{"alpha", 0.5f}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.5}},
      {Op::kGelu,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.0040496885776519775, -0.10021081566810608, -0.1542687714099884, 0.0, 0.14967658184468746,
        0.8413447439670563, 2.4844758212566376}},
      {Op::kGelu,
       {{"approximate", std::string("tanh")}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.003637392815791174, -0.10042842877952132, -0.1542859919438359, 0.0, 0.14967535021467493,
        0.8411919857864306, 2.4849157317882877}},
      {Op::kHardSigmoid,
       {{"alpha", 0.25f}, {"beta", 0.5f}},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {0.0, 0.125, 0.375, 0.5, 0.5625, 0.75, 1.0}},
      {Op::kHardSwish,
       {},
       {-4.0, -3.0, -1.5, 0.0, 1.0, 2.5, 3.5},
       {-0.0, -0.0, -0.3749999888241291, 0.0, 0.6666666716337204, 2.2916666977107525, 3.5}},
      {Op::kSoftplus,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {0.04858735157374206, 0.2014132779827524, 0.4740769841801067, 0.6931471805599453,
        0.8259394198788436, 1.3132616875182228, 2.5788897342925496}},
      {Op::kSoftsign,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.75, -0.6, -0.3333333333333333, 0.0, 0.2, 0.5, 0.7142857142857143}},
      {Op::kMish,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.1456474612756246, -0.29809974216680674, -0.22074377465173, 0.0, 0.1695724096638176,
        0.8650983882673103, 2.471392304557881}},
      {Op::kSin,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.1411200080598672, -0.9974949866040544, -0.479425538604203, 0.0, 0.24740395925452294,
        0.8414709848078965, 0.5984721441039565}},
      {Op::kCos,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-0.9899924966004454, 0.0707372016677029, 0.8775825618903728, 1.0, 0.9689124217106447,
        0.5403023058681398, -0.8011436155469337}},
      {Op::kTan,
       {},
       {-1.5, -0.5, 0.0, 0.25, 1.0},
       {-14.101419947171719, -0.5463024898437905, 0.0, 0.25534192122103627, 1.5574077246549023}},
      {Op::kAsin,
       {},
       {-1.0, -0.5, 0.0, 0.25, 1.0},
       {-1.5707963267948966, -0.5235987755982989, 0.0, 0.25268025514207865, 1.5707963267948966}},
      {Op::kAcos,
       {},
       {-1.0, -0.5, 0.0, 0.25, 1.0},
       {3.141592653589793, 2.0943951023931957, 1.5707963267948966, 1.318116071652818, 0.0}},
      {Op::kAtan,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-1.2490457723982544, -0.982793723247329, -0.4636476090008061, 0.0, 0.24497866312686414,
        0.7853981633974483, 1.1902899496825317}},
      {Op::kSinh,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-10.017874927409903, -2.1292794550948173, -0.5210953054937474, 0.0, 0.2526123168081683,
        1.1752011936438014, 6.0502044810397875}},
      {Op::kCosh,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {10.067661995777765, 2.352409615243247, 1.1276259652063807, 1.0, 1.0314130998795732,
        1.5430806348152437, 6.132289479663686}},
      {Op::kAsinh,
       {},
       {-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.5},
       {-1.8184464592320668, -1.1947632172871092, -0.48121182505960347, 0.0, 0.24746646154726346,
        0.881373587019543, 1.6472311463710958}},
      {Op::kAcosh,
       {},
       {1.0, 1.5, 2.0, 10.0},
       {0.0, 0.9624236501192069, 1.3169578969248168, 2.993222846126381}},
      {Op::kAtanh,
       {},
       {-0.75, -0.5, 0.0, 0.25, 0.5},
       {-0.9729550745276566, -0.5493061443340549, 0.0, 0.25541281188299536, 0.5493061443340549}},
      {Op::kFloor,
       {},
       {-2.5, -1.5, -0.25, 0.0, 0.75, 1.5, 2.0},
       {-3.0, -2.0, -1.0, 0.0, 0.0, 1.0, 2.0}},
      {Op::kCeil,
       {},
       {-2.5, -1.5, -0.25, 0.0, 0.75, 1.5, 2.0},
       {-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 2.0}},
      {Op::kRound,
       {},
       {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.75, -1.25},
       {-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 1.0, -1.0}},
  };
  return cases;
}

// Tolerances: result rounding of each dtype, plus the float32 evaluation of f16/bf16.
double rtol_of(DType t) {
  switch (t) {
    case DType::kF64:
      return 1e-6;  // some reference values were computed in float32
    case DType::kF32:
      return 2e-6;
    case DType::kF16:
      return 2e-3;
    default:
      return 1e-2;
  }
}

Tensor from_doubles(const std::vector<double>& v, DType t) {
  Tensor d = Tensor::from_vector<double>({static_cast<int64_t>(v.size())}, v);
  return to_dtype(d, t);
}

TEST(ElementwiseUnary, FloatMathMatchesOnnxReferenceInEveryFloatDtype) {
  for (const UnaryCase& c : float_math_cases()) {
    for (DType t : kFloatDTypes) {
      SCOPED_TRACE(std::string(op_name(c.op)) + " " + std::string(dtype_name(t)));
      const Tensor y = run_op1(c.op, {from_doubles(c.x, t)}, c.attrs);
      EXPECT_EQ(y.dtype(), t);
      expect_values(y, {static_cast<int64_t>(c.x.size())}, c.expected, rtol_of(t), rtol_of(t));
    }
  }
}

TEST(ElementwiseUnary, InfinitiesAndNaNFollowIeee) {
  const Tensor x = f32({4}, {-INFINITY, INFINITY, NAN, -1.0f});
  expect_values(run_op1(Op::kExp, {x}), {4}, {0, kInf, kNaN, 0.36787944117144233});
  expect_values(run_op1(Op::kLog, {x}), {4}, {kNaN, kInf, kNaN, kNaN});
  expect_values(run_op1(Op::kSqrt, {x}), {4}, {kNaN, kInf, kNaN, kNaN});
  expect_values(run_op1(Op::kTanh, {x}), {4}, {-1, 1, kNaN, -0.7615941559557649});
  expect_values(run_op1(Op::kSigmoid, {x}), {4}, {0, 1, kNaN, 0.2689414213699951});
  expect_values(run_op1(Op::kRelu, {x}), {4}, {0, kInf, kNaN, 0});
  expect_values(run_op1(Op::kRound, {x}), {4}, {-kInf, kInf, kNaN, -1});
  expect_values(run_op1(Op::kSign, {x}), {4}, {-1, 1, kNaN, -1});
  expect_values(run_op1(Op::kAbs, {x}), {4}, {kInf, kInf, kNaN, 1});
  expect_values(run_op1(Op::kReciprocal, {f32({2}, {0.0f, -0.0f})}), {2}, {kInf, -kInf});
  expect_values(run_op1(Op::kHardSigmoid, {x}), {4}, {0, 1, kNaN, 0.3});
  // np.where(x > alpha, x, 0) sends NaN to 0.
  expect_values(run_op1(Op::kThresholdedRelu, {x}), {4}, {0, kInf, 0, 0});
}

TEST(ElementwiseUnary, ExtremeInputsDoNotOverflow) {
  const Tensor x = f32({4}, {-1000.0f, -100.0f, 100.0f, 1000.0f});
  // exp(-100) is a float32 subnormal, hence the absolute tolerance near zero.
  expect_values(run_op1(Op::kSigmoid, {x}), {4}, {0, 3.720075976020836e-44, 1, 1}, 1e-6, 1e-40);
  expect_values(run_op1(Op::kSoftplus, {x}), {4}, {0, 3.720075976020836e-44, 100, 1000}, 1e-6,
                1e-40);
  expect_values(run_op1(Op::kMish, {x}), {4}, {-0.0, -3.720075976020836e-42, 100, 1000}, 1e-6,
                1e-40);
  expect_values(run_op1(Op::kSoftsign, {x}), {4},
                {-0.999000999000999, -0.9900990099009901, 0.9900990099009901, 0.999000999000999});
}

TEST(ElementwiseUnary, RoundIsHalfToEvenInEveryFloatDtype) {
  for (DType t : kFloatDTypes) {
    const Tensor y = run_op1(Op::kRound, {from_doubles({0.5, 1.5, 2.5, -0.5, -3.5, 4.5, 2.25}, t)});
    expect_values(y, {7}, {0, 2, 2, -0, -4, 4, 2});
  }
}

TEST(ElementwiseUnary, AbsNegSignReluOnSignedIntegers) {
  for (DType t : {DType::kI64, DType::kI32, DType::kI8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = to_dtype(f32({5}, {-7, -1, 0, 1, 100}), t);
    EXPECT_EQ(run_op1(Op::kAbs, {x}).dtype(), t);
    expect_values(run_op1(Op::kAbs, {x}), {5}, {7, 1, 0, 1, 100});
    expect_values(run_op1(Op::kNeg, {x}), {5}, {7, 1, 0, -1, -100});
    expect_values(run_op1(Op::kSign, {x}), {5}, {-1, -1, 0, 1, 1});
    expect_values(run_op1(Op::kRelu, {x}), {5}, {0, 0, 0, 1, 100});
  }
}

TEST(ElementwiseUnary, IntegerNegationWrapsAtTheMostNegativeValue) {
  const Tensor x8 = Tensor::from_vector<int8_t>({2}, {-128, 127});
  expect_values(run_op1(Op::kAbs, {x8}), {2}, {-128, 127});
  expect_values(run_op1(Op::kNeg, {x8}), {2}, {-128, -127});
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const Tensor y = run_op1(Op::kNeg, {Tensor::from_vector<int64_t>({2}, {lo, 5})});
  EXPECT_EQ(y.data<int64_t>()[0], lo);
  EXPECT_EQ(y.data<int64_t>()[1], -5);
}

TEST(ElementwiseUnary, AbsAndSignAcceptUint8) {
  const Tensor x = Tensor::from_vector<uint8_t>({3}, {0, 5, 255});
  expect_values(run_op1(Op::kAbs, {x}), {3}, {0, 5, 255});
  expect_values(run_op1(Op::kSign, {x}), {3}, {0, 1, 1});
}

TEST(ElementwiseUnary, NotAndBitwiseNot) {
  const Tensor b = Tensor::from_vector<bool>({2, 2}, {true, false, false, true});
  expect_values(run_op1(Op::kNot, {b}), {2, 2}, {0, 1, 1, 0});
  expect_values(run_op1(Op::kBitwiseNot, {Tensor::from_vector<uint8_t>({3}, {0, 5, 255})}), {3},
                {255, 250, 0});
  expect_values(run_op1(Op::kBitwiseNot, {Tensor::from_vector<int8_t>({3}, {0, 5, -128})}), {3},
                {-1, -6, 127});
  expect_values(run_op1(Op::kBitwiseNot, {i64({2}, {0, 41})}), {2}, {-1, -42});
  expect_values(run_op1(Op::kBitwiseNot, {Tensor::from_vector<int32_t>({1}, {-1})}), {1}, {0});
}

TEST(ElementwiseUnary, IsNaNAndIsInfWithDetectFlags) {
  for (DType t : kFloatDTypes) {
    const Tensor x = from_doubles({1.0, kNaN, kInf, -kInf, 0.0}, t);
    const Tensor nan = run_op1(Op::kIsNaN, {x});
    EXPECT_EQ(nan.dtype(), DType::kBool);
    expect_values(nan, {5}, {0, 1, 0, 0, 0});
    expect_values(run_op1(Op::kIsInf, {x}), {5}, {0, 0, 1, 1, 0});
    expect_values(run_op1(Op::kIsInf, {x}, {{"detect_negative", int64_t{0}}}), {5},
                  {0, 0, 1, 0, 0});
    expect_values(run_op1(Op::kIsInf, {x}, {{"detect_positive", int64_t{0}}}), {5},
                  {0, 0, 0, 1, 0});
  }
}

TEST(ElementwiseUnary, DefaultAttributesMatchOnnx) {
  const Tensor x = f32({2}, {-2.0f, 1.0f});
  expect_values(run_op1(Op::kLeakyRelu, {x}), {2}, {-0.02, 1}, 1e-6);  // alpha 0.01
  expect_values(run_op1(Op::kElu, {x}), {2}, {-0.8646647167633873, 1}, 1e-6);
  expect_values(run_op1(Op::kCelu, {x}), {2}, {-0.8646647167633873, 1}, 1e-6);
  expect_values(run_op1(Op::kThresholdedRelu, {x}), {2}, {0, 0});        // alpha 1: strict >
  expect_values(run_op1(Op::kHardSigmoid, {x}), {2}, {0.1, 0.7}, 1e-6);  // 0.2, 0.5
}

TEST(ElementwiseUnary, IdentityCopiesEveryDtype) {
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType t = static_cast<DType>(d);
    const Tensor x = to_dtype(f32({2, 2}, {0, 1, 2, 3}), t);
    const Tensor y = run_op1(Op::kIdentity, {x});
    EXPECT_EQ(y.dtype(), t);
    EXPECT_NE(y.raw(), x.raw());
    expect_values(
        y, {2, 2},
        t == DType::kBool ? std::vector<double>{0, 1, 1, 1} : std::vector<double>{0, 1, 2, 3});
  }
}

TEST(ElementwiseUnary, EmptyTensorsKeepTheirShape) {
  const Tensor x(DType::kF32, {2, 0, 3});
  for (Op op : {Op::kExp, Op::kRelu, Op::kGelu, Op::kRound, Op::kIdentity, Op::kNeg}) {
    const Tensor y = run_op1(op, {x});
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 0, 3})) << op_name(op);
  }
  EXPECT_EQ(run_op1(Op::kIsNaN, {x}).dtype(), DType::kBool);
}

TEST(ElementwiseUnary, ScalarsWork) {
  expect_values(run_op1(Op::kExp, {Tensor::scalar(1.0f)}), {}, {2.718281828459045});
  expect_values(run_op1(Op::kNot, {Tensor::scalar(true)}), {}, {0});
}

TEST(Dropout, InferenceIsIdentityWithAllTrueMask) {
  const Tensor x = f32({2, 2}, {1, -2, 3, NAN});
  const std::vector<Tensor> out = run_op(Op::kDropout, {x}, {}, 2);
  expect_values(out[0], {2, 2}, {1, -2, 3, kNaN});
  EXPECT_EQ(out[1].dtype(), DType::kBool);
  expect_values(out[1], {2, 2}, {1, 1, 1, 1});
  // Explicit ratio and training_mode = false: still the identity.
  const std::vector<Tensor> out2 = run_op(
      Op::kDropout, {x, Tensor::scalar(0.3f), Tensor::scalar(false)}, {{"seed", int64_t{7}}}, 2);
  expect_values(out2[0], {2, 2}, {1, -2, 3, kNaN});
  expect_values(run_op1(Op::kDropout, {to_dtype(x, DType::kF16)}), {2, 2}, {1, -2, 3, kNaN});
}

TEST(Dropout, TrainingWithRatioZeroIsIdentity) {
  const Tensor x = f32({3}, {1, 2, 3});
  const std::vector<Tensor> out =
      run_op(Op::kDropout, {x, Tensor::scalar(0.0f), Tensor::scalar(true)}, {}, 2);
  expect_values(out[0], {3}, {1, 2, 3});
  expect_values(out[1], {3}, {1, 1, 1});
}

TEST(Dropout, TrainingWithPositiveRatioIsUnsupported) {
  const Tensor x = f32({3}, {1, 2, 3});
  expect_error(
      [&] {
        run_op(Op::kDropout, {x, Tensor::scalar(0.5f), Tensor::scalar(true)}, {}, 2);
      },
      ErrorCode::kUnsupported, {"Dropout_under_test", "Dropout", "f32[3]", "training"});
  // The default ratio is 0.5.
  expect_error(
      [&] {
        run_op1(Op::kDropout, {x, Tensor(), Tensor::scalar(true)});
      },
      ErrorCode::kUnsupported, {"Dropout", "ratio 0.5"});
}

TEST(Dropout, RejectsBadOptionalInputs) {
  const Tensor x = f32({3}, {1, 2, 3});
  expect_error(
      [&] {
        run_op1(Op::kDropout, {x, f32({2}, {0.1f, 0.2f})});
      },
      ErrorCode::kShapeMismatch, {"Dropout", "f32[2]", "ratio", "scalar"});
  expect_error(
      [&] {
        run_op1(Op::kDropout, {x, Tensor(), Tensor::scalar(1.0f)});
      },
      ErrorCode::kShapeMismatch, {"Dropout", "input 2", "bool"});
  expect_error([&] { run_op1(Op::kDropout, {i64({1}, {1})}); }, ErrorCode::kShapeMismatch,
               {"Dropout", "i64[1]"});
}

TEST(ElementwiseUnaryErrors, MathOpsRejectNonFloatDtypes) {
  for (Op op : {Op::kExp, Op::kSqrt, Op::kTanh, Op::kGelu, Op::kRound, Op::kLeakyRelu, Op::kIsNaN,
                Op::kSin}) {
    expect_error(
        [&] {
          run_op1(op, {i64({2}, {1, 2})});
        },
        ErrorCode::kShapeMismatch,
        {std::string(op_name(op)) + "_under_test", std::string(op_name(op)), "i64[2]",
         "f32, f16, bf16, f64"});
  }
}

TEST(ElementwiseUnaryErrors, DtypeRulesOfSignLikeAndLogicOps) {
  const Tensor u8 = Tensor::from_vector<uint8_t>({2}, {1, 2});
  const Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  expect_error([&] { run_op1(Op::kNeg, {u8}); }, ErrorCode::kShapeMismatch, {"Neg", "u8[2]"});
  expect_error([&] { run_op1(Op::kRelu, {u8}); }, ErrorCode::kShapeMismatch, {"Relu", "u8[2]"});
  expect_error([&] { run_op1(Op::kAbs, {b}); }, ErrorCode::kShapeMismatch, {"Abs", "bool[2]"});
  expect_error([&] { run_op1(Op::kNot, {u8}); }, ErrorCode::kShapeMismatch,
               {"Not", "u8[2]", "accepts bool"});
  expect_error([&] { run_op1(Op::kBitwiseNot, {f32({1}, {1})}); }, ErrorCode::kShapeMismatch,
               {"BitwiseNot", "f32[1]", "i64, i32, i8, u8"});
  expect_error([&] { run_op1(Op::kBitwiseNot, {b}); }, ErrorCode::kShapeMismatch,
               {"BitwiseNot", "bool[2]"});
}

TEST(ElementwiseUnaryErrors, BadAttributesNameTheNode) {
  const Tensor x = f32({2}, {1, 2});
  expect_error(
      [&] {
        run_op1(Op::kGelu, {x}, {{"approximate", std::string("fast")}});
      },
      ErrorCode::kInvalidGraph, {"Gelu_under_test", "Gelu", "f32[2]", "fast"});
  expect_error(
      [&] {
        run_op1(Op::kGelu, {x}, {{"approximate", int64_t{1}}});
      },
      ErrorCode::kInvalidGraph, {"Gelu_under_test", "approximate"});
  expect_error(
      [&] {
        run_op1(Op::kLeakyRelu, {x}, {{"alpha", std::string("big")}});
      },
      ErrorCode::kInvalidGraph, {"LeakyRelu_under_test", "alpha"});
  expect_error(
      [&] {
        run_op1(Op::kCelu, {x}, {{"alpha", 0.0f}});
      },
      ErrorCode::kInvalidGraph, {"Celu", "f32[2]", "alpha"});
}

}  // namespace
}  // namespace gf
