// The kernels of the CUDA code generator tests, shared by the unit tests (emitted and compiled
// with NVRTC, no GPU needed: tests/unit/test_cuda_codegen.cpp) and the GPU tests (launched and
// compared with an oracle: tests/gpu/test_cuda_kernels.cpp). Sizes are chosen to not be
// multiples of the block (256) or warp (32) width, with size-1 dims, and to hit every schedule.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "gather_cases.h"
#include "graphfuse/builder.h"
#include "unit/test_cpu_codegen_util.h"

namespace gf::testing {

// A hand-built kernel with its buffers: inputs filled, outputs allocated (contents undefined).
// Its oracle is KernelIrEvaluator (tests/kernel_ir_eval.h).
struct HandKernelCase {
  std::string name;
  FusedKernel kernel;
  std::vector<Tensor> buffers;  // in kernel.buffers order
  double rtol = 1e-5, atol = 1e-6;
  // The evaluator keeps f16/bf16 intermediates in float; a case that has some is compared
  // with a kernel that does too (lowered graphs test the per-op rounding against the reference).
  bool round_16bit_intermediates = true;
};

// A small model, planned and lowered; its oracle is ref::run_graph.
struct GraphCase {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;
  double rtol = 1e-5, atol = 1e-6;
};

// Deterministic values in about [offset, offset + 22 * scale].
inline std::vector<float> case_ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7) % 23) + offset;
  return v;
}

inline Tensor case_f32(const std::vector<int64_t>& dims, float scale, float offset) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return f32(dims, case_ramp(static_cast<size_t>(n), scale, offset));
}

inline std::vector<Tensor> buffers_for(const FusedKernel& k, std::vector<Tensor> inputs) {
  std::vector<Tensor> out;
  size_t next = 0;
  for (const fusion::KernelBuffer& b : k.buffers) {
    out.push_back(b.is_output ? Tensor(b.dtype, b.dims) : inputs.at(next++));
  }
  return out;
}

// y = x + bias over [37,1,70] (broadcast bias[70]) and exp of it: pointwise, two outputs.
inline HandKernelCase broadcast_add_exp_case() {
  KernelBuilder b("add_exp");
  b.k.comment = "Add 'bias_add' -> Exp 'act'";
  const int x = b.buffer("x", DType::kF32, {37, 1, 70}, false);
  const int bias = b.buffer("bias", DType::kF32, {70}, false);
  const int sum = b.buffer("sum", DType::kF32, {37, 1, 70}, true);
  const int y = b.buffer("y", DType::kF32, {37, 1, 70}, true);
  b.k.outer_dims = {37, 1, 70};
  const ExprId o0 = b.outer(0), o1 = b.outer(1), o2 = b.outer(2);
  const ExprId at = b.linear({o0, o1, o2}, {70, 70, 1});
  const ExprId s = b.op(Op::kAdd, DType::kF32, {b.load(x, at), b.load(bias, o2)});
  b.store(sum, at, s);
  b.store(y, at, b.op(Op::kExp, DType::kF32, {s}));
  return {"broadcast_add_exp", b.k,
          buffers_for(b.k, {case_f32({37, 1, 70}, 0.17f, -2.f), case_f32({70}, 0.05f, -0.5f)})};
}

// y[a][b][c] = x[b][c][a] for x: [5,7,9] over one flat outer loop (div/mod index exprs).
inline HandKernelCase transpose_case() {
  KernelBuilder b("transpose_201");
  const int x = b.buffer("x", DType::kF32, {5, 7, 9}, false);
  const int y = b.buffer("y", DType::kF32, {9, 5, 7}, true);
  b.k.outer_dims = {315};
  const ExprId flat = b.outer(0);
  const ExprId a = b.index(IndexOp::kDiv, flat, b.idx(35));
  const ExprId bb = b.index(IndexOp::kMod, b.index(IndexOp::kDiv, flat, b.idx(7)), b.idx(5));
  const ExprId c = b.index(IndexOp::kMod, flat, b.idx(7));
  b.store(y, flat, b.load(x, b.linear({bb, c, a}, {63, 9, 1})));
  std::vector<float> xs(315);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  return {"transpose", b.k, buffers_for(b.k, {f32({5, 7, 9}, xs)}), 0, 0};
}

// f32 to f16, bf16, i64 and bool, with halfway, overflowing, NaN and subnormal values: exact.
inline HandKernelCase casts_case() {
  KernelBuilder b("casts");
  const int64_t n = 301;
  const int x = b.buffer("x", DType::kF32, {n}, false);
  const int h = b.buffer("h", DType::kF16, {n}, true);
  const int bf = b.buffer("bf", DType::kBF16, {n}, true);
  const int ints = b.buffer("i", DType::kI64, {n}, true);
  const int flags = b.buffer("flags", DType::kBool, {n}, true);
  b.k.outer_dims = {n};
  const ExprId i = b.outer(0);
  const ExprId v = b.load(x, i);
  b.store(h, i, b.cast(DType::kF16, v));
  b.store(bf, i, b.cast(DType::kBF16, v));
  b.store(ints, i, b.cast(DType::kI64, v));
  b.store(flags, i, b.cast(DType::kBool, v));
  std::vector<float> xs = case_ramp(static_cast<size_t>(n), 3.7f, -40.f);
  const std::vector<float> special = {1.00048828125f, -2.75f, 70000.f, kNaN, -1e30f, 0.f,
                                      -0.f, 3e-41f, 65520.f, -kInf, 1.0009765625f};
  for (size_t k = 0; k < special.size(); ++k) xs[k * 17] = special[k];
  return {"casts", b.k, buffers_for(b.k, {f32({n}, xs)}), 0, 0};
}

// A chain computed in f16 with per-op rounding: tanh((x + s) * s), stored as f16.
inline HandKernelCase half_chain_case() {
  KernelBuilder b("half_chain");
  const int x = b.buffer("x", DType::kF16, {3, 300}, false);
  const int s = b.buffer("s", DType::kF16, {300}, false);
  const int y = b.buffer("y", DType::kF16, {3, 300}, true);
  b.k.outer_dims = {3, 300};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId at = b.linear({o0, o1}, {300, 1});
  const ExprId sv = b.load(s, o1);
  const ExprId t = b.op(Op::kMul, DType::kF16, {b.op(Op::kAdd, DType::kF16, {b.load(x, at), sv}), sv});
  b.store(y, at, b.op(Op::kTanh, DType::kF16, {t}));
  HandKernelCase c{"half_chain", b.k,
                   buffers_for(b.k, {to_dtype(case_f32({3, 300}, 0.37f, -4.f), DType::kF16),
                                     to_dtype(case_f32({300}, 0.11f, 0.3f), DType::kF16)})};
  c.rtol = 1e-3;  // one f16 ulp where the device's tanhf rounds the other way
  c.atol = 1e-3;
  c.round_16bit_intermediates = false;
  return c;
}

// Softmax over a 2-d inner space [3,50] per outer point of [6,1]: max, then sum of exp, then a
// per-inner store; the max and the sum are stored per outer point too. Row 2 holds a NaN.
inline HandKernelCase softmax_rows_case(int64_t inner_last) {
  // 6000: 18000 f32 per row, more than a block keeps in registers (looped rows).
  KernelBuilder b(inner_last > 5000   ? "softmax_looped"
                  : inner_last > 1000 ? "softmax_block"
                                      : "softmax_warp");
  const std::vector<int64_t> xdims = {6, 1, 3, inner_last};
  const int x = b.buffer("x", DType::kF32, xdims, false);
  const int y = b.buffer("y", DType::kF32, xdims, true);
  const int mx = b.buffer("mx", DType::kF32, {6, 1}, true);
  const int sm = b.buffer("sum", DType::kF32, {6, 1}, true);
  b.k.outer_dims = {6, 1};
  b.k.inner_dims = {3, inner_last};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId at = b.linear({o0, o1, b.inner(0), b.inner(1)}, {3 * inner_last, 3 * inner_last,
                                                                inner_last, 1});
  const ExprId v = b.load(x, at);
  b.reduce({ReduceKind::kMax, DType::kF32, v});
  const ExprId e = b.op(Op::kExp, DType::kF32, {b.op(Op::kSub, DType::kF32, {v, b.row(0, DType::kF32)})});
  b.reduce({ReduceKind::kSum, DType::kF32, e});
  const ExprId out_at = b.linear({o0, o1}, {1, 1});
  b.store(mx, out_at, b.row(0, DType::kF32));
  b.store(sm, out_at, b.row(1, DType::kF32));
  b.store(y, at, b.op(Op::kDiv, DType::kF32, {e, b.row(1, DType::kF32)}), true);
  Tensor tx = case_f32(xdims, 0.31f, -3.f);
  tx.data<float>()[2 * 3 * inner_last + 5] = kNaN;
  return {std::string(b.k.name), b.k, buffers_for(b.k, {tx})};
}

// Integer rows: i32 data summed, multiplied (wrapping) and min-ed in i64; 40 rows of 45.
inline HandKernelCase integer_rows_case() {
  KernelBuilder b("int_rows");
  const int x = b.buffer("x", DType::kI32, {40, 45}, false);
  const int s = b.buffer("s", DType::kI64, {40}, true);
  const int p = b.buffer("p", DType::kI64, {40}, true);
  const int mn = b.buffer("mn", DType::kI32, {40}, true);
  b.k.outer_dims = {40};
  b.k.inner_dims = {45};
  const ExprId o = b.outer(0);
  const ExprId v = b.load(x, b.linear({o, b.inner(0)}, {45, 1}));
  b.reduce({ReduceKind::kSum, DType::kI64, v});
  b.reduce({ReduceKind::kProd, DType::kI64, v});
  b.reduce({ReduceKind::kMin, DType::kI64, v});
  b.store(s, o, b.row(0, DType::kI64));
  b.store(p, o, b.row(1, DType::kI64));
  b.store(mn, o, b.row(2, DType::kI32));
  Tensor tx(DType::kI32, {40, 45});
  for (int64_t i = 0; i < tx.numel(); ++i)
    tx.data<int32_t>()[i] = static_cast<int32_t>((i * 37) % 11) - 5 + (i == 7 ? 2000000000 : 0);
  return {"integer_rows", b.k, buffers_for(b.k, {tx}), 0, 0};
}

// A column sum in f64 (x: [1500, 1, 3] summed over axis 0): one block per column.
inline HandKernelCase f64_column_sum_case() {
  KernelBuilder b("f64_colsum");
  const int x = b.buffer("x", DType::kF64, {1500, 1, 3}, false);
  const int y = b.buffer("y", DType::kF64, {1, 3}, true);
  b.k.outer_dims = {1, 3};
  b.k.inner_dims = {1500};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  b.reduce({ReduceKind::kSum, DType::kF64, b.load(x, b.linear({b.inner(0), o0, o1}, {3, 3, 1}))});
  b.store(y, b.linear({o0, o1}, {3, 1}), b.row(0, DType::kF64));
  return {"f64_column_sum", b.k,
          buffers_for(b.k, {to_dtype(case_f32({1500, 1, 3}, 0.013f, -0.1f), DType::kF64)}), 1e-12,
          1e-12};
}

// An empty inner space: every row is the identity (0 for sum, -inf for max).
inline HandKernelCase empty_rows_case() {
  KernelBuilder b("empty_rows");
  const int x = b.buffer("x", DType::kF32, {5, 0}, false);
  const int s = b.buffer("s", DType::kF32, {5}, true);
  const int m = b.buffer("m", DType::kF32, {5}, true);
  b.k.outer_dims = {5};
  b.k.inner_dims = {0};
  const ExprId o = b.outer(0);
  const ExprId v = b.load(x, b.linear({o, b.inner(0)}, {0, 1}));
  b.reduce({ReduceKind::kSum, DType::kF32, v});
  b.reduce({ReduceKind::kMax, DType::kF32, v});
  b.store(s, o, b.row(0, DType::kF32));
  b.store(m, o, b.row(1, DType::kF32));
  return {"empty_rows", b.k, buffers_for(b.k, {Tensor(DType::kF32, {5, 0})}), 0, 0};
}

// One element.
inline HandKernelCase single_element_case() {
  KernelBuilder b("single");
  const int x = b.buffer("x", DType::kF32, {1}, false);
  const int y = b.buffer("y", DType::kF32, {1}, true);
  b.k.outer_dims = {1};
  const ExprId i = b.outer(0);
  b.store(y, i, b.op(Op::kSigmoid, DType::kF32, {b.load(x, i)}));
  return {"single_element", b.k, buffers_for(b.k, {f32({1}, {-0.75f})})};
}

// bf16 x [3,4099] times 2 plus a bias [4099], into f32: runs of 8 points (two 128-bit f32
// stores, one bf16 load) that cross rows, the bias read per point, and a one-point scalar tail.
inline HandKernelCase vector_tail_case() {
  KernelBuilder b("vector_tail");
  const int x = b.buffer("x", DType::kBF16, {3, 4099}, false);
  const int bias = b.buffer("bias", DType::kF32, {4099}, false);
  const int y = b.buffer("y", DType::kF32, {3, 4099}, true);
  b.k.outer_dims = {3, 4099};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId at = b.linear({o0, o1}, {4099, 1});
  const ExprId v = b.cast(DType::kF32, b.load(x, at));
  b.store(y, at,
          b.op(Op::kAdd, DType::kF32,
               {b.op(Op::kMul, DType::kF32, {v, b.constant(DType::kF32, 2)}), b.load(bias, o1)}));
  return {"vector_tail", b.k,
          buffers_for(b.k, {to_dtype(case_f32({3, 4099}, 0.25f, -2.f), DType::kBF16),
                            case_f32({4099}, 0.5f, 1.f)})};
}

// y = x * s + c over [64,96] f32, s: [64,1] (one value per run), c: [96] (contiguous along a
// run): runs of 4 inside a row.
inline HandKernelCase vector_broadcast_case() {
  KernelBuilder b("vector_broadcast");
  const int x = b.buffer("x", DType::kF32, {64, 96}, false);
  const int sc = b.buffer("s", DType::kF32, {64, 1}, false);
  const int c = b.buffer("c", DType::kF32, {96}, false);
  const int y = b.buffer("y", DType::kF32, {64, 96}, true);
  b.k.outer_dims = {64, 96};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId at = b.linear({o0, o1}, {96, 1});
  b.store(y, at,
          b.op(Op::kAdd, DType::kF32,
               {b.op(Op::kMul, DType::kF32, {b.load(x, at), b.load(sc, o0)}), b.load(c, o1)}));
  return {"vector_broadcast", b.k,
          buffers_for(b.k, {case_f32({64, 96}, 0.1f, -1.f), case_f32({64, 1}, 0.3f, -2.f),
                            case_f32({96}, 0.7f, 0.5f)})};
}

inline std::vector<HandKernelCase> hand_kernel_cases() {
  return {broadcast_add_exp_case(), transpose_case(),      casts_case(),
          half_chain_case(),        softmax_rows_case(50), softmax_rows_case(1100),
          softmax_rows_case(6000),  integer_rows_case(),   f64_column_sum_case(),
          empty_rows_case(),        single_element_case(), vector_tail_case(),
          vector_broadcast_case()};
}

// An elementwise chain in `t`: gelu(x * s + x) - relu(x), x: [3,257], s: [257].
inline GraphCase elementwise_chain_case(DType t) {
  GraphBuilder b("chain");
  const ValueId x = b.input("x", t, Shape::from_static({3, 257}));
  const ValueId s = b.input("s", t, Shape::from_static({257}));
  const ValueId h = b.gelu(b.add(b.mul(x, s), x));
  b.output(b.binary(Op::kSub, h, b.unary(Op::kRelu, x)), "y");
  GraphCase c{"chain_" + std::string(dtype_name(t)), b.build(),
              {to_dtype(case_f32({3, 257}, 0.21f, -2.3f), t), to_dtype(case_f32({257}, 0.07f, -0.6f), t)}};
  if (t == DType::kF16) c.rtol = c.atol = 2e-3;
  if (t == DType::kBF16) c.rtol = c.atol = 1.6e-2;
  return c;
}

// Broadcast of [4,1,33] against [1,7,1] into [4,7,33], through Mul and Tanh.
inline GraphCase broadcast_case() {
  GraphBuilder b("broadcast");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({4, 1, 33}));
  const ValueId y = b.input("y", DType::kF32, Shape::from_static({1, 7, 1}));
  b.output(b.unary(Op::kTanh, b.mul(x, y)), "z");
  return {"broadcast", b.build(), {case_f32({4, 1, 33}, 0.1f, -1.f), case_f32({1, 7, 1}, 0.3f, -1.f)}};
}

// A transpose read by a pointwise consumer: exp(transpose(x, [2,0,1])) with x: [3,5,17].
inline GraphCase transpose_graph_case() {
  GraphBuilder b("transpose");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({3, 5, 17}));
  b.output(b.unary(Op::kExp, b.transpose(b.add(x, x), {2, 0, 1})), "y");
  return {"transpose_graph", b.build(), {case_f32({3, 5, 17}, 0.05f, -0.5f)}};
}

// Softmax over rows of 129 and of 1500 (warp and block schedules).
inline GraphCase softmax_graph_case(int64_t row) {
  GraphBuilder b("softmax");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({5, row}));
  b.output(b.softmax(x), "p");
  return {"softmax_" + std::to_string(row), b.build(), {case_f32({5, row}, 0.29f, -3.f)}};
}

// LayerNorm after a residual add, rows of `row`.
inline GraphCase layer_norm_graph_case(int64_t row) {
  GraphBuilder b("layernorm");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({7, row}));
  const ValueId r = b.input("r", DType::kF32, Shape::from_static({7, row}));
  const ValueId gamma = b.constant("gamma", case_f32({row}, 0.05f, 0.5f));
  const ValueId beta = b.constant("beta", case_f32({row}, -0.02f, 0.1f));
  b.output(b.layer_norm(b.add(x, r), gamma, beta), "y");
  GraphCase c{"layer_norm_" + std::to_string(row), b.build(),
              {case_f32({7, row}, 0.3f, -3.f), case_f32({7, row}, -0.1f, 1.f)}};
  c.atol = 1e-5;  // normalised values near 0
  return c;
}

// The sum over axis 0 of [300, 17]: a column reduction (strided inner reads).
inline GraphCase column_sum_graph_case() {
  GraphBuilder b("colsum");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({300, 17}));
  b.output(b.reduce(Op::kReduceSum, b.unary(Op::kSigmoid, x), {0}, false), "s");
  return {"column_sum", b.build(), {case_f32({300, 17}, 0.2f, -2.f)}};
}

// The normalizations on bf16 rows as models have them (persistent rows with 128-bit loads for
// rows that are a multiple of 8; one value per load for odd rows).
inline GraphCase bf16_norm_case(Op op, int64_t rows, int64_t row) {
  GraphBuilder b("norm");
  const ValueId x = b.input("x", DType::kBF16, Shape::from_static({rows, row}));
  const ValueId gamma = b.constant("gamma", to_dtype(case_f32({row}, 0.05f, 0.5f), DType::kBF16));
  const ValueId beta = b.constant("beta", to_dtype(case_f32({row}, -0.02f, 0.1f), DType::kBF16));
  ValueId y = kNoValue;
  std::string name;
  if (op == Op::kSoftmax) {
    y = b.softmax(x);
    name = "softmax_bf16_";
  } else if (op == Op::kLayerNormalization) {
    y = b.layer_norm(x, gamma, beta);
    name = "layer_norm_bf16_";
  } else {
    y = b.op1(Op::kRMSNormalization, {x, gamma}, {{"axis", int64_t{-1}}, {"epsilon", 1e-6f}});
    name = "rms_norm_bf16_";
  }
  b.output(y, "y");
  GraphCase c{name + std::to_string(row),
              b.build(),
              {to_dtype(case_f32({rows, row}, 0.13f, -1.5f), DType::kBF16)}};
  c.rtol = c.atol = 1.6e-2;  // a bf16 ulp: the row sums are ordered differently
  return c;
}

inline std::vector<GraphCase> graph_cases() {
  std::vector<GraphCase> cases = {elementwise_chain_case(DType::kF32),
                                  elementwise_chain_case(DType::kF16),
                                  elementwise_chain_case(DType::kBF16),
                                  broadcast_case(),
                                  transpose_graph_case(),
                                  softmax_graph_case(129),
                                  softmax_graph_case(1500),
                                  layer_norm_graph_case(40),
                                  layer_norm_graph_case(1100),
                                  column_sum_graph_case(),
                                  bf16_norm_case(Op::kLayerNormalization, 5, 1024),
                                  bf16_norm_case(Op::kRMSNormalization, 6, 4096),
                                  bf16_norm_case(Op::kSoftmax, 3, 16384),
                                  bf16_norm_case(Op::kRMSNormalization, 4, 1001)};
  // Indices read at run time (gather_cases.h): vector loads of gathered rows, scalar reads.
  for (GatherCase& c : gather_cases())
    cases.push_back({c.name, std::move(c.graph), std::move(c.inputs), c.rtol, c.atol});
  return cases;
}

}  // namespace gf::testing
