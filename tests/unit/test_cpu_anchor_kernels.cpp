// The fused CPU backend's anchor kernels (src/runtime/cpu/*_kernel.cpp): Conv, MatMul, Gemm,
// Attention and MaxPool compiled into a FusedProgram must give the reference interpreter's results,
// over the geometries each kernel special-cases (1x1 direct GEMM, im2col with padding, strides,
// dilations, groups, SAME padding; the packed GEMM's thread splits and remainders; batch folding
// and broadcast batches; Gemm's C broadcast; packed and 4-D attention with masks, causal, softcap
// and grouped heads; MaxPool windows).
#include <cstring>
#include <limits>
#include <random>

#include "codegen/cpu/jit_compiler.h"
#include "runtime/cpu/fused_program.h"
#include "runtime/cpu/packed_gemm.h"
#include "runtime/cpu/reference/interpreter.h"
#include "test_util.h"

namespace gf {
namespace {

Tensor random_f32(std::mt19937& rng, std::vector<int64_t> dims) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  return Shape::from_static(dims).to_string();
}

// Runs `g` (static shapes) fused and on the reference kernels; returns how many anchor steps
// the program used.
int expect_matches_reference(Graph g, const std::vector<Tensor>& inputs, const std::string& what,
                             double tol = 2e-5) {
  infer_shapes(g);
  const std::vector<Tensor> want = ref::run_graph(g, inputs);
  static codegen::JitCompiler jit;
  const cpu::FusedProgram program(g, jit);
  const std::vector<Tensor> got = program.run(inputs);
  EXPECT_EQ(got.size(), want.size()) << what;
  for (size_t o = 0; o < got.size() && o < want.size(); ++o) {
    EXPECT_EQ(got[o].dims(), want[o].dims()) << what;
    if (got[o].dims() != want[o].dims()) continue;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double a = got[o].element_as_double(i), e = want[o].element_as_double(i);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(a)) << what << " element " << i;
      } else {
        const bool close = std::fabs(a - e) <= tol * (1 + std::fabs(e));
        EXPECT_TRUE(close) << what << " element " << i << ": fused " << a << ", reference " << e;
        if (!close) break;  // one element is enough to read
      }
    }
  }
  // Twice more: the second run reuses a pooled arena, which must not leak state between runs.
  const std::vector<Tensor> again = program.run(inputs);
  for (size_t o = 0; o < got.size() && o < again.size(); ++o)
    EXPECT_EQ(std::memcmp(got[o].raw(), again[o].raw(), got[o].nbytes()), 0) << what;
  return program.stats().anchor_steps;
}

struct ConvCase {
  std::vector<int64_t> x, w;
  Attributes attrs;
  bool bias;
  bool anchored;  // false: a case the anchor kernel leaves to the reference (3-D)
};

TEST(CpuAnchorKernels, ConvMatchesTheReferenceOverItsGeometries) {
  using V = std::vector<int64_t>;
  const ConvCase cases[] = {
      {{1, 8, 5, 6}, {4, 8, 1, 1}, {}, true, true},                         // direct GEMM
      {{2, 8, 5, 6}, {4, 8, 1, 1}, {}, false, true},                        // batch 2
      {{1, 3, 7, 7}, {5, 3, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true, true},  // im2col
      {{1, 4, 9, 8}, {6, 4, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 0, 2, 1}}}, true, true},
      {{1, 4, 9, 9}, {4, 4, 3, 3}, {{"dilations", V{2, 3}}, {"pads", V{2, 3, 2, 3}}}, false, true},
      {{1, 6, 8, 8}, {6, 1, 3, 3}, {{"group", int64_t{6}}, {"pads", V{1, 1, 1, 1}}}, true, true},
      {{2, 4, 6, 5}, {6, 2, 2, 3}, {{"group", int64_t{2}}, {"strides", V{1, 2}}}, true, true},
      {{1, 3, 7, 6},
       {2, 3, 3, 2},
       {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}},
       false,
       true},
      {{1, 3, 7, 6}, {2, 3, 4, 4}, {{"auto_pad", std::string("SAME_LOWER")}}, true, true},
      {{1, 8, 6, 6}, {4, 8, 1, 1}, {{"strides", V{2, 2}}}, false, true},    // 1x1 stride 2
      {{1, 2, 3, 3}, {2, 2, 3, 3}, {{"pads", V{4, 4, 4, 4}}}, true, true},  // all-padding rows
      {{2, 3, 11}, {4, 3, 3}, {{"pads", V{1, 2}}, {"strides", V{2}}}, true, true},  // 1-D
      {{1, 2, 4, 4, 4}, {3, 2, 2, 2, 2}, {}, true, false},  // 3-D: reference
      // Large enough for threads: split over positions (400 of them), filters not a multiple
      // of the packed panel's 12 rows, column tiles ending part way (400 = 12 * 32 + 16).
      {{1, 64, 20, 20}, {40, 64, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true, true},
      // Few positions (49), so split over filters; batch 2.
      {{2, 96, 7, 7}, {100, 96, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true, true},
      {{1, 256, 7, 7}, {130, 256, 1, 1}, {}, false, true},  // direct, split over filters
      {{1, 32, 9, 9},
       {64, 8, 3, 3},
       {{"group", int64_t{4}},
        {"dilations", V{2, 2}},
        {"pads", V{2, 2, 2, 2}},
        {"strides", V{2, 2}}},
       true,
       true},
      {{3, 48, 50}, {36, 48, 5}, {{"pads", V{2, 2}}}, true, true},  // 1-D, batch 3
      // Enough filters for the packed GEMM, whose windows are gathered without im2col: uneven
      // pads with strides, SAME padding, a window wholly in the padding.
      {{1, 4, 9, 8}, {16, 4, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 0, 2, 1}}}, true, true},
      {{1, 3, 7, 6},
       {9, 3, 4, 4},
       {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}},
       false,
       true},
      {{2, 2, 3, 3}, {8, 2, 3, 3}, {{"pads", V{4, 4, 4, 4}}}, true, true},
      {{1, 0, 5, 5}, {8, 0, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, true, true},  // no channels: bias
  };
  std::mt19937 rng(11);
  for (const ConvCase& c : cases) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF32, Shape::from_static(c.x));
    std::vector<ValueId> in = {x, b.constant("w", random_f32(rng, c.w))};
    if (c.bias) in.push_back(b.constant("bias", random_f32(rng, {c.w[0]})));
    b.output(b.op1(Op::kRelu, {b.op1(Op::kConv, in, c.attrs)}), "y");
    const std::string what = "conv x" + dims_text(c.x) + " w" + dims_text(c.w);
    EXPECT_EQ(expect_matches_reference(b.build(), {random_f32(rng, c.x)}, what), c.anchored ? 1 : 0)
        << what;
  }
}

TEST(CpuAnchorKernels, ConvTakesAResidualAddAndReluAsItStores) {
  // ResNet's block ends: conv + bias, + the residual, Relu; also the Add alone, the residual on
  // either side, and a conv whose output is read elsewhere (its epilogue stays a kernel).
  using V = std::vector<int64_t>;
  std::mt19937 rng(21);
  struct Case {
    V x, w;
    bool relu, residual_first, conv_is_output;
  };
  const Case cases[] = {
      {{1, 16, 9, 9}, {24, 16, 3, 3}, true, false, false},
      {{2, 32, 7, 7}, {40, 32, 1, 1}, true, true, false},   // direct, batch 2
      {{1, 64, 20, 20}, {40, 64, 3, 3}, true, false, false},  // threads over positions
      {{1, 8, 6, 6}, {16, 8, 3, 3}, false, false, false},   // Add only
      {{1, 8, 6, 6}, {16, 8, 3, 3}, true, false, true},     // the conv's output is an output
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF32, Shape::from_static(c.x));
    const ValueId w = b.constant("w", random_f32(rng, c.w));
    const ValueId bias = b.constant("bias", random_f32(rng, {c.w[0]}));
    const ValueId conv = b.op1(Op::kConv, {x, w, bias}, {{"pads", V{(c.w[2] - 1) / 2, (c.w[3] - 1) / 2,
                                                                     (c.w[2] - 1) / 2, (c.w[3] - 1) / 2}}});
    const std::vector<int64_t> yd = b.type(conv).shape.static_dims();
    const ValueId r = b.input("r", DType::kF32, Shape::from_static(yd));
    ValueId y = c.residual_first ? b.add(r, conv) : b.add(conv, r);
    if (c.relu) y = b.op1(Op::kRelu, {y});
    b.output(y, "y");
    if (c.conv_is_output) b.output(conv, "conv");
    Graph g = b.build();
    const std::string what = "conv x" + dims_text(c.x) + " w" + dims_text(c.w) + " + residual" +
                             (c.relu ? " + relu" : "") + (c.conv_is_output ? ", conv read" : "");
    Tensor residual = random_f32(rng, yd);
    residual.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();  // NaN goes through
    expect_matches_reference(g, {random_f32(rng, c.x), residual}, what);
    infer_shapes(g);
    static codegen::JitCompiler jit;
    const cpu::FusedProgram program(g, jit);
    // The epilogue is the conv kernel's where the packed GEMM runs it (AVX-512), else a kernel.
    const int epilogue_kernels = cpu::PackedWeights::available() && !c.conv_is_output ? 0 : 1;
    EXPECT_EQ(program.stats().fused_kernels, epilogue_kernels) << what;
  }
}

TEST(CpuAnchorKernels, ConvWithWeightsAsAnInputMatchesTheReference) {
  // Weights that are not constants cannot be packed at build time: the kernel runs sgemm on them.
  using V = std::vector<int64_t>;
  const std::pair<V, V> cases[] = {{{1, 64, 20, 20}, {40, 64, 3, 3}},
                                   {{2, 96, 7, 7}, {100, 96, 3, 3}}};
  std::mt19937 rng(16);
  for (const auto& [xd, wd] : cases) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF32, Shape::from_static(xd));
    const ValueId w = b.input("w", DType::kF32, Shape::from_static(wd));
    const ValueId bias = b.constant("bias", random_f32(rng, {wd[0]}));
    b.output(b.op1(Op::kConv, {x, w, bias}, {{"pads", V{1, 1, 1, 1}}}), "y");
    const std::string what = "conv x" + dims_text(xd) + " w" + dims_text(wd) + " (input)";
    EXPECT_EQ(expect_matches_reference(b.build(), {random_f32(rng, xd), random_f32(rng, wd)}, what),
              1)
        << what;
  }
}

TEST(CpuAnchorKernels, MaxPoolMatchesTheReferenceOverItsGeometries) {
  using V = std::vector<int64_t>;
  const std::pair<V, Attributes> cases[] = {
      {{1, 3, 9, 9}, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}},
      {{2, 2, 7, 6}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}}}},
      {{1, 2, 8, 9}, {{"kernel_shape", V{3, 2}}, {"dilations", V{2, 3}}, {"pads", V{2, 0, 1, 2}}}},
      {{1, 2, 7, 5},
       {{"kernel_shape", V{3, 3}}, {"strides", V{2, 1}}, {"auto_pad", std::string("SAME_UPPER")}}},
      {{2, 3, 10}, {{"kernel_shape", V{3}}, {"strides", V{3}}, {"pads", V{1, 1}}}},
  };
  std::mt19937 rng(15);
  for (const auto& [xd, attrs] : cases) {
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF32, Shape::from_static(xd));
    b.output(b.op1(Op::kMaxPool, {x}, attrs), "y");
    Tensor data = random_f32(rng, xd);
    data.data<float>()[4] = std::nanf("");  // propagates through its windows
    const std::string what = "max pool x" + dims_text(xd);
    EXPECT_EQ(expect_matches_reference(b.build(), {data}, what), 1) << what;
  }
}

TEST(CpuAnchorKernels, MatMulFoldsAndBroadcastsBatches) {
  using V = std::vector<int64_t>;
  const std::pair<V, V> cases[] = {
      {{2, 3, 4, 5}, {5, 6}},     // one GEMM over 24 rows
      {{2, 1, 4, 5}, {3, 5, 6}},  // broadcast on both sides
      {{4, 5}, {3, 5, 2}},        // A shared by every batch of B
      {{5}, {5, 3}},              // 1-D left
      {{3, 5}, {5}},              // 1-D right
      {{2, 3, 5}, {5}},
      {{5}, {5}},
      {{2, 0, 5}, {5, 3}},  // empty
      {{2, 3, 0}, {0, 4}},  // k = 0: zeros
  };
  std::mt19937 rng(12);
  for (const auto& [ad, bd] : cases) {
    GraphBuilder b;
    const ValueId a = b.input("a", DType::kF32, Shape::from_static(ad));
    const ValueId w = b.input("b", DType::kF32, Shape::from_static(bd));
    b.output(b.matmul(a, w), "y");
    const std::string what = "matmul " + dims_text(ad) + " x " + dims_text(bd);
    EXPECT_EQ(expect_matches_reference(b.build(), {random_f32(rng, ad), random_f32(rng, bd)}, what),
              1)
        << what;
  }
}

TEST(CpuAnchorKernels, GemmTransposesScalesAndBroadcastsC) {
  using V = std::vector<int64_t>;
  struct Case {
    bool ta, tb;
    float alpha, beta;
    V c;  // empty: no C
    bool c_nan = false;
  };
  const Case cases[] = {{false, false, 1, 1, {}},     {true, false, 0.5f, 2, {6}},
                        {false, true, 1, -1, {4, 1}}, {true, true, 2, 0.25f, {4, 6}},
                        {false, false, 1, 1, {1}},    {false, true, 1, 0, {4, 6}, true}};
  std::mt19937 rng(13);
  for (const Case& c : cases) {
    GraphBuilder b;
    const V ad = c.ta ? V{5, 4} : V{4, 5}, bd = c.tb ? V{6, 5} : V{5, 6};
    std::vector<ValueId> in = {b.input("a", DType::kF32, Shape::from_static(ad)),
                               b.constant("b", random_f32(rng, bd))};
    if (!c.c.empty()) {
      Tensor ct = random_f32(rng, c.c);
      if (c.c_nan) ct.data<float>()[3] = std::nanf("");  // reaches Y although beta is 0
      in.push_back(b.constant("c", ct));
    }
    b.output(b.op1(Op::kGemm, in,
                   {{"transA", int64_t{c.ta}},
                    {"transB", int64_t{c.tb}},
                    {"alpha", c.alpha},
                    {"beta", c.beta}}),
             "y");
    const std::string what =
        "gemm ta " + std::to_string(c.ta) + " tb " + std::to_string(c.tb) + " c" + dims_text(c.c);
    EXPECT_EQ(expect_matches_reference(b.build(), {random_f32(rng, ad)}, what), 1) << what;
  }
}

TEST(CpuAnchorKernels, AttentionMatchesTheReference) {
  using V = std::vector<int64_t>;
  struct Case {
    V q, k, v;
    Attributes attrs;
    V mask;  // empty: none
    DType mask_dtype = DType::kF32;
  };
  const Case cases[] = {
      {{2, 3, 4, 8}, {2, 3, 5, 8}, {2, 3, 5, 6}, {}, {}},
      {{1, 4, 5, 8},
       {1, 2, 5, 8},
       {1, 2, 5, 8},
       {{"is_causal", int64_t{1}}},
       {}},  // grouped, causal
      {{1, 2, 3, 4}, {1, 2, 6, 4}, {1, 2, 6, 4}, {{"scale", 0.3f}, {"softcap", 2.0f}}, {3, 6}},
      {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 4}, {}, {2, 1, 1, 4}, DType::kBool},  // short mask
      {{2, 5, 12},
       {2, 7, 12},
       {2, 7, 12},
       {{"q_num_heads", int64_t{3}}, {"kv_num_heads", int64_t{3}}},
       {5, 7}},
      {{1, 4, 16},
       {1, 4, 8},
       {1, 4, 8},
       {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}, {"is_causal", int64_t{1}}},
       {}},
  };
  std::mt19937 rng(14);
  for (const Case& c : cases) {
    GraphBuilder b;
    std::vector<ValueId> in = {b.input("q", DType::kF32, Shape::from_static(c.q)),
                               b.input("k", DType::kF32, Shape::from_static(c.k)),
                               b.input("v", DType::kF32, Shape::from_static(c.v))};
    std::vector<Tensor> data = {random_f32(rng, c.q), random_f32(rng, c.k), random_f32(rng, c.v)};
    if (!c.mask.empty()) {
      Tensor m = random_f32(rng, c.mask);
      if (c.mask_dtype == DType::kBool) {
        Tensor bm(DType::kBool, c.mask);
        // Batch 0 masks every key (its output rows are zero); batch 1 masks some.
        for (int64_t i = 0; i < bm.numel(); ++i)
          bm.data<bool>()[i] = i >= c.mask.back() && m.data<float>()[i] > -0.3f;
        m = bm;
      } else {
        m.data<float>()[1] = -std::numeric_limits<float>::infinity();
      }
      in.push_back(b.input("mask", c.mask_dtype, Shape::from_static(c.mask)));
      data.push_back(m);
    }
    b.output(b.op1(Op::kAttention, in, c.attrs), "y");
    const std::string what = "attention q" + dims_text(c.q) + " k" + dims_text(c.k);
    EXPECT_EQ(expect_matches_reference(b.build(), data, what), 1) << what;
  }
}

}  // namespace
}  // namespace gf
