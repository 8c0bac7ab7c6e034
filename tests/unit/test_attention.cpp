// Attention (ONNX opset 23 without KV cache): shape inference, validation and the reference
// kernel. Unless a comment says otherwise, expected values come from onnx.reference
// (Attention, opset 23) on testing::pattern data.
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

Tensor bools(std::vector<int64_t> dims, const std::vector<bool>& v) {
  Tensor t(DType::kBool, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

// Q = pattern([1,2,3,4], 1), K = pattern([1,2,5,4], 2), V = pattern([1,2,5,3], 3): two heads,
// three queries, five keys.
struct Mha {
  Tensor q = pattern({1, 2, 3, 4}, 1);
  Tensor k = pattern({1, 2, 5, 4}, 2);
  Tensor v = pattern({1, 2, 5, 3}, 3);
};

TEST(Attention, TwoKeysByHand) {
  // scale 1, D 1: scores [1, 0] -> weights [e, 1] / (e + 1); V = [1, 0] -> e / (e + 1).
  Tensor y = run_op1(Op::kAttention,
                     {f32({1, 1, 1, 1}, {1}), f32({1, 1, 2, 1}, {1, 0}), f32({1, 1, 2, 1}, {1, 0})},
                     Attributes{{"scale", 1.0f}});
  expect_values(y, {1, 1, 1, 1}, {std::exp(1.0) / (std::exp(1.0) + 1.0)});
}

TEST(Attention, MultiHeadDefaultScale) {
  Mha m;
  expect_values(run_op1(Op::kAttention, {m.q, m.k, m.v}), {1, 2, 3, 3},
                {-0.575987935, 0.354575604, -0.508079827, 0.133230314, 0.0549409799, -0.211807191,
                 0.457853138, -0.00907296315, 0.0600046925, -0.49190706, 0.196047321, -0.24190703,
                 -0.446267009, 0.334710538, -0.196267009, 0.520651519, -0.0640536696, 0.77065146},
                1e-5, 1e-6);
}

TEST(Attention, CausalIsTopLeftAlignedWithoutACache) {
  // S = 3 < L = 5: query i sees keys 0..i (ONNX's offset is 0 with no past_key), so query 0
  // returns V's row 0 exactly.
  Mha m;
  Attributes causal{{"is_causal", int64_t{1}}};
  expect_values(run_op1(Op::kAttention, {m.q, m.k, m.v}, causal), {1, 2, 3, 3},
                {0.75, -0.75, 1, 0.144524902, 0.218760148, 0.394524932, 0.516242027, 0.0505227223,
                 0.0553920567, 1, -0.5, 1.25, 0.185806423, 0.802709818, 0.435806453, 0.558531582,
                 -0.0501448624, 0.808531582},
                1e-5, 1e-6);
  // S = 4 > L = 2: queries 1.. see both keys.
  Tensor q = pattern({1, 2, 4, 4}, 1), k = pattern({1, 2, 2, 4}, 2), v = pattern({1, 2, 2, 3}, 3);
  expect_values(run_op1(Op::kAttention, {q, k, v}, causal), {1, 2, 4, 3}, {0.75,
                                                                           -0.75,
                                                                           1,
                                                                           0.144524902,
                                                                           0.218760148,
                                                                           0.394524932,
                                                                           0.240833193,
                                                                           0.0646668822,
                                                                           0.490833223,
                                                                           0.085988313,
                                                                           0.312418699,
                                                                           0.335988313,
                                                                           1.5,
                                                                           0,
                                                                           -1.5,
                                                                           0.472263575,
                                                                           -1.02773643,
                                                                           0.144378245,
                                                                           0.535195649,
                                                                           -0.964804351,
                                                                           0.0436869562,
                                                                           0.609709799,
                                                                           -0.890290201,
                                                                           -0.075535655},
                1e-5, 1e-6);
}

// Q = pattern([2,4,2,4], 4), K = pattern([2,2,3,4], 5), V = pattern([2,2,3,2], 6): four query
// heads over two K/V heads.
const std::vector<double> kGrouped = {
    -0.0217392147, -0.368984699,  -0.123824276, 0.125029266,  -0.102876559, -0.205994904,
    -0.0104098916, -0.358707666,  0.645831585,  -0.854168415, 0.671713769,  -0.828286231,
    0.695243657,   -0.804756284,  0.852274299,  -0.647725582, 1.11731052,   -0.0913883299,
    1.16649973,    -0.0660442859, -0.328920931, 0.0795948878, -0.305110365, 0.0904691294,
    -0.93892163,   0.811078429,   -0.989590168, 0.760409951,  -1.04123843,  0.708761573,
    -0.958761573,  0.791238427};

TEST(Attention, GroupedQueryHeadsEveryDtype) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    SCOPED_TRACE(testing::dtype_label(t));
    Tensor y = run_op1(Op::kAttention, {pattern({2, 4, 2, 4}, 4, t), pattern({2, 2, 3, 4}, 5, t),
                                        pattern({2, 2, 3, 2}, 6, t)});
    EXPECT_EQ(y.dtype(), t);
    expect_values(y, {2, 4, 2, 2}, kGrouped, testing::tolerance(t), t == DType::kF32 ? 1e-6 : 1e-2);
  }
}

TEST(Attention, ScaleAndSoftcap) {
  Attributes attrs{{"scale", 0.7f}, {"softcap", 0.9f}};
  expect_values(
      run_op1(Op::kAttention,
              {pattern({2, 4, 2, 4}, 4), pattern({2, 2, 3, 4}, 5), pattern({2, 2, 3, 2}, 6)},
              attrs),
      {2, 4, 2, 2},
      {-0.0266054869, -0.363323241,  -0.0943554267, -0.0942109004, -0.0953384787, -0.102591947,
       -0.0139971524, -0.337845415,  0.668600559,   -0.831399441,  0.675458491,   -0.824541509,
       0.681478441,   -0.818521619,  0.811764121,   -0.688235939,  0.918204188,   -0.0654179454,
       0.949864447,   -0.0681365356, 0.00516787171, 0.0510190949,  0.051785022,   0.0471126065,
       -0.991771877,  0.758228064,   -0.987441421,  0.762558699,   -1.00379491,   0.746205091,
       -0.994498014,  0.755501986},
      1e-5, 1e-6);
  // scale 0 (explicit): every score is 0, so each query averages V.
  Mha m;
  Tensor y = run_op1(Op::kAttention, {m.q, m.k, m.v}, Attributes{{"scale", 0.0f}});
  expect_values(y, {1, 2, 3, 3},
                {0.2, 0, -0.2, 0.2, 0, -0.2, 0.2, 0, -0.2, -0.2, 0.25, 0.05, -0.2, 0.25, 0.05, -0.2,
                 0.25, 0.05},
                1e-5, 1e-6);
}

TEST(Attention, MultiQueryCausal) {
  // One K/V head shared by four query heads: Q = pattern([1,4,2,4], 7), K = pattern([1,1,3,4], 8),
  // V = pattern([1,1,3,2], 9).
  Tensor y = run_op1(Op::kAttention,
                     {pattern({1, 4, 2, 4}, 7), pattern({1, 1, 3, 4}, 8), pattern({1, 1, 3, 2}, 9)},
                     Attributes{{"is_causal", int64_t{1}}});
  expect_values(y, {1, 4, 2, 2},
                {-1.25, 0.5, -1.2409451, 0.509055018, -1.25, 0.5, -1.00802517, 0.741974831, -1.25,
                 0.5, -1.10372472, 0.646275282, -1.25, 0.5, -1.23453093, 0.515469015},
                1e-5, 1e-6);
}

TEST(Attention, BoolMaskWithAFullyMaskedRowGivesZeros) {
  Mha m;
  Tensor mask = bools({3, 5}, {true, false, true, true, false,     // query 0
                               false, false, false, false, false,  // query 1: nothing to attend
                               true, true, true, false, true});
  expect_values(
      run_op1(Op::kAttention, {m.q, m.k, m.v, mask}), {1, 2, 3, 3},
      {0.595160365, -0.904839575, 0.122958422, 0, 0, 0, 0.471307456, 0.0712520927, 0.0315238573,
       -0.371881872, -0.417941421, -0.121881917, 0, 0, 0, 0.521612227, -0.0205157008, 0.771612227},
      1e-5, 1e-6);
  // Combined with the causal mask: query 0 keeps key 0 only.
  expect_values(run_op1(Op::kAttention, {m.q, m.k, m.v, mask}, {{"is_causal", int64_t{1}}}),
                {1, 2, 3, 3},
                {0.75, -0.75, 1, 0, 0, 0, 0.516242027, 0.0505227223, 0.0553920567, 1, -0.5, 1.25, 0,
                 0, 0, 0.558531582, -0.0501448624, 0.808531582},
                1e-5, 1e-6);
}

TEST(Attention, FloatMaskIsAdded) {
  Mha m;
  expect_values(
      run_op1(Op::kAttention, {m.q, m.k, m.v, pattern({1, 1, 3, 5}, 10)}), {1, 2, 3, 3},
      {-0.31433481, -0.124527358, -0.150419801, -0.0416463986, -0.0130883995, -0.0278341677,
       0.777364254, -0.27663213, -0.00474159885, 0.0298658237, -0.279145628, 0.279865801,
       0.0146488883, -0.205605403, 0.264648914, 0.572594047, -0.255305439, 0.822594047},
      1e-5, 1e-6);
  // A row of -inf is fully masked (zeros), not NaN.
  const float ninf = -INFINITY;
  Tensor y = run_op1(Op::kAttention,
                     {m.q, m.k, m.v, f32({3, 1}, {0, ninf, 0})});  // last dim 1 < 5: padded
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 3, 3}));
  for (int64_t i = 3; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], 0.0f);
}

TEST(Attention, ShortMaskLastDimIsPaddedNotBroadcast) {
  // ONNX pads a mask whose last dim is shorter than L with -inf / false. A [1,2] bool mask
  // [true, false] leaves only key 0, so every query returns V's row 0 of its head.
  Mha m;
  expect_values(run_op1(Op::kAttention, {m.q, m.k, m.v, bools({1, 2}, {true, false})}),
                {1, 2, 3, 3},
                {0.75, -0.75, 1, 0.75, -0.75, 1, 0.75, -0.75, 1, 1, -0.5, 1.25, 1, -0.5, 1.25, 1,
                 -0.5, 1.25});
  // A float mask [Hq=2, 1, 3] broadcast over queries, padded over keys 3 and 4.
  expect_values(run_op1(Op::kAttention, {m.q, m.k, m.v, pattern({2, 1, 3}, 11)}), {1, 2, 3, 3},
                {1.1112802, -0.115136907, -0.660238862, 1.00092089, -0.208295316, -0.321042538,
                 0.89955765, -0.317240059, 0.0294707268, -0.761656523, 0.87335676, -0.511656463,
                 -0.637457848, 0.936665237, -0.387457818, 0.150028348, 0.691158652, 0.400028348},
                1e-5, 1e-6);
}

TEST(Attention, PackedThreeDimensionalForm) {
  // B 2, S 2, 4 query heads of size 2 (Q [2,2,8]); L 3, 2 K/V heads, V head size 3.
  Attributes attrs{{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}};
  Tensor q = pattern({2, 2, 8}, 12), k = pattern({2, 3, 4}, 13), v = pattern({2, 3, 6}, 14);
  expect_values(
      run_op1(Op::kAttention, {q, k, v}, attrs), {2, 2, 12},
      {0.0879310817, -0.513654292, 0.337931067,   0.173190877,   -0.596838534, 0.423190862,
       -0.41492483,  0.753447771,  -0.164924845,  0.116698787,   0.285930634,  0.366698802,
       -0.131052107, -0.251296788, 0.118947893,   -0.0441367328, -0.363766015, 0.205863267,
       -0.216751695, 0.544136763,  0.0332483053,  -0.307085097,  0.631052136,  -0.0570850894,
       -0.132796377, 0.964069366,  -0.535930574,  0.426453233,   0.496552229,  -1.00344777,
       0.0968385264, -0.673190892, 0.346838534,   0.0136542916,  -0.587931037, 0.263654321,
       0.0833333582, 0.74999994,   -0.75,         -0.0136543065, 0.837931037,  -0.662068903,
       -0.307273507, -0.326809108, -0.0572734922, -0.426453203,  -0.246552244, -0.176453188},
      1e-5, 1e-6);
  attrs.set("is_causal", int64_t{1});
  expect_values(run_op1(Op::kAttention, {q, k, v}, attrs), {2, 2, 12},
                {-0.75,
                 1,
                 -0.5,
                 -0.75,
                 1,
                 -0.5,
                 1.25,
                 -0.25,
                 1.5,
                 1.25,
                 -0.25,
                 1.5,
                 -0.424429178,
                 -0.0852361172,
                 -0.174429178,
                 -0.391562045,
                 -0.194793224,
                 -0.141562045,
                 -0.0552068204,
                 0.141562045,
                 0.194793165,
                 -0.164763927,
                 0.174429178,
                 0.0852360725,
                 1.5,
                 0,
                 -1.5,
                 1.5,
                 0,
                 -1.5,
                 0.25,
                 -1.25,
                 0.5,
                 0.25,
                 -1.25,
                 0.5,
                 0.25000003,
                 0.37499997,
                 -1.125,
                 0.139801383,
                 0.408059567,
                 -1.0919404,
                 0.690609217,
                 -0.809390724,
                 0.940609217,
                 0.722170055,
                 -0.777829885,
                 0.972170055},
                1e-5, 1e-6);
}

TEST(Attention, NanPropagatesAndEmptyDims) {
  // A NaN query poisons its own row only. As in ONNX's reference, a NaN key poisons every row,
  // even where the causal mask hides that key (NaN + -inf is NaN).
  const Tensor k = f32({1, 1, 2, 1}, {1, 3}), v = f32({1, 1, 2, 1}, {1, 2});
  const Attributes causal{{"is_causal", int64_t{1}}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_values(run_op1(Op::kAttention, {f32({1, 1, 2, 1}, {1, std::nanf("")}), k, v}, causal),
                {1, 1, 2, 1}, {1, nan});
  expect_values(
      run_op1(Op::kAttention, {f32({1, 1, 2, 1}, {1, 1}), f32({1, 1, 2, 1}, {1, std::nanf("")}), v},
              causal),
      {1, 1, 2, 1}, {nan, nan});
  // No queries: empty output. No keys: every row is fully masked, so zeros.
  expect_values(run_op1(Op::kAttention, {Tensor(DType::kF32, {1, 2, 0, 4}),
                                         pattern({1, 2, 3, 4}, 0), pattern({1, 2, 3, 2}, 0)}),
                {1, 2, 0, 2}, {});
  expect_values(
      run_op1(Op::kAttention, {pattern({1, 1, 2, 4}, 0), Tensor(DType::kF32, {1, 1, 0, 4}),
                               Tensor(DType::kF32, {1, 1, 0, 3})}),
      {1, 1, 2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(Attention, Errors) {
  Mha m;
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v}, {{"qk_matmul_output_mode", int64_t{1}}});
      },
      ErrorCode::kUnsupported,
      {"Attention_under_test", "Attention", "f32[1,2,3,4]", "qk_matmul_output_mode"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v}, {{"scale", -1.0f}});
      },
      ErrorCode::kUnsupported, {"Attention", "scale"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, to_dtype(m.v, DType::kF16)});
      },
      ErrorCode::kUnsupported, {"Attention", "f16[1,2,5,3]", "V's dtype"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, pattern({1, 2, 5, 3}, 0), m.v});
      },
      ErrorCode::kShapeMismatch, {"Attention", "f32[1,2,5,3]", "head size"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {pattern({1, 3, 3, 4}, 0), m.k, m.v});
      },
      ErrorCode::kShapeMismatch, {"Attention", "3 heads", "multiple", "2"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, pattern({1, 2, 4, 3}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "5 positions", "V has 4"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {pattern({2, 2, 3, 4}, 0), m.k, m.v});
      },
      ErrorCode::kShapeMismatch, {"Attention", "batch size"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v, pattern({3, 6}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "f32[3,6]", "more than the 5 key positions"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v, pattern({4, 5}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "[4,5]", "does not broadcast to [1,2,3,5]"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v, to_dtype(pattern({3, 5}, 0), DType::kI64)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "i64[3,5]", "bool or Q's dtype"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v}, {{"q_num_heads", int64_t{4}}});
      },
      ErrorCode::kInvalidGraph, {"Attention", "q_num_heads", "contradicts"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, m.k, m.v}, {{"is_causal", int64_t{2}}});
      },
      ErrorCode::kInvalidGraph, {"Attention", "is_causal", "0 or 1"});
  // 3-D inputs need the head counts, and the hidden sizes must split into them.
  const Tensor q3 = pattern({1, 3, 8}, 0), k3 = pattern({1, 5, 4}, 0), v3 = pattern({1, 5, 6}, 0);
  expect_error(
      [&] {
        run_op1(Op::kAttention, {q3, k3, v3}, {{"q_num_heads", int64_t{4}}});
      },
      ErrorCode::kInvalidGraph, {"Attention", "f32[1,3,8]", "kv_num_heads"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {q3, k3, v3},
                {{"q_num_heads", int64_t{3}}, {"kv_num_heads", int64_t{2}}});
      },
      ErrorCode::kShapeMismatch, {"Attention", "hidden size 8", "3 heads"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {q3, k3, v3},
                {{"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{2}}});
      },
      ErrorCode::kShapeMismatch, {"Attention", "head size 4", "K's 2"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {m.q, k3, m.v});
      },
      ErrorCode::kShapeMismatch, {"Attention", "same rank"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {pattern({3, 4}, 0), pattern({3, 4}, 0), pattern({3, 4}, 0)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "rank 3 or 4"});
  expect_error(
      [&] {
        run_op1(Op::kAttention, {to_dtype(m.q, DType::kI64), to_dtype(m.k, DType::kI64),
                                 to_dtype(m.v, DType::kI64)});
      },
      ErrorCode::kShapeMismatch, {"Attention", "i64[1,2,3,4]", "float"});
}

TEST(Attention, SymbolicShapesAtBuildTime) {
  GraphBuilder b;
  const Dim batch(std::string("batch")), seq(std::string("seq")), past(std::string("kv"));
  ValueId q = b.input("q", DType::kF16, Shape{batch, 8, seq, 64});
  ValueId k = b.input("k", DType::kF16, Shape{batch, 2, past, 64});
  ValueId v = b.input("v", DType::kF16, Shape{batch, 2, past, 32});
  ValueId mask = b.input("mask", DType::kBool, Shape{batch, 1, seq, past});
  EXPECT_EQ(b.type(b.attention(q, k, v, mask, /*causal=*/true)).to_string(), "f16[batch,8,seq,32]");
  // Packed 3-D form.
  ValueId q3 = b.input("q3", DType::kF32, Shape{batch, seq, 512});
  ValueId kv3 = b.input("kv3", DType::kF32, Shape{batch, past, 128});
  Attributes heads{{"q_num_heads", int64_t{8}}, {"kv_num_heads", int64_t{2}}};
  EXPECT_EQ(b.type(b.op1(Op::kAttention, {q3, kv3, kv3}, heads)).to_string(), "f32[batch,seq,512]");
  ValueId bad = b.input("bad", DType::kF16, Shape{batch, 3, past, 64});
  expect_error(
      [&] {
        b.op1(Op::kAttention, {q, bad, bad}, {}, "attn0");
      },
      ErrorCode::kShapeMismatch,
      {"attn0", "Attention", "f16[batch,8,seq,64]", "f16[batch,3,kv,64]"});
}

}  // namespace
}  // namespace gf
