// The scalar emitter through the CPU JIT: every elementwise op of the op table in a few
// kernels (one compile each), compared with values computed here from ONNX's definitions.
#include <cmath>
#include <cstring>
#include <functional>
#include <numbers>

#include "codegen/common/scalar_emitter.h"
#include "test_cpu_codegen_util.h"

namespace gf {
namespace {

using fusion::ExprId;
using testing::expect_values;
using testing::KernelBuilder;
using testing::kInf;
using testing::kNaN;
using testing::run_kernel;

// out_k = op_k(inputs...) for 1-D inputs of one length, one output per op; returns the outputs.
struct MapCase {
  Op op;
  DType out;
  std::vector<int> inputs;  // indices into the kernel's inputs
  Attributes attrs;
};

std::vector<Tensor> run_map(const std::string& name, std::vector<Tensor> inputs,
                            const std::vector<MapCase>& cases,
                            const codegen::CpuEmitOptions& options = {}) {
  Graph g;  // holds one node per case, for the attributes
  KernelBuilder b(name);
  const int64_t n = inputs[0].numel();
  b.k.outer_dims = {n};
  const ExprId i = b.outer(0);
  std::vector<ExprId> loads;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int buf = b.buffer("in" + std::to_string(k), inputs[k].dtype(), {n}, false);
    loads.push_back(b.load(buf, i));
  }
  std::vector<Tensor> outputs;
  for (size_t c = 0; c < cases.size(); ++c) {
    const MapCase& mc = cases[c];
    const NodeId node = g.add_node(mc.op, "node" + std::to_string(c), {}, {}, mc.attrs);
    std::vector<ExprId> args;
    for (int in : mc.inputs) args.push_back(loads[static_cast<size_t>(in)]);
    const int buf = b.buffer("out" + std::to_string(c), mc.out, {n}, true);
    b.store(buf, i, b.op(mc.op, mc.out, args, node));
    outputs.emplace_back(mc.out, std::vector<int64_t>{n});
  }
  std::vector<Tensor*> buffers;
  for (Tensor& t : inputs) buffers.push_back(&t);
  for (Tensor& t : outputs) buffers.push_back(&t);
  run_kernel(b.k, g, buffers, options);
  return outputs;
}

std::vector<double> apply(const std::vector<float>& xs, const std::function<double(float)>& f) {
  std::vector<double> out;
  for (float x : xs) out.push_back(f(x));
  return out;
}

TEST(CpuCodegenOps, UnaryFloatOpsMatchTheirDefinitions) {
  const std::vector<float> xs = {-2.5f, -0.5f, 0.f, 0.25f, 0.5f, 1.5f, 2.5f, 3.f};
  using F = std::function<double(float)>;
  const auto softplus = [](float x) {
    return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.f);
  };
  const std::vector<std::tuple<Op, Attributes, F>> ops = {
      {Op::kAbs, {}, [](float x) { return std::fabs(x); }},
      {Op::kNeg, {}, [](float x) { return -x; }},
      {Op::kExp, {}, [](float x) { return std::exp(x); }},
      {Op::kSqrt, {}, [](float x) { return std::sqrt(x); }},
      {Op::kReciprocal, {}, [](float x) { return 1.f / x; }},
      {Op::kTanh, {}, [](float x) { return std::tanh(x); }},
      {Op::kErf, {}, [](float x) { return std::erf(x); }},
      {Op::kSigmoid, {}, [](float x) { return 1 / (1 + std::exp(-double{x})); }},
      {Op::kRelu, {}, [](float x) { return std::max(x, 0.f); }},
      {Op::kLeakyRelu, {{"alpha", 0.1f}}, [](float x) { return x < 0 ? 0.1f * x : x; }},
      {Op::kElu, {}, [](float x) { return x < 0 ? std::expm1(x) : x; }},
      {Op::kSelu,
       {},
       [](float x) {
         return 1.0507010221481323 * (x > 0 ? x : 1.6732631921768188 * std::expm1(x));
       }},
      {Op::kCelu, {{"alpha", 2.f}}, [](float x) { return x > 0 ? x : 2 * std::expm1(x / 2); }},
      {Op::kThresholdedRelu, {}, [](float x) { return x > 1 ? x : 0; }},
      {Op::kGelu, {}, [](float x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {Op::kGelu,
       {{"approximate", std::string("tanh")}},
       [](float x) {
         return 0.5 * x *
                (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
       }},
      {Op::kHardSigmoid, {}, [](float x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {Op::kHardSwish, {}, [](float x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }},
      {Op::kSoftplus, {}, softplus},
      {Op::kSoftsign, {}, [](float x) { return x / (1 + std::fabs(x)); }},
      {Op::kMish, {}, [&](float x) { return x * std::tanh(softplus(x)); }},
      {Op::kSin, {}, [](float x) { return std::sin(x); }},
      {Op::kCos, {}, [](float x) { return std::cos(x); }},
      {Op::kTan, {}, [](float x) { return std::tan(x); }},
      {Op::kAtan, {}, [](float x) { return std::atan(x); }},
      {Op::kSinh, {}, [](float x) { return std::sinh(x); }},
      {Op::kCosh, {}, [](float x) { return std::cosh(x); }},
      {Op::kAsinh, {}, [](float x) { return std::asinh(x); }},
      {Op::kFloor, {}, [](float x) { return std::floor(x); }},
      {Op::kCeil, {}, [](float x) { return std::ceil(x); }},
      {Op::kRound, {}, [](float x) { return std::nearbyint(x); }},  // -2.5 -> -2, 2.5 -> 2
      {Op::kSign, {}, [](float x) { return x > 0   ? 1
                                           : x < 0 ? -1
                                                   : 0; }},
      {Op::kIdentity, {}, [](float x) { return x; }},
  };
  std::vector<MapCase> cases;
  for (const auto& [op, attrs, f] : ops) cases.push_back({op, DType::kF32, {0}, attrs});
  const auto out = run_map("unary_f32", {testing::f32({8}, xs)}, cases);
  for (size_t k = 0; k < ops.size(); ++k) {
    SCOPED_TRACE(std::string(op_name(std::get<0>(ops[k]))));
    expect_values(out[k], {8}, apply(xs, std::get<2>(ops[k])), 2e-6, 1e-7);
  }
  expect_values(out[30], {8}, {-2, -0, 0, 0, 0, 2, 2, 3}, 0, 0);  // half to even, exactly
}

TEST(CpuCodegenOps, UnaryOpsMatchTheReferenceBitForBitOrTanhErfWithinAnUlp) {
  const std::vector<Op> ops = {
      Op::kAbs,        Op::kNeg,         Op::kExp,       Op::kLog,      Op::kSqrt,
      Op::kReciprocal, Op::kTanh,        Op::kErf,       Op::kSigmoid,  Op::kRelu,
      Op::kLeakyRelu,  Op::kElu,         Op::kSelu,      Op::kCelu,     Op::kThresholdedRelu,
      Op::kGelu,       Op::kHardSigmoid, Op::kHardSwish, Op::kSoftplus, Op::kSoftsign,
      Op::kMish,       Op::kSin,         Op::kCos,       Op::kTan,      Op::kAsin,
      Op::kAcos,       Op::kAtan,        Op::kSinh,      Op::kCosh,     Op::kAsinh,
      Op::kAcosh,      Op::kAtanh,       Op::kFloor,     Op::kCeil,     Op::kRound,
      Op::kSign};
  const Tensor x32 =
      testing::f32({10}, {-3.5f, -1.f, -0.5f, -0.f, 0.3f, 0.5f, 1.f, 2.5f, 20.f, kNaN});
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const Tensor x = testing::to_dtype(x32, t);
    std::vector<MapCase> cases;
    for (Op op : ops) cases.push_back({op, t, {0}, {}});
    cases.push_back({Op::kGelu, t, {0}, {{"approximate", std::string("tanh")}}});
    const auto out = run_map("unary_ref_" + std::string(dtype_name(t)), {x}, cases);
    for (size_t k = 0; k < cases.size(); ++k) {
      SCOPED_TRACE(std::string(op_name(cases[k].op)));
      const Tensor want = testing::run_op1(cases[k].op, {x}, cases[k].attrs);
      // Float tanh and erf are the CPU target's own (codegen/cpu/cpu_math.h, tested against libm
      // in test_cpu_math.cpp), not libm's: those ops may differ by an ulp of the stored type.
      const Op op = cases[k].op;
      const bool own_math = t != DType::kF64 && (op == Op::kTanh || op == Op::kErf ||
                                                 op == Op::kGelu || op == Op::kMish);
      const double ulp = t == DType::kF16 ? 0x1p-10 : t == DType::kBF16 ? 0x1p-7 : 0x1p-23;
      expect_values(out[k], {10}, testing::as_doubles(want), own_math ? ulp : 0,
                    own_math ? 1e-7 : 0);
    }
  }
}

TEST(CpuCodegenOps, BinaryOpsMatchTheReferenceInEveryNumericDtype) {
  // Nonzero divisors: the reference fails on an integer division by zero.
  const Tensor a_signed = testing::f32({6}, {-7, 5, 100, 3, -120, 0});
  const Tensor b_signed = testing::f32({6}, {3, -2, 7, 3, -1, 5});
  const Tensor a_unsigned = testing::f32({6}, {7, 5, 200, 3, 255, 0});
  const Tensor b_unsigned = testing::f32({6}, {3, 2, 7, 3, 1, 5});
  for (DType t :
       {DType::kF32, DType::kF16, DType::kF64, DType::kI64, DType::kI32, DType::kI8, DType::kU8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const bool is_unsigned = t == DType::kU8;
    const Tensor a = testing::to_dtype(is_unsigned ? a_unsigned : a_signed, t);
    const Tensor b = testing::to_dtype(is_unsigned ? b_unsigned : b_signed, t);
    const Attributes fmod{{"fmod", int64_t{is_floating(t) ? 1 : 0}}};
    std::vector<MapCase> cases;
    for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kDiv, Op::kMax, Op::kMin}) {
      cases.push_back({op, t, {0, 1}, {}});
    }
    if (!is_unsigned) cases.push_back({Op::kPRelu, t, {0, 1}, {}});
    if (is_floating(t)) {  // Sum and Mean are float-only in the op's type constraints
      cases.push_back({Op::kSum, t, {0, 1, 0}, {}});
      cases.push_back({Op::kMean, t, {0, 1}, {}});
    }
    cases.push_back({Op::kMod, t, {0, 1}, fmod});
    cases.push_back({Op::kPow, t, {1, 1}, {}});
    cases.push_back({Op::kLess, DType::kBool, {0, 1}, {}});
    cases.push_back({Op::kGreaterOrEqual, DType::kBool, {0, 1}, {}});
    const auto out = run_map("binary_ref_" + std::string(dtype_name(t)), {a, b}, cases);
    for (size_t k = 0; k < cases.size(); ++k) {
      SCOPED_TRACE(std::string(op_name(cases[k].op)));
      std::vector<Tensor> ins;
      for (int i : cases[k].inputs) ins.push_back(i == 0 ? a : b);
      const Tensor want = testing::run_op1(cases[k].op, ins, cases[k].attrs);
      expect_values(out[k], {6}, testing::as_doubles(want), 0, 0);
    }
  }
}

TEST(CpuCodegenOps, CastsMatchTheReferenceForEveryDtypePair) {
  // Midpoints, out-of-range values, NaN and -0 in every source type that can hold them.
  const Tensor wide = Tensor::from_vector<double>(
      {6}, {1.0 + std::ldexp(1.0, -11) + 1e-13, -2.75, 70000.5, std::nan(""), -1e30, -0.0});
  const std::vector<Tensor> sources = {
      testing::to_dtype(wide, DType::kF32),
      wide,
      testing::to_dtype(wide, DType::kBF16),
      Tensor::from_vector<int64_t>({6}, {2049, -300, 16777217, 0, -9223372036854775807LL, 255}),
      Tensor::from_vector<int32_t>({6}, {2051, -129, 65519, 65520, -2147483647, 1}),
      Tensor::from_vector<uint8_t>({6}, {0, 1, 127, 128, 200, 255}),
      Tensor::from_vector<bool>({6}, {true, false, true, true, false, false}),
  };
  std::vector<MapCase> cases;
  for (int s = 0; s < static_cast<int>(sources.size()); ++s) {
    for (int to = 0; to < kNumDTypes; ++to) {
      cases.push_back({Op::kCast, static_cast<DType>(to), {s}, {{"to", int64_t{to}}}});
    }
  }
  const auto out = run_map("cast_pairs", sources, cases);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Tensor& x = sources[static_cast<size_t>(cases[k].inputs[0])];
    SCOPED_TRACE(std::string(dtype_name(x.dtype())) + " -> " +
                 std::string(dtype_name(cases[k].out)));
    const Tensor want = testing::run_op1(Op::kCast, {x}, cases[k].attrs);
    ASSERT_EQ(want.dtype(), out[k].dtype());
    EXPECT_EQ(std::memcmp(want.raw(), out[k].raw(), want.nbytes()), 0)
        << "got " << ::testing::PrintToString(testing::as_doubles(out[k])) << ", want "
        << ::testing::PrintToString(testing::as_doubles(want));
  }
}

TEST(CpuCodegenOps, InverseTrigOnTheirDomainAndPredicates) {
  const std::vector<float> xs = {-0.75f, 0.f, 0.5f, kNaN, kInf, -kInf};
  const auto out = run_map("inverse_trig", {testing::f32({6}, xs)},
                           {{Op::kAsin, DType::kF32, {0}, {}},
                            {Op::kAcos, DType::kF32, {0}, {}},
                            {Op::kAtanh, DType::kF32, {0}, {}},
                            {Op::kIsNaN, DType::kBool, {0}, {}},
                            {Op::kIsInf, DType::kBool, {0}, {{"detect_negative", int64_t{0}}}},
                            {Op::kLog, DType::kF32, {0}, {}},
                            {Op::kAcosh, DType::kF32, {0}, {}}});
  const double nan = std::nan("");
  expect_values(out[0], {6}, {std::asin(-0.75f), 0, std::asin(0.5f), nan, nan, nan}, 1e-7, 0);
  expect_values(out[1], {6}, {std::acos(-0.75f), std::acos(0.f), std::acos(0.5f), nan, nan, nan},
                1e-7, 0);
  expect_values(out[2], {6}, {std::atanh(-0.75f), 0, std::atanh(0.5f), nan, nan, nan}, 1e-7, 0);
  expect_values(out[3], {6}, {0, 0, 0, 1, 0, 0}, 0, 0);
  expect_values(out[4], {6}, {0, 0, 0, 0, 1, 0}, 0, 0);
  expect_values(out[5], {6}, {nan, -INFINITY, std::log(0.5f), nan, INFINITY, nan}, 1e-7, 0);
  expect_values(out[6], {6}, {nan, nan, nan, nan, INFINITY, nan}, 0, 0);
}

TEST(CpuCodegenOps, IntegerOpsWrapAndNeverTrap) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  Tensor a = Tensor::from_vector<int32_t>({5}, {kMax, kMin, -7, 7, 3});
  Tensor b = Tensor::from_vector<int32_t>({5}, {1, -1, 3, -3, 0});
  const auto out = run_map("int_ops", {a, b},
                           {{Op::kAdd, DType::kI32, {0, 1}, {}},
                            {Op::kSub, DType::kI32, {0, 1}, {}},
                            {Op::kMul, DType::kI32, {0, 0}, {}},
                            {Op::kDiv, DType::kI32, {0, 1}, {}},
                            {Op::kMod, DType::kI32, {0, 1}, {}},
                            {Op::kMod, DType::kI32, {0, 1}, {{"fmod", int64_t{1}}}},
                            {Op::kPow, DType::kI32, {1, 1}, {}},
                            {Op::kAbs, DType::kI32, {0}, {}},
                            {Op::kNeg, DType::kI32, {0}, {}},
                            {Op::kBitwiseAnd, DType::kI32, {0, 1}, {}},
                            {Op::kBitwiseNot, DType::kI32, {1}, {}},
                            {Op::kMax, DType::kI32, {0, 1}, {}},
                            {Op::kMean, DType::kI32, {0, 1}, {}},
                            {Op::kSign, DType::kI32, {0}, {}}});
  auto v = [&](size_t k) { return testing::as_doubles(out[k]); };
  EXPECT_EQ(v(0), (std::vector<double>{kMin, kMax, -4, 4, 3}));  // wraps
  EXPECT_EQ(v(1), (std::vector<double>{kMax - 1, kMin + 1, -10, 10, 3}));
  EXPECT_EQ(v(2), (std::vector<double>{1, 0, 49, 49, 9}));        // kMax^2 wraps to 1
  EXPECT_EQ(v(3), (std::vector<double>{kMax, kMin, -2, -2, 0}));  // min / -1 wraps; / 0 -> 0
  EXPECT_EQ(v(4), (std::vector<double>{0, 0, 2, -2, 0}));         // Python sign
  EXPECT_EQ(v(5), (std::vector<double>{0, 0, -1, 1, 0}));         // C sign
  EXPECT_EQ(v(6), (std::vector<double>{1, -1, 27, 0, 1}));        // b^b: 3^3, (-3)^-3 -> 0
  EXPECT_EQ(v(7), (std::vector<double>{kMax, kMin, 7, 7, 3}));    // |min| stays min
  EXPECT_EQ(v(8), (std::vector<double>{-kMax, kMin, 7, -7, -3}));
  EXPECT_EQ(v(9), (std::vector<double>{1, kMin, 1, 5, 0}));
  EXPECT_EQ(v(10), (std::vector<double>{-2, 0, -4, 2, -1}));
  EXPECT_EQ(v(11), (std::vector<double>{kMax, -1, 3, 7, 3}));
  EXPECT_EQ(v(12), (std::vector<double>{kMin / 2, kMax / 2, -2, 2, 1}));  // (a + b) wraps, / 2
  EXPECT_EQ(v(13), (std::vector<double>{1, -1, -1, 1, 1}));
}

TEST(CpuCodegenOps, BinaryAndVariadicFloatOps) {
  const float nan = kNaN;
  Tensor a = testing::f32({4}, {1.5f, -2.f, nan, 4.f});
  Tensor b = testing::f32({4}, {0.5f, 3.f, 1.f, -kInf});
  Tensor c = testing::f32({4}, {2.f, -1.f, 0.f, nan});
  Tensor e = testing::i64({4}, {2, 3, 0, -1});
  Tensor p = testing::f32({4}, {1.f, 2.f, 3.f, 4.f});
  const auto out =
      run_map("float_ops", {a, b, c, e, p},
              {{Op::kMax, DType::kF32, {0, 1, 2}, {}},
               {Op::kMin, DType::kF32, {0, 1, 2}, {}},
               {Op::kSum, DType::kF32, {0, 1, 4}, {}},
               {Op::kMean, DType::kF32, {0, 4}, {}},
               {Op::kPow, DType::kF32, {0, 3}, {}},
               {Op::kMod, DType::kF32, {1, 0}, {{"fmod", int64_t{1}}}},
               {Op::kPRelu, DType::kF32, {1, 4}, {}},
               {Op::kClip, DType::kF32, {0, 2, 4}, {}},
               {Op::kLessOrEqual, DType::kBool, {0, 1}, {}},
               {Op::kEqual, DType::kBool, {0, 0}, {}},
               {Op::kBatchNormalization, DType::kF32, {0, 4, 2, 1, 4}, {{"epsilon", 0.5f}}}});
  const double n = std::nan("");
  expect_values(out[0], {4}, {2, 3, n, n}, 0, 0);  // NaN propagates from any position
  expect_values(out[1], {4}, {0.5, -2, n, n}, 0, 0);
  expect_values(out[2], {4}, {3, 3, n, -INFINITY}, 0, 0);
  expect_values(out[3], {4}, {1.25, 0, n, 4}, 0, 0);
  expect_values(out[4], {4}, {2.25, -8, 1, 0.25}, 0, 0);  // NaN^0 = 1
  expect_values(out[5], {4}, {0.5, 1, n, n}, 0, 0);
  expect_values(out[6], {4}, {0.5, 3, 1, -INFINITY}, 0, 0);
  expect_values(out[7], {4}, {1, -1, n, 4}, 0, 0);  // to [c, p]: lo > hi gives hi; NaN passes
  expect_values(out[8], {4}, {0, 1, 0, 0}, 0, 0);
  expect_values(out[9], {4}, {1, 1, 0, 1}, 0, 0);
  // (x - mean) / sqrt(var + eps) * scale + bias with scale = var = p, bias = c, mean = b.
  expect_values(out[10], {4},
                {(1.5 - 0.5) / std::sqrt(1.5) * 1 + 2, (-2.0 - 3) / std::sqrt(2.5) * 2 - 1, n, n},
                1e-6, 0);
}

TEST(CpuCodegenOps, LogicOnBoolAndWhere) {
  Tensor x = Tensor::from_vector<bool>({4}, {true, true, false, false});
  Tensor y = Tensor::from_vector<bool>({4}, {true, false, true, false});
  Tensor v = testing::f32({4}, {1, 2, 3, 4});
  Tensor w = testing::f32({4}, {-1, -2, -3, -4});
  const auto out = run_map("logic", {x, y, v, w},
                           {{Op::kAnd, DType::kBool, {0, 1}, {}},
                            {Op::kOr, DType::kBool, {0, 1}, {}},
                            {Op::kXor, DType::kBool, {0, 1}, {}},
                            {Op::kNot, DType::kBool, {0}, {}},
                            {Op::kWhere, DType::kF32, {1, 2, 3}, {}}});
  expect_values(out[0], {4}, {1, 0, 0, 0}, 0, 0);
  expect_values(out[1], {4}, {1, 1, 1, 0}, 0, 0);
  expect_values(out[2], {4}, {0, 1, 1, 0}, 0, 0);
  expect_values(out[3], {4}, {0, 0, 1, 1}, 0, 0);
  expect_values(out[4], {4}, {1, -2, 3, -4}, 0, 0);
}

TEST(CpuCodegenOps, HalfResultsRoundPerOpLikeTheReference) {
  // (x + y) * z in f16: the reference rounds x + y to f16 before multiplying.
  const std::vector<float> xs = {1.f, 1000.f, 0.1f}, ys = {0.0004882f, 0.3f, 0.2f};
  Tensor x = testing::to_dtype(testing::f32({3}, xs), DType::kF16);
  Tensor y = testing::to_dtype(testing::f32({3}, ys), DType::kF16);
  Graph g;
  testing::KernelBuilder b("half_chain");
  b.k.outer_dims = {3};
  const ExprId i = b.outer(0);
  const ExprId lx = b.load(b.buffer("x", DType::kF16, {3}, false), i);
  const ExprId ly = b.load(b.buffer("y", DType::kF16, {3}, false), i);
  const ExprId sum = b.op(Op::kAdd, DType::kF16, {lx, ly});
  const int out = b.buffer("out", DType::kF16, {3}, true);
  b.store(out, i, b.op(Op::kMul, DType::kF16, {sum, b.constant(DType::kF16, 3)}));
  Tensor t(DType::kF16, {3});
  run_kernel(b.k, g, {&x, &y, &t});
  for (int64_t k = 0; k < 3; ++k) {
    const Half hx = x.data<Half>()[k], hy = y.data<Half>()[k];
    const Half expected(static_cast<float>(Half(float(hx) + float(hy))) * 3.f);
    EXPECT_EQ(t.data<Half>()[k].bits, expected.bits) << k;
  }
}

TEST(CpuCodegenOps, EveryElementwiseOpHasAScalarFormOrSaysWhy) {
  const codegen::Target target = codegen::cpu_target();
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const OpKind kind = op_info(op).kind;
    if (kind != OpKind::kElementwise && kind != OpKind::kBroadcast) continue;
    codegen::ScalarOp s;
    s.op = op;
    s.node_name = "n";
    const int arity = op == Op::kClip ? 3 : std::min(op_info(op).min_inputs, 5);
    const bool logic = op == Op::kNot || op == Op::kAnd || op == Op::kOr || op == Op::kXor;
    const bool bits = op == Op::kBitwiseAnd || op == Op::kBitwiseOr || op == Op::kBitwiseXor ||
                      op == Op::kBitwiseNot;
    const DType t = logic ? DType::kBool : bits ? DType::kI32 : DType::kF32;
    for (int a = 0; a < arity; ++a) {
      s.args.push_back("x" + std::to_string(a));
      s.arg_types.push_back(op == Op::kWhere && a == 0 ? DType::kBool : t);
    }
    s.result = t;
    EXPECT_FALSE(codegen::emit_op(target, s).empty()) << op_name(op);
  }
}

TEST(CpuCodegenOps, UnsupportedDtypesAndAttributesNameNodeAndOp) {
  const codegen::Target target = codegen::cpu_target();
  codegen::ScalarOp s;
  s.op = Op::kBitwiseNot;
  s.node_name = "mask/not";
  s.args = {"x"};
  s.arg_types = {DType::kF32};
  testing::expect_error([&] { codegen::emit_op(target, s); }, ErrorCode::kUnsupported,
                        {"mask/not", "BitwiseNot", "f32"});
  s.op = Op::kExp;
  s.arg_types = {DType::kI64};
  testing::expect_error([&] { codegen::emit_op(target, s); }, ErrorCode::kUnsupported,
                        {"mask/not", "Exp", "i64"});
  Attributes attrs{{"approximate", std::string("cubic")}};
  s.op = Op::kGelu;
  s.arg_types = {DType::kF32};
  s.attrs = &attrs;
  testing::expect_error([&] { codegen::emit_op(target, s); }, ErrorCode::kUnsupported,
                        {"Gelu", "cubic"});
}

}  // namespace
}  // namespace gf
