// The CPU code generator end to end: fused kernels built by hand, emitted, JIT-compiled, run on
// real buffers and compared with the reference interpreter or hand-computed values.
#include <cmath>

#include "test_cpu_codegen_util.h"

namespace gf {
namespace {

using fusion::ExprId;
using fusion::IndexOp;
using fusion::ReduceKind;
using testing::as_doubles;
using testing::expect_values;
using testing::f32;
using testing::KernelBuilder;
using testing::kNaN;
using testing::run_kernel;

TEST(CpuCodegen, BroadcastAddThenExpThroughIndexArithmetic) {
  KernelBuilder b("add_exp");
  b.k.comment = "Add 'bias_add' -> Exp 'act'";
  const int x = b.buffer("x", DType::kF32, {2, 3}, false);
  const int bias = b.buffer("bias", DType::kF32, {3}, false);
  const int sum = b.buffer("sum", DType::kF32, {2, 3}, true);
  const int y = b.buffer("y", DType::kF32, {2, 3}, true);
  b.k.outer_dims = {2, 3};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId at = b.linear({o0, o1}, {3, 1});
  const ExprId s = b.op(Op::kAdd, DType::kF32, {b.load(x, at), b.load(bias, o1)});
  b.store(sum, at, s);
  b.store(y, at, b.op(Op::kExp, DType::kF32, {s}));

  Tensor tx = f32({2, 3}, {0.5f, -1.f, 2.f, 0.f, 3.25f, -0.125f});
  Tensor tb = f32({3}, {1.f, 0.25f, -2.f});
  Tensor tsum(DType::kF32, {2, 3}), ty(DType::kF32, {2, 3});
  run_kernel(b.k, Graph{}, {&tx, &tb, &tsum, &ty});

  const Tensor ref = testing::run_op1(Op::kAdd, {tx, tb});
  expect_values(tsum, {2, 3}, as_doubles(ref), 0, 0);  // bit-exact
  std::vector<double> expected;
  for (double v : as_doubles(ref)) expected.push_back(std::exp(static_cast<float>(v)));
  expect_values(ty, {2, 3}, expected, 1e-7, 0);
}

TEST(CpuCodegen, TransposeThroughDivModIndexExprs) {
  // y[a][b][c] = x[b][c][a] for x: [2,3,4], y: [4,2,3], over one flat outer loop.
  KernelBuilder b("transpose_201");
  const int x = b.buffer("x", DType::kF32, {2, 3, 4}, false);
  const int y = b.buffer("y", DType::kF32, {4, 2, 3}, true);
  b.k.outer_dims = {24};
  const ExprId flat = b.outer(0);
  const ExprId a = b.index(IndexOp::kDiv, flat, b.idx(6));
  const ExprId bb = b.index(IndexOp::kMod, b.index(IndexOp::kDiv, flat, b.idx(3)), b.idx(2));
  const ExprId c = b.index(IndexOp::kMod, flat, b.idx(3));
  b.store(y, flat, b.load(x, b.linear({bb, c, a}, {12, 4, 1})));

  std::vector<float> xs(24);
  for (int i = 0; i < 24; ++i) xs[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor tx = f32({2, 3, 4}, xs), ty(DType::kF32, {4, 2, 3});
  run_kernel(b.k, Graph{}, {&tx, &ty});
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) expected.push_back(j * 12 + k * 4 + i);
  expect_values(ty, {4, 2, 3}, expected, 0, 0);
}

TEST(CpuCodegen, SelectOnComparisonsAndIndexPredicates) {
  // y[i] = i < 3 ? (x > 0 ? x : 0.5 * x) : -1, and a bool mask output for x > 0.
  KernelBuilder b("select_mask");
  const int x = b.buffer("x", DType::kF32, {5}, false);
  const int y = b.buffer("y", DType::kF32, {5}, true);
  const int mask = b.buffer("mask", DType::kBool, {5}, true);
  b.k.outer_dims = {5};
  const ExprId i = b.outer(0);
  const ExprId v = b.load(x, i);
  const ExprId pos = b.op(Op::kGreater, DType::kBool, {v, b.constant(DType::kF32, 0)});
  const ExprId half = b.op(Op::kMul, DType::kF32, {v, b.constant(DType::kF32, 0.5)});
  const ExprId leaky = b.op(Op::kWhere, DType::kF32, {pos, v, half});
  const ExprId head = b.index(IndexOp::kLess, i, b.idx(3), DType::kBool);
  b.store(y, i, b.select(DType::kF32, head, leaky, b.constant(DType::kF32, -1)));
  b.store(mask, i, pos);

  Tensor tx = f32({5}, {2.f, -4.f, kNaN, 1.f, -1.f});
  Tensor ty(DType::kF32, {5}), tm(DType::kBool, {5});
  run_kernel(b.k, Graph{}, {&tx, &ty, &tm});
  expect_values(ty, {5}, {2, -2, std::nan(""), -1, -1}, 0, 0);
  expect_values(tm, {5}, {1, 0, 0, 1, 0}, 0, 0);
}

TEST(CpuCodegen, CastsRoundLikeTheReference) {
  // From f32 to f16, bf16, i64 and bool (stored), and an f16 round trip kept in f32.
  KernelBuilder b("casts");
  const int x = b.buffer("x", DType::kF32, {6}, false);
  const int h = b.buffer("h", DType::kF16, {6}, true);
  const int bf = b.buffer("bf", DType::kBF16, {6}, true);
  const int ints = b.buffer("i", DType::kI64, {6}, true);
  const int flags = b.buffer("flags", DType::kBool, {6}, true);
  const int back = b.buffer("back", DType::kF32, {6}, true);
  b.k.outer_dims = {6};
  const ExprId i = b.outer(0);
  const ExprId v = b.load(x, i);
  const ExprId vh = b.cast(DType::kF16, v);
  b.store(h, i, vh);
  b.store(bf, i, b.cast(DType::kBF16, v));
  b.store(ints, i, b.cast(DType::kI64, v));
  b.store(flags, i, b.cast(DType::kBool, v));
  b.store(back, i, b.cast(DType::kF32, vh));

  const std::vector<float> xs = {1.00048828125f, -2.75f, 70000.f, kNaN, -1e30f, 0.f};
  Tensor tx = f32({6}, xs), th(DType::kF16, {6}), tbf(DType::kBF16, {6}), ti(DType::kI64, {6}),
         tf(DType::kBool, {6}), tback(DType::kF32, {6});
  run_kernel(b.k, Graph{}, {&tx, &th, &tbf, &ti, &tf, &tback});
  for (size_t k = 0; k < xs.size(); ++k) {
    const int64_t e = static_cast<int64_t>(k);
    EXPECT_EQ(th.data<Half>()[e].bits, Half(xs[k]).bits) << k;
    EXPECT_EQ(tbf.data<BFloat16>()[e].bits, BFloat16(xs[k]).bits) << k;
  }
  // 1 + 2^-11 is halfway between two halves and rounds to even (1.0); 70000 overflows.
  expect_values(tback, {6}, {1.0, -2.75, INFINITY, std::nan(""), -INFINITY, 0}, 0, 0);
  // Truncation toward zero, NaN -> 0, saturation at the int64 range.
  expect_values(ti, {6}, {1, -2, 70000, 0, -9223372036854775808.0, 0}, 0, 0);
  expect_values(tf, {6}, {1, 1, 1, 1, 1, 0}, 0, 0);
}

TEST(CpuCodegen, WideSourcesRoundOnceInto16Bit) {
  // i64 2049 and the f64 just above 1 + 2^-11 lie at or near f16 midpoints: rounding them to
  // f32 first and then to f16 would round twice.
  KernelBuilder b("wide_to_half");
  const int xi = b.buffer("xi", DType::kI64, {2}, false);
  const int xd = b.buffer("xd", DType::kF64, {2}, false);
  const int hi = b.buffer("hi", DType::kF16, {2}, true);
  const int hd = b.buffer("hd", DType::kF16, {2}, true);
  b.k.outer_dims = {2};
  const ExprId i = b.outer(0);
  b.store(hi, i, b.cast(DType::kF16, b.load(xi, i)));
  b.store(hd, i, b.cast(DType::kF16, b.load(xd, i)));
  Tensor txi = Tensor::from_vector<int64_t>({2}, {2049, 2051});
  Tensor txd = Tensor::from_vector<double>({2}, {1.0 + std::ldexp(1.0, -11) + 1e-12, -0.0});
  Tensor thi(DType::kF16, {2}), thd(DType::kF16, {2});
  run_kernel(b.k, Graph{}, {&txi, &txd, &thi, &thd});
  expect_values(thi, {2}, {2048, 2052}, 0, 0);
  expect_values(thd, {2}, {1.0 + std::ldexp(1.0, -10), 0}, 0, 0);
  EXPECT_EQ(thd.data<Half>()[1].bits, 0x8000);  // -0 keeps its sign
}

TEST(CpuCodegen, SoftmaxOverLastDimAsRowReductions) {
  // row0 = max_i x; row1 = sum_i exp(x - row0); y = exp(x - row0) / row1.
  KernelBuilder b("softmax_rows");
  b.k.comment = "Softmax 'attn/softmax' (axis -1)";
  const int x = b.buffer("x", DType::kF32, {3, 5}, false);
  const int y = b.buffer("y", DType::kF32, {3, 5}, true);
  b.k.outer_dims = {3};
  b.k.inner_dims = {5};
  const ExprId at = b.linear({b.outer(0), b.inner(0)}, {5, 1});
  const ExprId v = b.load(x, at);
  b.reduce({ReduceKind::kMax, DType::kF32, v});
  const ExprId e =
      b.op(Op::kExp, DType::kF32, {b.op(Op::kSub, DType::kF32, {v, b.row(0, DType::kF32)})});
  b.reduce({ReduceKind::kSum, DType::kF32, e});
  b.store(y, at, b.op(Op::kDiv, DType::kF32, {e, b.row(1, DType::kF32)}), true);

  Tensor tx = f32({3, 5}, {1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 100, 100, -100, 0, 50});
  Tensor ty(DType::kF32, {3, 5});
  run_kernel(b.k, Graph{}, {&tx, &ty});
  const Tensor ref = testing::run_op1(Op::kSoftmax, {tx}, {{"axis", int64_t{-1}}});
  expect_values(ty, {3, 5}, as_doubles(ref), 1e-6, 1e-7);
}

TEST(CpuCodegen, SumOverMiddleAxisWithInnerDims) {
  // y[a][c] = sum_b x[a][b][c] for x: [2,3,4]; outer (a, c), inner b. Also max with NaN.
  KernelBuilder b("sum_axis1");
  const int x = b.buffer("x", DType::kF32, {2, 3, 4}, false);
  const int y = b.buffer("y", DType::kF32, {2, 4}, true);
  const int m = b.buffer("m", DType::kF32, {2, 4}, true);
  b.k.outer_dims = {2, 4};
  b.k.inner_dims = {3};
  const ExprId o0 = b.outer(0), o1 = b.outer(1);
  const ExprId v = b.load(x, b.linear({o0, b.inner(0), o1}, {12, 4, 1}));
  b.reduce({ReduceKind::kSum, DType::kF32, v});
  b.reduce({ReduceKind::kMax, DType::kF32, v});
  const ExprId out_at = b.linear({o0, o1}, {4, 1});
  b.store(y, out_at, b.row(0, DType::kF32));
  b.store(m, out_at, b.row(1, DType::kF32));

  std::vector<float> xs(24);
  for (int i = 0; i < 24; ++i) xs[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i % 7) - 1;
  xs[13] = kNaN;  // x[1][0][1]
  Tensor tx = f32({2, 3, 4}, xs), ty(DType::kF32, {2, 4}), tm(DType::kF32, {2, 4});
  run_kernel(b.k, Graph{}, {&tx, &ty, &tm});
  const Tensor axes = testing::i64({1}, {1});
  const Attributes keep0{{"keepdims", int64_t{0}}};
  expect_values(ty, {2, 4}, as_doubles(testing::run_op1(Op::kReduceSum, {tx, axes}, keep0)), 0, 0);
  expect_values(tm, {2, 4}, as_doubles(testing::run_op1(Op::kReduceMax, {tx, axes}, keep0)), 0, 0);
}

TEST(CpuCodegen, IntegerReductionsAccumulateInI64) {
  // Sum of i32 rows in i64 (no overflow at 2^31), product and min; an empty inner space
  // (all rows empty) would give the identities, here checked through a 0-length row.
  KernelBuilder b("int_rows");
  const int x = b.buffer("x", DType::kI32, {2, 3}, false);
  const int s = b.buffer("s", DType::kI64, {2}, true);
  const int p = b.buffer("p", DType::kI64, {2}, true);
  const int mn = b.buffer("mn", DType::kI32, {2}, true);
  b.k.outer_dims = {2};
  b.k.inner_dims = {3};
  const ExprId o = b.outer(0);
  const ExprId v = b.load(x, b.linear({o, b.inner(0)}, {3, 1}));
  b.reduce({ReduceKind::kSum, DType::kI64, v});
  b.reduce({ReduceKind::kProd, DType::kI64, v});
  b.reduce({ReduceKind::kMin, DType::kI64, v});
  b.store(s, o, b.row(0, DType::kI64));
  b.store(p, o, b.row(1, DType::kI64));
  b.store(mn, o, b.row(2, DType::kI32));
  Tensor tx = Tensor::from_vector<int32_t>({2, 3}, {2147483647, 2147483647, 2, -3, 5, 7});
  Tensor ts(DType::kI64, {2}), tp(DType::kI64, {2}), tmn(DType::kI32, {2});
  run_kernel(b.k, Graph{}, {&tx, &ts, &tp, &tmn});
  EXPECT_EQ(ts.data<int64_t>()[0], 4294967296);
  EXPECT_EQ(ts.data<int64_t>()[1], 9);
  EXPECT_EQ(tp.data<int64_t>()[1], -105);
  EXPECT_EQ(tmn.data<int32_t>()[0], 2);
  EXPECT_EQ(tmn.data<int32_t>()[1], -3);
}

TEST(CpuCodegen, LargeKernelsRunInParallelAndMatch) {
  // Big enough to cross kMinParallelWork: the source gets the OpenMP pragma.
  constexpr int64_t kN = 2 * codegen::kMinParallelWork;
  KernelBuilder b("relu_big");
  const int x = b.buffer("x", DType::kF32, {kN}, false);
  const int y = b.buffer("y", DType::kF32, {kN}, true);
  b.k.outer_dims = {kN};
  const ExprId i = b.outer(0);
  b.store(y, i, b.op(Op::kRelu, DType::kF32, {b.load(x, i)}));
  EXPECT_NE(codegen::emit_cpu_kernel(b.k, Graph{}).find("#pragma omp parallel for"),
            std::string::npos);
  std::vector<float> xs(kN);
  for (int64_t k = 0; k < kN; ++k) xs[static_cast<size_t>(k)] = static_cast<float>(k % 13) - 6;
  Tensor tx = f32({kN}, xs), ty(DType::kF32, {kN});
  run_kernel(b.k, Graph{}, {&tx, &ty});
  expect_values(ty, {kN}, as_doubles(testing::run_op1(Op::kRelu, {tx})), 0, 0);
}

TEST(CpuCodegen, SmallKernelsStaySerialAndCarryTheirComment) {
  KernelBuilder b("tiny");
  b.k.comment = "Relu 'block1/relu'\nfrom model node block1";
  const int x = b.buffer("x", DType::kF32, {4}, false);
  const int y = b.buffer("y", DType::kF32, {4}, true);
  b.k.outer_dims = {4};
  b.store(y, b.outer(0), b.op(Op::kRelu, DType::kF32, {b.load(x, b.outer(0))}));
  const std::string src = codegen::emit_cpu_kernel(b.k, Graph{});
  EXPECT_EQ(src.find("#pragma omp"), std::string::npos);
  EXPECT_NE(src.find("  // Relu 'block1/relu'\n  // from model node block1\n"), std::string::npos);
  EXPECT_NE(src.find("extern \"C\" void tiny(void* const* buffers)"), std::string::npos);
  EXPECT_EQ(src.find("#include \"graphfuse"), std::string::npos);
}

TEST(CpuCodegen, UnsupportedOpNamesNodeAndOp) {
  Graph g;
  const ValueId a = g.add_input("a", TensorType{DType::kF32, Shape::from_static({2, 2})});
  const NodeId n = g.add_node(Op::kMatMul, "proj/matmul", {a, a}, {"out"});
  KernelBuilder b("bad");
  const int x = b.buffer("x", DType::kF32, {4}, false);
  const int y = b.buffer("y", DType::kF32, {4}, true);
  b.k.outer_dims = {4};
  const ExprId v = b.load(x, b.outer(0));
  b.store(y, b.outer(0), b.op(Op::kMatMul, DType::kF32, {v, v}, n));
  testing::expect_error([&] { codegen::emit_cpu_kernel(b.k, g); }, ErrorCode::kUnsupported,
                        {"proj/matmul", "MatMul"});
}

TEST(CpuCodegen, MalformedKernelsAreRejected) {
  KernelBuilder b("bad_store");
  const int x = b.buffer("x", DType::kF32, {4}, false);
  b.k.outer_dims = {4};
  b.store(x, b.outer(0), b.constant(DType::kF32, 1));  // x is not an output
  testing::expect_error([&] { codegen::emit_cpu_kernel(b.k, Graph{}); }, ErrorCode::kInvalidGraph,
                        {"bad_store", "not an output"});
  KernelBuilder c("bad-name");
  testing::expect_error([&] { codegen::emit_cpu_kernel(c.k, Graph{}); }, ErrorCode::kInvalidGraph,
                        {"bad-name", "C identifier"});
}

}  // namespace
}  // namespace gf
