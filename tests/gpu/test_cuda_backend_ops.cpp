// The backend-equivalence table: every op the builder makes with simple attributes, as a
// one-node graph, plus fusion patterns, run through Session(Device::kCuda) in f32, f16 and bf16
// with odd shapes, against the reference interpreter within each dtype's tolerance. Each case
// runs twice (the second run reuses the compiled program and its arena). Skips without a GPU.
#ifdef GF_HAVE_CUDA

#include <functional>

#include "cuda_backend_util.h"

namespace gf {
namespace {

using Build = std::function<void(GraphBuilder&, DType)>;

struct OpCase {
  std::string name;
  Build build;  // adds inputs, nodes and outputs
  testing::ValueRange range{};
  bool sixteen_bit = true;  // also in f16 and bf16
  double tol_scale = 1;
  bool no_host_steps = false;  // asserted: every node runs on the device
};

ValueId in(GraphBuilder& b, DType t, Shape s, const std::string& name = "x") { return b.input(name, t, std::move(s)); }

Tensor random_constant(DType t, std::vector<int64_t> dims, uint32_t seed) {
  Tensor f(DType::kF32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = dist(rng);
  return testing::to_dtype(f, t);
}

OpCase unary(Op op, testing::ValueRange r = {}, Attributes attrs = {}) {
  return {std::string(op_name(op)),
          [op, attrs](GraphBuilder& b, DType t) { b.output(b.op1(op, {in(b, t, Shape{3, 1, 37})}, attrs)); }, r};
}

OpCase binary(Op op, testing::ValueRange r = {}) {
  // Broadcast [5, 1, 7] against [6, 1]: both sides expand.
  return {std::string(op_name(op)), [op](GraphBuilder& b, DType t) {
            b.output(b.op1(op, {in(b, t, Shape{5, 1, 7}, "a"), in(b, t, Shape{6, 1}, "b")}));
          }, r};
}

OpCase reduce(Op op, std::vector<int64_t> axes, bool keep, testing::ValueRange r = {}) {
  std::string name = std::string(op_name(op)) + "_axes";
  for (int64_t a : axes) name += "_" + std::to_string(a < 0 ? -a : a) + (a < 0 ? "m" : "");
  return {name + (keep ? "_keep" : ""), [=](GraphBuilder& b, DType t) {
            b.output(b.reduce(op, in(b, t, Shape{3, 5, 33}), axes, keep));
          }, r};
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  const testing::ValueRange positive{0.1f, 3}, unit{-0.9f, 0.9f};
  for (Op op : {Op::kAbs, Op::kNeg, Op::kExp, Op::kTanh, Op::kErf, Op::kSigmoid, Op::kRelu, Op::kLeakyRelu,
                Op::kElu, Op::kSelu, Op::kCelu, Op::kThresholdedRelu, Op::kHardSigmoid, Op::kHardSwish,
                Op::kSoftplus, Op::kSoftsign, Op::kMish, Op::kSin, Op::kCos, Op::kAtan, Op::kSinh, Op::kCosh,
                Op::kAsinh, Op::kFloor, Op::kCeil, Op::kRound, Op::kSign, Op::kIdentity, Op::kIsNaN, Op::kIsInf})
    c.push_back(unary(op));
  for (Op op : {Op::kLog, Op::kSqrt, Op::kReciprocal}) c.push_back(unary(op, positive));
  for (Op op : {Op::kAsin, Op::kAcos, Op::kAtanh, Op::kTan}) c.push_back(unary(op, unit));
  c.push_back(unary(Op::kAcosh, {1.1f, 3}));
  c.push_back(unary(Op::kGelu));
  c.back().name = "GeluErf";
  c.push_back(unary(Op::kGelu, {}, {{"approximate", std::string("tanh")}}));
  c.back().name = "GeluTanh";
  for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kMin, Op::kMax, Op::kEqual, Op::kLess, Op::kLessOrEqual,
                Op::kGreater, Op::kGreaterOrEqual})
    c.push_back(binary(op));
  c.push_back(binary(Op::kDiv, positive));
  c.push_back(binary(Op::kPow, positive));
  c.push_back({"Where", [](GraphBuilder& b, DType t) {
                 const ValueId x = in(b, t, Shape{4, 9}, "a"), y = in(b, t, Shape{9}, "b");
                 b.output(b.op1(Op::kWhere, {b.binary(Op::kGreater, x, y), x, y}));
               }});
  c.push_back({"Clip", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kClip, {in(b, t, Shape{7, 3}), b.constant_scalar(-0.5f, t), b.constant_scalar(0.75f, t)}));
               }});
  c.push_back({"Cast", [](GraphBuilder& b, DType t) {
                 b.output(b.cast(in(b, t, Shape{5, 11}), t == DType::kF32 ? DType::kF16 : DType::kF32));
               }});
  c.push_back({"SumOfThree", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kSum, {in(b, t, Shape{3, 5}, "a"), in(b, t, Shape{5}, "b"), in(b, t, Shape{3, 1}, "c")}));
               }});
  for (Op op : {Op::kReduceSum, Op::kReduceMean, Op::kReduceMax, Op::kReduceMin, Op::kReduceL1, Op::kReduceL2,
                Op::kReduceSumSquare, Op::kReduceLogSumExp}) {
    c.push_back(reduce(op, {-1}, true));
    c.push_back(reduce(op, {1}, false));
  }
  c.push_back(reduce(Op::kReduceProd, {-1}, true, {0.9f, 1.1f}));
  c.push_back(reduce(Op::kReduceLogSum, {0, 2}, true, positive));
  for (Op op : {Op::kSoftmax, Op::kLogSoftmax}) {
    c.push_back({std::string(op_name(op)), [op](GraphBuilder& b, DType t) {
                   b.output(b.op1(op, {in(b, t, Shape{2, 3, 1029})}, {{"axis", int64_t{-1}}}));
                 }});
  }
  c.push_back({"ArgMax", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kArgMax, {in(b, t, Shape{6, 13})}, {{"axis", int64_t{1}}}));
               }, {}, false});  // 16-bit rounding makes ties
  c.push_back({"LayerNorm", [](GraphBuilder& b, DType t) {
                 b.output(b.layer_norm(in(b, t, Shape{5, 77}), b.constant("g", random_constant(t, {77}, 1)),
                                       b.constant("beta", random_constant(t, {77}, 2))));
               }});
  c.push_back({"RMSNorm", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kRMSNormalization, {in(b, t, Shape{3, 2, 1500}), b.constant("g", random_constant(t, {1500}, 3))},
                                {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}}));
               }});
  // Layout ops.
  c.push_back({"Reshape", [](GraphBuilder& b, DType t) { b.output(b.reshape(in(b, t, Shape{3, 10}), {5, 6})); }});
  c.push_back({"Transpose", [](GraphBuilder& b, DType t) { b.output(b.transpose(in(b, t, Shape{3, 1, 5, 7}), {2, 0, 3, 1})); }});
  c.push_back({"ReshapeThenTranspose", [](GraphBuilder& b, DType t) {
                 b.output(b.transpose(b.reshape(in(b, t, Shape{2, 5, 12}), {2, 5, 3, 4}), {0, 2, 1, 3}));
               }});
  c.push_back({"Concat", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kConcat, {in(b, t, Shape{2, 3}, "a"), in(b, t, Shape{2, 5}, "b")}, {{"axis", int64_t{1}}}));
               }});
  c.push_back({"Slice", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kSlice, {in(b, t, Shape{9, 7}), b.constant_ints({1, 2}), b.constant_ints({8, 7}),
                                             b.constant_ints({0, 1}), b.constant_ints({3, 2})}));
               }});
  c.push_back({"Expand", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kExpand, {in(b, t, Shape{3, 1}), b.constant_ints({2, 3, 5})}));
               }});
  c.push_back({"Gather", [](GraphBuilder& b, DType t) {
                 const ValueId idx = b.constant("idx", Tensor::from_vector<int64_t>({4}, {2, 0, 2, 1}));
                 b.output(b.op1(Op::kGather, {in(b, t, Shape{3, 5}), idx}, {{"axis", int64_t{0}}}));
               }});
  c.push_back({"GatherRuntimeIndices", [](GraphBuilder& b, DType t) {
                 const ValueId idx = b.input("idx", DType::kI64, Shape{2, 3});
                 b.output(b.op1(Op::kGather, {in(b, t, Shape{4, 3, 5}), idx}, {{"axis", int64_t{1}}}));
               }});
  c.back().no_host_steps = true;
  c.push_back({"GatherElementsInt32", [](GraphBuilder& b, DType t) {
                 const ValueId idx = b.input("idx", DType::kI32, Shape{3, 6});
                 b.output(b.op1(Op::kGatherElements, {in(b, t, Shape{4, 6}), idx}, {{"axis", int64_t{0}}}));
               }});
  c.back().no_host_steps = true;
  c.push_back({"Split", [](GraphBuilder& b, DType t) {
                 auto outs = b.op(Op::kSplit, {in(b, t, Shape{7, 4}), b.constant_ints({3, 4})}, {{"axis", int64_t{0}}}, 2);
                 b.output(outs[0], "first");
                 b.output(outs[1], "second");
               }});
  c.push_back({"Pad", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kPad, {in(b, t, Shape{3, 5}), b.constant_ints({1, 0, 2, 3})}));
               }});
  c.push_back({"Trilu", [](GraphBuilder& b, DType t) { b.output(b.op1(Op::kTrilu, {in(b, t, Shape{2, 5, 6})})); }});
  c.push_back({"Tile", [](GraphBuilder& b, DType t) { b.output(b.op1(Op::kTile, {in(b, t, Shape{2, 3}), b.constant_ints({3, 2})})); }});
  c.push_back({"CumSum", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kCumSum, {in(b, t, Shape{3, 17}), b.constant_ints({1})}));
               }});
  // GEMMs.
  c.push_back({"MatMul2d", [](GraphBuilder& b, DType t) { b.output(b.matmul(in(b, t, Shape{33, 17}, "a"), in(b, t, Shape{17, 9}, "b"))); }});
  c.push_back({"MatMulSharedWeight", [](GraphBuilder& b, DType t) {
                 b.output(b.matmul(in(b, t, Shape{2, 7, 19}), b.constant("w", random_constant(t, {19, 11}, 4))));
               }});
  c.push_back({"MatMulBatched", [](GraphBuilder& b, DType t) { b.output(b.matmul(in(b, t, Shape{3, 5, 7}, "a"), in(b, t, Shape{3, 7, 6}, "b"))); }});
  c.push_back({"MatMulBroadcastBatch", [](GraphBuilder& b, DType t) {
                 b.output(b.matmul(in(b, t, Shape{2, 1, 5, 7}, "a"), in(b, t, Shape{3, 7, 6}, "b")));
               }});
  c.push_back({"MatMulVectorLeft", [](GraphBuilder& b, DType t) { b.output(b.matmul(in(b, t, Shape{7}, "a"), in(b, t, Shape{4, 7, 3}, "b"))); }});
  c.push_back({"MatMulVectorRight", [](GraphBuilder& b, DType t) { b.output(b.matmul(in(b, t, Shape{4, 5, 7}, "a"), in(b, t, Shape{7}, "b"))); }});
  c.push_back({"GemmBias", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kGemm, {in(b, t, Shape{6, 9}), b.constant("w", random_constant(t, {5, 9}, 5)),
                                            b.constant("c", random_constant(t, {5}, 6))}, {{"transB", int64_t{1}}}));
               }});
  c.push_back({"GemmAlphaBetaC", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kGemm, {in(b, t, Shape{9, 6}), b.constant("w", random_constant(t, {9, 5}, 7)),
                                            b.constant("c", random_constant(t, {6, 1}, 8))},
                                {{"transA", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
               }});
  c.push_back({"Conv", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kConv, {in(b, t, Shape{1, 3, 9, 7}), b.constant("w", random_constant(t, {4, 3, 3, 3}, 9)),
                                            b.constant("bias", random_constant(t, {4}, 10))},
                                {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
               }});
  c.back().no_host_steps = true;  // in 16 bits, as a channels-last cuDNN call on 3 channels
  c.push_back({"MaxPool", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kMaxPool, {in(b, t, Shape{1, 2, 7, 9})}, {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                                                              {"strides", std::vector<int64_t>{2, 2}}}));
               }});
  c.push_back({"GlobalAveragePool", [](GraphBuilder& b, DType t) {
                 b.output(b.op1(Op::kGlobalAveragePool, {in(b, t, Shape{2, 3, 5, 7})}));
               }});
  c.push_back({"CausalAttention", [](GraphBuilder& b, DType t) {
                 b.output(b.attention(in(b, t, Shape{1, 2, 7, 8}, "q"), in(b, t, Shape{1, 2, 7, 8}, "k"),
                                      in(b, t, Shape{1, 2, 7, 8}, "v"), kNoValue, true));
               }});
  // Fusion patterns.
  // A ResNet bottleneck's tail: in 16 bits the Convs run channels last, with the bias, Relu and
  // residual Add in their epilogue kernels, and the pool reads the chain transposed back.
  c.push_back({"ResidualConvBlock", [](GraphBuilder& b, DType t) {
                 const ValueId x = in(b, t, Shape{2, 16, 9, 7});
                 ValueId v = b.op1(Op::kConv,
                                   {x, b.constant("w1", random_constant(t, {8, 16, 3, 3}, 31)),
                                    b.constant("b1", random_constant(t, {8}, 32))},
                                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
                 v = b.unary(Op::kRelu, v);
                 v = b.op1(Op::kConv, {v, b.constant("w2", random_constant(t, {16, 8, 1, 1}, 33))});
                 v = b.unary(Op::kRelu, b.add(v, x));
                 b.output(v, "block");
                 b.output(b.op1(Op::kMaxPool, {v},
                                {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                 {"strides", std::vector<int64_t>{2, 2}}}),
                          "pool");
               }});
  c.back().no_host_steps = true;
  c.push_back({"MatMulBiasGelu", [](GraphBuilder& b, DType t) {
                 const ValueId h = b.add(b.matmul(in(b, t, Shape{2, 5, 24}), b.constant("w", random_constant(t, {24, 40}, 11))),
                                         b.constant("bias", random_constant(t, {40}, 12)));
                 b.output(b.gelu(h, true));
               }});
  c.push_back({"ResidualAddLayerNorm", [](GraphBuilder& b, DType t) {
                 const ValueId x = in(b, t, Shape{3, 5, 48}, "x"), r = in(b, t, Shape{3, 5, 48}, "r");
                 const ValueId sum = b.add(x, r);
                 b.output(sum, "residual");
                 b.output(b.layer_norm(sum, b.constant("g", random_constant(t, {48}, 13)), b.constant("beta", random_constant(t, {48}, 14))));
               }});
  c.push_back({"SoftmaxOfScaledScores", [](GraphBuilder& b, DType t) {
                 const ValueId s = b.mul(in(b, t, Shape{2, 3, 9, 9}), b.constant_scalar(0.125f, t));
                 b.output(b.softmax(b.add(s, in(b, t, Shape{9, 9}, "mask"))));
               }});
  c.push_back({"BroadcastChain", [](GraphBuilder& b, DType t) {
                 const ValueId x = in(b, t, Shape{4, 1, 6}, "x");
                 const ValueId y = b.mul(b.add(x, in(b, t, Shape{3, 1}, "y")), in(b, t, Shape{1, 6}, "z"));
                 b.output(b.unary(Op::kTanh, b.binary(Op::kSub, y, b.constant_scalar(0.5f, t))));
               }});
  // More work than the largest grid covers (16 blocks per SM on 132 SMs: 2112 blocks), so the
  // grid-stride loops come round again: the chain's blocks take 3-4 trips in f32 and 1-2 in 16
  // bits, and 390 (softmax, 8 rows a block) and 389 (LayerNorm) of the row blocks a second trip.
  c.push_back({"ChainLongerThanTheGrid", [](GraphBuilder& b, DType t) {
                 const ValueId x =
                     b.add(b.mul(in(b, t, Shape{2048, 4100}), b.constant_scalar(0.5f, t)),
                           b.constant_scalar(1.0f, t));
                 b.output(b.binary(Op::kSub, b.unary(Op::kRelu, x), b.constant_scalar(0.25f, t)));
               }});
  c.push_back({"SoftmaxRowsBeyondTheGrid", [](GraphBuilder& b, DType t) {
                 b.output(b.softmax(in(b, t, Shape{20011, 33})));
               }});
  c.push_back({"LayerNormRowsBeyondTheGrid", [](GraphBuilder& b, DType t) {
                 b.output(b.layer_norm(in(b, t, Shape{2501, 1100}),
                                       b.constant("g", random_constant(t, {1100}, 17)),
                                       b.constant("beta", random_constant(t, {1100}, 18))));
               }});
  c.push_back({"TokenAndPositionEmbedding", [](GraphBuilder& b, DType t) {
                 const ValueId ids = b.input("ids", DType::kI64, Shape{2, 9});
                 const ValueId tokens = b.op1(Op::kGather, {b.constant("wte", random_constant(t, {7, 40}, 15)), ids});
                 b.output(b.add(tokens, b.constant("wpe", random_constant(t, {9, 40}, 16))));
               }});
  c.back().no_host_steps = true;
  c.push_back({"TransposeIntoMatMul", [](GraphBuilder& b, DType t) {
                 const ValueId k = b.transpose(in(b, t, Shape{2, 3, 7, 8}, "k"), {0, 1, 3, 2});
                 b.output(b.matmul(in(b, t, Shape{2, 3, 5, 8}, "q"), k));
               }});
  return c;
}

struct Param {
  size_t index;
  DType dtype;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.index << " " << dtype_name(p.dtype); }

std::vector<Param> params() {
  std::vector<Param> p;
  const std::vector<OpCase> all = cases();
  for (size_t i = 0; i < all.size(); ++i) {
    p.push_back({i, DType::kF32});
    if (all[i].sixteen_bit) {
      p.push_back({i, DType::kF16});
      p.push_back({i, DType::kBF16});
    }
  }
  return p;
}

class CudaBackendOps : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) GTEST_SKIP() << "no CUDA device: " << probe.reason;
  }
};

TEST_P(CudaBackendOps, MatchesTheReferenceInterpreter) {
  const OpCase c = cases().at(GetParam().index);
  const DType t = GetParam().dtype;
  GraphBuilder b(c.name);
  c.build(b, t);
  Graph g = b.build();
  const std::vector<Tensor> inputs = testing::random_inputs(g, c.range, 17);
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  Session session(std::move(g), SessionOptions{Device::kCuda});
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const std::vector<Tensor> got = session.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      testing::expect_matches(got[i], want[i], c.tol_scale);
    }
  }
  const SessionStats st = session.stats();
  RecordProperty("fused_kernels", st.fused_kernels);
  RecordProperty("library_calls", st.library_calls);
  RecordProperty("host_steps", st.reference_steps);
  if (c.no_host_steps) {
    EXPECT_EQ(st.reference_steps, 0) << (st.fallback_reasons.empty() ? "" : st.fallback_reasons[0]);
  }
  EXPECT_EQ(st.programs_compiled, 1);
  EXPECT_EQ(st.program_cache_hits, 1);
}

INSTANTIATE_TEST_SUITE_P(Table, CudaBackendOps, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return cases().at(info.param.index).name + "_" + std::string(dtype_name(info.param.dtype));
                         });

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
