// Decode-shaped products for the executor's skinny GEMM path, shared by the unit test (matched
// and compiled by NVRTC without a GPU: tests/unit/test_skinny_gemm_steps.cpp) and the GPU test
// (run against the reference interpreter: tests/gpu/test_cuda_skinny_gemm_steps.cpp).
//
// A case is one graph of 16 independent products, one for each row count M = 1..16, each with
// its own input and weight, all in one dtype, layout and epilogue:
//   MatMul  x [M, K] (even M: [2, M/2, K], a batch dim folded into the rows) times W [K, N]:
//           a constant, which the executor stores as [N, K] (runtime/cuda/weight_layout.h), or,
//           where skinny_case_w_is_input(M), a graph input, which it reads as [K, N];
//           bias Add(product, bias) (odd M: Add(bias, product)); GELU in its erf decomposition;
//           residual Add(product, r) alone (at M = 1, r [1, N] is also a bias row).
//   Gemm    x [M, K] times W [N, K] with transB = 1, the bias as the Gemm's C, then a Reshape to
//           [1, M, N] (as torch.onnx exports a Linear layer); GELU in its tanh decomposition;
//           the residual epilogue is the bias and then Add(r [1, M, N]).
// The GELU decompositions are what fuse_gelu turns into one Gelu node. K and N are not
// multiples of the kernel's tiles; the last shape has 16-byte rows (vector loads).
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graphfuse/builder.h"
#include "test_util.h"

namespace gf::testing {

enum class SkinnyEpilogue { kNone, kBias, kBiasRelu, kBiasGelu, kResidual };

struct SkinnyStepCase {
  std::string name;
  DType dtype = DType::kF32;
  bool gemm = false;  // Gemm with transB (W [N, K]); else MatMul (W [K, N])
  SkinnyEpilogue epilogue = SkinnyEpilogue::kNone;
  int64_t k = 0, n = 0;
  Graph graph;
};

// Whether a MatMul case's product of `m` rows reads W as a graph input (the kernel's [K, N]
// layout) instead of a constant (stored [N, K]): half the row counts, both ranks of x.
inline bool skinny_case_w_is_input(int64_t m) { return m % 4 >= 2; }

inline const char* skinny_epilogue_name(SkinnyEpilogue e) {
  switch (e) {
    case SkinnyEpilogue::kNone: return "none";
    case SkinnyEpilogue::kBias: return "bias";
    case SkinnyEpilogue::kBiasRelu: return "bias_relu";
    case SkinnyEpilogue::kBiasGelu: return "bias_gelu";
    case SkinnyEpilogue::kResidual: return "residual";
  }
  return "";
}

inline Tensor skinny_uniform(std::mt19937& rng, std::vector<int64_t> dims, float scale, DType dtype) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return to_dtype(t, dtype);
}

// x * 0.5 * (1 + Erf(x / sqrt(2))).
inline ValueId gelu_erf_decomposed(GraphBuilder& b, ValueId x, DType t) {
  const ValueId e = b.unary(Op::kErf, b.binary(Op::kDiv, x, b.constant_scalar(1.41421356f, t)));
  return b.mul(b.mul(x, b.constant_scalar(0.5f, t)), b.add(b.constant_scalar(1.0f, t), e));
}

// 0.5 * x * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
inline ValueId gelu_tanh_decomposed(GraphBuilder& b, ValueId x, DType t) {
  const ValueId cube = b.binary(Op::kPow, x, b.constant_scalar(3.0f, t));
  const ValueId inner = b.add(x, b.mul(b.constant_scalar(0.044715f, t), cube));
  const ValueId th = b.unary(Op::kTanh, b.mul(b.constant_scalar(0.7978845608f, t), inner));
  return b.mul(b.mul(b.constant_scalar(0.5f, t), x), b.add(b.constant_scalar(1.0f, t), th));
}

inline Graph skinny_step_graph(DType t, bool gemm, SkinnyEpilogue e, int64_t k, int64_t n,
                               uint32_t seed) {
  std::mt19937 rng(seed);
  GraphBuilder b("skinny_" + std::string(skinny_epilogue_name(e)));
  const bool bias = e == SkinnyEpilogue::kBias || e == SkinnyEpilogue::kBiasRelu ||
                    e == SkinnyEpilogue::kBiasGelu || (gemm && e == SkinnyEpilogue::kResidual);
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(k));
  for (int64_t m = 1; m <= 16; ++m) {
    const std::string id = std::to_string(m);
    ValueId y = kNoValue;
    std::vector<int64_t> y_dims;
    if (gemm) {
      const ValueId x = b.input("x" + id, t, Shape{m, k});
      std::vector<ValueId> in{x, b.constant("w" + id, skinny_uniform(rng, {n, k}, w_scale, t))};
      if (bias) in.push_back(b.constant("bias" + id, skinny_uniform(rng, {n}, 0.5f, t)));
      y = b.reshape(b.op1(Op::kGemm, in, {{"transB", int64_t{1}}}), {1, m, n});
      y_dims = {1, m, n};
    } else {
      const Shape x_shape = m % 2 == 0 ? Shape{2, m / 2, k} : Shape{m, k};
      const Tensor w = skinny_uniform(rng, {k, n}, w_scale, t);
      y = b.matmul(b.input("x" + id, t, x_shape),
                   skinny_case_w_is_input(m) ? b.input("w" + id, t, Shape{k, n}) : b.constant("w" + id, w));
      y_dims = m % 2 == 0 ? std::vector<int64_t>{2, m / 2, n} : std::vector<int64_t>{m, n};
      if (bias) {
        const ValueId row = b.constant("bias" + id, skinny_uniform(rng, {n}, 0.5f, t));
        y = m % 2 == 0 ? b.add(y, row) : b.add(row, y);
      }
    }
    if (e == SkinnyEpilogue::kBiasRelu) y = b.unary(Op::kRelu, y);
    if (e == SkinnyEpilogue::kBiasGelu) y = gemm ? gelu_tanh_decomposed(b, y, t) : gelu_erf_decomposed(b, y, t);
    if (e == SkinnyEpilogue::kResidual) {
      const ValueId r = b.input("r" + id, t, Shape::from_static(y_dims));
      y = m % 2 == 0 ? b.add(y, r) : b.add(r, y);
    }
    b.output(y, "y" + id);
  }
  return b.build();
}

inline std::vector<SkinnyStepCase> skinny_step_cases() {
  struct KN {
    int64_t k, n;
  };
  // 776 x 264: rows of W are whole 16-byte vectors in both layouts, tiles still partial.
  const KN shapes[] = {{77, 131}, {131, 771}, {771, 77}, {776, 264}};
  const SkinnyEpilogue epilogues[] = {SkinnyEpilogue::kNone, SkinnyEpilogue::kBias, SkinnyEpilogue::kBiasRelu,
                                      SkinnyEpilogue::kBiasGelu, SkinnyEpilogue::kResidual};
  std::vector<SkinnyStepCase> out;
  uint32_t i = 0;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool gemm : {false, true}) {
      for (SkinnyEpilogue e : epilogues) {
        const KN s = shapes[i % 4];
        SkinnyStepCase c;
        c.dtype = t;
        c.gemm = gemm;
        c.epilogue = e;
        c.k = s.k;
        c.n = s.n;
        c.name = std::string(dtype_name(t)) + (gemm ? "_gemm_" : "_matmul_") + skinny_epilogue_name(e) +
                 "_k" + std::to_string(s.k) + "_n" + std::to_string(s.n);
        c.graph = skinny_step_graph(t, gemm, e, s.k, s.n, 100 + i);
        out.push_back(std::move(c));
        ++i;
      }
    }
  }
  return out;
}

}  // namespace gf::testing
