// SessionOptions::round_16bit_intermediates on the GPU (label gpu): a bf16 chain of scale, shift
// and sign ops, which fuses into one kernel. Rounded (the default), every op's result is rounded
// to bf16 as the reference interpreter does, bit for bit. With f32 intermediates only the stored
// result is rounded: checked against the chain computed exactly in double from the same bf16
// inputs, where it must be as close as the per-op result or closer, and differ from it somewhere
// (else the option did nothing). A second chain checks the approximations that f32 intermediates
// allow (division, sigmoid) against the exact result rounded once; a third, over every 16-bit
// input, the rounding of a pair of values per conversion.
#ifdef GF_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "graphfuse/builder.h"
#include "graphfuse/session.h"
#include "gpu_test_util.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf {
namespace {

class Cuda16BitIntermediates : public testing::CudaDeviceTest {};

// y = neg(abs(relu(x * 0.3 + 0.7) * 1.9 - 1.1) * 0.45 + 0.2): steps that each round in bf16.
constexpr float kScale1 = 0.3f, kShift1 = 0.7f, kScale2 = 1.9f, kShift2 = -1.1f, kScale3 = 0.45f,
                kShift3 = 0.2f;

Graph chain(const Shape& shape) {
  GraphBuilder b("bf16_chain");
  const DType t = DType::kBF16;
  ValueId v = b.input("x", t, shape);
  v = b.add(b.mul(v, b.constant_scalar(kScale1, t)), b.constant_scalar(kShift1, t));
  v = b.unary(Op::kRelu, v);
  v = b.add(b.mul(v, b.constant_scalar(kScale2, t)), b.constant_scalar(kShift2, t));
  v = b.unary(Op::kAbs, v);
  v = b.add(b.mul(v, b.constant_scalar(kScale3, t)), b.constant_scalar(kShift3, t));
  b.output(b.unary(Op::kNeg, v), "y");
  return b.build();
}

// The chain in double from one input, with the constants as bf16 holds them.
double exact_chain(double x) {
  const auto c = [](float f) { return static_cast<double>(static_cast<float>(BFloat16(f))); };
  double v = x * c(kScale1) + c(kShift1);
  v = std::max(v, 0.0);
  v = std::fabs(v * c(kScale2) + c(kShift2));
  return -(v * c(kScale3) + c(kShift3));
}

TEST_F(Cuda16BitIntermediates, RoundedIsTheReferenceBitForBitAndF32IsCloserToTheExactChain) {
  const Shape shape{37, 131};  // odd sizes: vector bodies and scalar tails
  const Graph g = chain(shape);
  Tensor x(DType::kBF16, {37, 131});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<BFloat16>()[i] = BFloat16(dist(rng));

  SessionOptions rounded{Device::kCuda};
  SessionOptions f32 = rounded;
  f32.round_16bit_intermediates = false;
  Session rounded_session(g, rounded), f32_session(g, f32);
  const Tensor per_op = rounded_session.run({x})[0];
  const Tensor once = f32_session.run({x})[0];
  EXPECT_EQ(f32_session.stats().fused_kernels, 1);

  const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
  ASSERT_EQ(per_op.nbytes(), want.nbytes());
  EXPECT_EQ(std::memcmp(per_op.raw(), want.raw(), want.nbytes()), 0);

  double err_per_op = 0, err_once = 0;
  int64_t differ = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double exact = exact_chain(static_cast<float>(x.data<BFloat16>()[i]));
    const double a = static_cast<float>(per_op.data<BFloat16>()[i]);
    const double b = static_cast<float>(once.data<BFloat16>()[i]);
    err_per_op += std::fabs(a - exact);
    err_once += std::fabs(b - exact);
    // Rounded once, from f32 intermediates: within one bf16 step (2^-7 relative) of exact.
    EXPECT_LE(std::fabs(b - exact), std::ldexp(std::fabs(exact), -7) + 1e-30) << "element " << i;
    differ += per_op.data<BFloat16>()[i].bits != once.data<BFloat16>()[i].bits;
  }
  EXPECT_GT(differ, 0);
  EXPECT_LT(err_once, err_per_op);
}

// y = sigmoid(-|x * s|) / (relu(x) + s): with f32 intermediates the division and the sigmoid
// take the device's approximations (Target::approx_divide, approx_sigmoid). Each result must
// still be the exact value (in double, from the same 16-bit inputs) rounded once: within half a
// step of its 16-bit format, plus 2^-16 of its size for the approximations. Rounded per op, it
// must stay within two steps of the reference interpreter's result.
Graph activation_chain(DType t, const Shape& shape, float s) {
  GraphBuilder b("activation_chain");
  const ValueId x = b.input("x", t, shape);
  const ValueId c = b.constant_scalar(s, t);
  const ValueId e = b.unary(Op::kSigmoid, b.unary(Op::kNeg, b.unary(Op::kAbs, b.mul(x, c))));
  b.output(b.binary(Op::kDiv, e, b.add(b.unary(Op::kRelu, x), c)), "y");
  return b.build();
}

double to_double(DType t, const Tensor& x, int64_t i) {
  return t == DType::kBF16 ? static_cast<float>(x.data<BFloat16>()[i])
                           : static_cast<float>(x.data<Half>()[i]);
}

TEST_F(Cuda16BitIntermediates, ApproximateDivisionAndSigmoidStayWithinTheFinalRounding) {
  constexpr float kS = 1.7f;
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(t));
    const Shape shape{29, 173};
    const Graph g = activation_chain(t, shape, kS);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-9.0f, 9.0f);
    Tensor x(t, {29, 173});
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (t == DType::kBF16)
        x.data<BFloat16>()[i] = BFloat16(dist(rng));
      else
        x.data<Half>()[i] = Half(dist(rng));
    }
    SessionOptions rounded{Device::kCuda};
    SessionOptions f32 = rounded;
    f32.round_16bit_intermediates = false;
    const Tensor once = Session(g, f32).run({x})[0];
    const Tensor per_op = Session(g, rounded).run({x})[0];
    const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
    const double s =
        t == DType::kBF16 ? static_cast<float>(BFloat16(kS)) : static_cast<float>(Half(kS));
    int64_t bad_once = 0, bad_per_op = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double xv = to_double(t, x, i);
      const double exact = 1.0 / (1.0 + std::exp(std::fabs(xv * s))) / (std::max(xv, 0.0) + s);
      const double got = to_double(t, once, i);
      if (std::fabs(got - exact) >
          0.5 * testing::step_16bit(t, exact) + std::ldexp(std::fabs(exact), -16)) {
        if (++bad_once <= 5)
          ADD_FAILURE() << "f32 intermediates, x=" << xv << ": " << got << " exact " << exact;
      }
      const double ref = to_double(t, want, i);
      if (std::fabs(to_double(t, per_op, i) - ref) > 2 * testing::step_16bit(t, ref)) {
        if (++bad_per_op <= 5)
          ADD_FAILURE() << "rounded, x=" << xv << ": " << to_double(t, per_op, i) << " reference "
                        << ref;
      }
    }
    EXPECT_EQ(bad_once, 0);
    EXPECT_EQ(bad_per_op, 0);
  }
}

// Rounded per op, a run of vector points computes each rounded result for all of them and
// rounds them a pair per conversion instruction. Over every 16-bit bit pattern as input (NaNs,
// infinities, subnormals, signed zeros), with a scale that overflows f16 and one that makes
// subnormals, both formats must still give the reference interpreter's values: bit for bit,
// except that a NaN only needs to be a NaN.
Graph overflow_chain(DType t, const Shape& shape) {
  GraphBuilder b("overflow_chain");
  ValueId v = b.input("x", t, shape);
  v = b.add(b.mul(v, b.constant_scalar(3.0f, t)), b.constant_scalar(0.7f, t));
  v = b.mul(b.unary(Op::kAbs, v), b.constant_scalar(0.3f, t));
  v = b.binary(Op::kSub, b.mul(v, b.constant_scalar(1.0e-5f, t)), b.constant_scalar(1.1f, t));
  b.output(b.unary(Op::kNeg, b.mul(v, v)), "y");
  return b.build();
}

TEST_F(Cuda16BitIntermediates, PairedRoundingIsTheReferenceBitForBitOnEveryInput) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(t));
    const Shape shape{256, 257};  // every pattern, in rows of odd length
    const Graph g = overflow_chain(t, shape);
    Tensor x(t, {256, 257});
    auto* bits = static_cast<uint16_t*>(x.raw());
    for (int64_t i = 0; i < x.numel(); ++i) bits[i] = static_cast<uint16_t>(i * 40503);
    const Tensor got = Session(g, SessionOptions{Device::kCuda}).run({x})[0];
    const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
    const auto* g_bits = static_cast<const uint16_t*>(got.raw());
    const auto* w_bits = static_cast<const uint16_t*>(want.raw());
    int64_t bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool both_nan = std::isnan(to_double(t, got, i)) && std::isnan(to_double(t, want, i));
      if (g_bits[i] != w_bits[i] && !both_nan && ++bad <= 5)
        ADD_FAILURE() << "x bits " << bits[i] << ": " << g_bits[i] << ", reference " << w_bits[i];
    }
    EXPECT_EQ(bad, 0);
  }
}

// Packed ops (two values per instruction, cuda_packed.cpp) over every pair of 16-bit bit
// patterns the two inputs meet in: sums, differences, products (f16 products of two inputs,
// bf16 ones with a constant), Relu, Abs and Neg, bit for bit the reference's (a NaN only needs
// to be a NaN; Relu keeps -0 and NaN as the reference does).
TEST_F(Cuda16BitIntermediates, PackedOpsAreTheReferenceBitForBitOnEveryInputPair) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(t));
    const Shape shape{512, 256};
    GraphBuilder b("packed");
    const ValueId x = b.input("x", t, shape), y = b.input("y", t, shape);
    const ValueId d = b.binary(Op::kSub, b.add(x, y), b.mul(x, b.constant_scalar(1.5f, t)));
    const ValueId r = b.binary(Op::kSub, b.unary(Op::kRelu, d), y);
    b.output(b.unary(Op::kNeg, b.unary(Op::kAbs, r)), "z0");
    b.output(b.add(b.unary(Op::kRelu, x), t == DType::kF16 ? b.mul(x, y) : y), "z1");
    const Graph g = b.build();
    Tensor xs(t, {512, 256}), ys(t, {512, 256});
    auto* xb = static_cast<uint16_t*>(xs.raw());
    auto* yb = static_cast<uint16_t*>(ys.raw());
    for (int64_t i = 0; i < xs.numel(); ++i) {  // every x, each twice, against scattered y
      xb[i] = static_cast<uint16_t>(i >> 1);
      yb[i] = static_cast<uint16_t>(i * 40503 + (i >> 16) * 7919);
    }
    const std::vector<Tensor> got = Session(g, SessionOptions{Device::kCuda}).run({xs, ys});
    const std::vector<Tensor> want = ref::run_graph(g, std::vector<Tensor>{xs, ys});
    for (size_t o = 0; o < 2; ++o) {
      const auto* g_bits = static_cast<const uint16_t*>(got[o].raw());
      const auto* w_bits = static_cast<const uint16_t*>(want[o].raw());
      int64_t bad = 0;
      for (int64_t i = 0; i < xs.numel(); ++i) {
        const bool both_nan =
            std::isnan(to_double(t, got[o], i)) && std::isnan(to_double(t, want[o], i));
        if (g_bits[i] != w_bits[i] && !both_nan && ++bad <= 5)
          ADD_FAILURE() << "z" << o << ", x bits " << xb[i] << ", y bits " << yb[i] << ": "
                        << g_bits[i] << ", reference " << w_bits[i];
      }
      EXPECT_EQ(bad, 0) << "z" << o;
    }
  }
}

// A 16-bit Sigmoid rounded per op takes the precise exponential and a quotient within one f32
// ulp (gf_sigmoid_faithful). Over every 16-bit input, each result must be within one step of
// the reference interpreter's, and all but a few in ten thousand the same bits.
TEST_F(Cuda16BitIntermediates, RoundedSigmoidIsTheReferenceToWithinOneStepOnEveryInput) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(t));
    GraphBuilder b("sigmoid");
    b.output(b.unary(Op::kSigmoid, b.input("x", t, Shape{256, 257})), "y");
    const Graph g = b.build();
    Tensor x(t, {256, 257});
    auto* bits = static_cast<uint16_t*>(x.raw());
    for (int64_t i = 0; i < x.numel(); ++i) bits[i] = static_cast<uint16_t>(i * 40503);
    const Tensor got = Session(g, SessionOptions{Device::kCuda}).run({x})[0];
    const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
    int64_t far = 0, differ = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double a = to_double(t, got, i), w = to_double(t, want, i);
      if (std::isnan(a) && std::isnan(w)) continue;
      differ += a != w;
      if (!(std::fabs(a - w) <= testing::step_16bit(t, w)) && ++far <= 5)
        ADD_FAILURE() << "x = " << to_double(t, x, i) << ": " << a << ", reference " << w;
    }
    EXPECT_EQ(far, 0);
    EXPECT_LE(differ, x.numel() / 2000) << differ << " results differ in their last bit";
  }
}

// A 16-bit Gelu (erf and tanh forms) takes gf_gelu_erf_16bit / gf_gelu_tanh_16bit. Over every
// 16-bit input, each result must be the exact value rounded once (testing::gelu_16bit_misses).
TEST_F(Cuda16BitIntermediates, GeluIsTheExactValueRoundedOnceOnEveryInput) {
  for (DType t : {DType::kBF16, DType::kF16}) {
    for (bool tanh : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (tanh ? " tanh" : " erf"));
      GraphBuilder b("gelu");
      b.output(b.gelu(b.input("x", t, Shape{256, 257}), tanh), "y");
      const Graph g = b.build();
      Tensor x(t, {256, 257});
      auto* bits = static_cast<uint16_t*>(x.raw());
      for (int64_t i = 0; i < x.numel(); ++i) bits[i] = static_cast<uint16_t>(i * 40503);
      const Tensor got = Session(g, SessionOptions{Device::kCuda}).run({x})[0];
      const int64_t bad = testing::gelu_16bit_misses(t, tanh, x, got);
      EXPECT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
