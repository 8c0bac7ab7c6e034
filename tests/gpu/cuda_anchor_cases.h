// The anchor-kernel cases (attention, pools, direct convolution), shared by the unit tests
// (emitted and compiled with NVRTC, no GPU needed: tests/unit/test_cuda_anchor_kernels.cpp) and
// the GPU tests (launched and compared with the reference kernels: test_cuda_anchor_kernels.cpp,
// test_cudnn_conv.cpp). Sizes are odd on purpose: query rows not a multiple of the 8 rows of an
// attention block, keys not a multiple of the 32-key tile, head sizes not multiples of 8, pools
// with padding and ceil_mode, grouped, strided and dilated convolutions.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "graphfuse/graph.h"
#include "test_util.h"

namespace gf::testing {

// One node in a graph of its own, shapes inferred; inputs for its present inputs in order.
struct AnchorCase {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;
  double rtol = 1e-5, atol = 1e-5;

  const Node& node() const { return graph.node(0); }
};

// Deterministic, irregular values in [-scale, scale], rounded to `dtype`.
inline Tensor anchor_data(std::vector<int64_t> dims, uint32_t seed, DType dtype, double scale = 1) {
  Tensor t(DType::kF64, std::move(dims));
  uint32_t h = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    t.data<double>()[i] = scale * (static_cast<double>(h % 20001) / 10000.0 - 1.0);
  }
  return to_dtype(t, dtype);
}

inline AnchorCase make_anchor_case(std::string name, Op op, std::vector<Tensor> inputs,
                                   Attributes attrs, DType dtype) {
  AnchorCase c;
  c.name = std::move(name);
  std::vector<ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      ids.push_back(kNoValue);
      continue;
    }
    ids.push_back(c.graph.add_input("in" + std::to_string(i),
                                    TensorType{inputs[i].dtype(), Shape::from_static(inputs[i].dims())}));
    c.inputs.push_back(inputs[i]);
  }
  const NodeId n = c.graph.add_node(op, c.name, ids, {"y"}, std::move(attrs));
  c.graph.add_output(c.graph.node(n).outputs[0]);
  infer_shapes(c.graph);
  // Results rounded once to the storage type; the kernels' sums differ in order only.
  switch (dtype) {
    case DType::kF16: c.rtol = 4e-3, c.atol = 2e-3; break;
    case DType::kBF16: c.rtol = 2e-2, c.atol = 1e-2; break;
    default: c.rtol = 2e-5, c.atol = 2e-5; break;
  }
  return c;
}

// The node's inputs as ref::run_node takes them (undefined for an omitted optional input).
inline std::vector<Tensor> anchor_reference_inputs(const AnchorCase& c) {
  std::vector<Tensor> out;
  size_t next = 0;
  for (ValueId v : c.node().inputs) out.push_back(v == kNoValue ? Tensor() : c.inputs.at(next++));
  return out;
}

inline Tensor mask_bools(std::vector<int64_t> dims, uint32_t seed, int every_nth_false) {
  Tensor t(DType::kBool, std::move(dims));
  uint32_t h = seed * 2246822519u + 1u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    h = h * 1664525u + 1013904223u;
    t.data<bool>()[i] = (h >> 16) % static_cast<uint32_t>(every_nth_false) != 0;
  }
  return t;
}

// Q [B, Hq, Sq, D], K [B, Hkv, Skv, D], V [B, Hkv, Skv, Dv] (4-D).
inline std::vector<Tensor> qkv4(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv,
                                int64_t d, int64_t dv, DType t, uint32_t seed) {
  return {anchor_data({b, hq, sq, d}, seed, t), anchor_data({b, hkv, skv, d}, seed + 1, t),
          anchor_data({b, hkv, skv, dv}, seed + 2, t)};
}

inline std::vector<AnchorCase> make_attention_cases() {
  std::vector<AnchorCase> cases;
  const DType f32 = DType::kF32, f16 = DType::kF16, bf16 = DType::kBF16;
  auto add = [&](std::string name, std::vector<Tensor> in, Attributes a, DType t) {
    cases.push_back(make_anchor_case(std::move(name), Op::kAttention, std::move(in), std::move(a), t));
  };
  add("attention_mha_f32", qkv4(2, 3, 3, 5, 7, 16, 12, f32, 1), {}, f32);
  add("attention_gqa_long_f32", qkv4(1, 6, 2, 33, 45, 24, 24, f32, 2), {}, f32);
  add("attention_multi_query_f32", qkv4(2, 4, 1, 9, 65, 8, 8, f32, 3), {}, f32);
  add("attention_causal_short_queries_f32", qkv4(1, 2, 2, 19, 70, 40, 40, f32, 4),
      {{"is_causal", int64_t{1}}}, f32);
  add("attention_causal_long_queries_f32", qkv4(2, 2, 1, 40, 9, 16, 20, f32, 5),
      {{"is_causal", int64_t{1}}}, f32);
  {
    // Packed 3-D: [B, S, H * D] with 4 query heads of 20 over 2 K/V heads, V heads of 10.
    std::vector<Tensor> in = {anchor_data({2, 17, 80}, 6, f32), anchor_data({2, 23, 40}, 7, f32),
                              anchor_data({2, 23, 20}, 8, f32)};
    add("attention_packed_3d_gqa_f32", std::move(in),
        {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}}, f32);
  }
  {
    // A bool mask per batch and query row; every 3rd key masked at random, and query row 2 of
    // batch 1 masked entirely (a zero output row).
    std::vector<Tensor> in = qkv4(2, 2, 2, 11, 37, 12, 12, f32, 9);
    Tensor mask = mask_bools({2, 1, 11, 37}, 10, 3);
    for (int64_t j = 0; j < 37; ++j) mask.data<bool>()[(11 + 2) * 37 + j] = false;
    in.push_back(mask);
    add("attention_bool_mask_f32", std::move(in), {}, f32);
  }
  {
    std::vector<Tensor> in = qkv4(1, 3, 3, 6, 50, 16, 16, f32, 11);
    in.push_back(anchor_data({6, 50}, 12, f32, 2.0));  // additive, broadcast over batch and heads
    add("attention_float_mask_causal_f32", std::move(in), {{"is_causal", int64_t{1}}}, f32);
  }
  {
    // A mask covering only the first 5 of 9 keys: the rest are masked (ONNX pads with -inf).
    std::vector<Tensor> in = qkv4(1, 2, 2, 4, 9, 8, 8, f32, 13);
    in.push_back(mask_bools({1, 1, 1, 5}, 14, 4));
    add("attention_short_mask_f32", std::move(in), {}, f32);
  }
  add("attention_scale_softcap_f32", qkv4(1, 2, 2, 10, 33, 32, 32, f32, 15),
      {{"scale", 0.9f}, {"softcap", 2.5f}}, f32);
  add("attention_decode_odd_heads_f32", qkv4(3, 2, 2, 1, 300, 7, 3, f32, 16), {}, f32);
  add("attention_head256_f32", qkv4(1, 2, 2, 9, 40, 256, 256, f32, 17), {}, f32);
  add("attention_no_keys_f32", qkv4(1, 2, 2, 3, 0, 8, 8, f32, 18), {}, f32);
  add("attention_gqa_causal_f16", qkv4(2, 8, 2, 21, 130, 64, 64, f16, 19),
      {{"is_causal", int64_t{1}}}, f16);
  // One query against one key (a decode step without a cache): a one-key tile.
  add("attention_one_key_causal_f16", qkv4(2, 12, 12, 1, 1, 64, 64, f16, 26),
      {{"is_causal", int64_t{1}}}, f16);
  {
    std::vector<Tensor> in = qkv4(1, 4, 4, 13, 64, 128, 128, bf16, 20);
    in.push_back(anchor_data({1, 4, 13, 64}, 21, bf16));
    add("attention_float_mask_bf16", std::move(in), {}, bf16);
  }
  {
    std::vector<Tensor> in = {anchor_data({1, 9, 6 * 36}, 22, f16), anchor_data({1, 31, 3 * 36}, 23, f16),
                              anchor_data({1, 31, 3 * 36}, 24, f16)};
    in.push_back(mask_bools({9, 31}, 25, 5));
    add("attention_packed_bool_mask_f16", std::move(in),
        {{"q_num_heads", int64_t{6}}, {"kv_num_heads", int64_t{3}}, {"is_causal", int64_t{1}}},
        f16);
  }
  return cases;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& attention_cases() {
  static const std::vector<AnchorCase> cases = make_attention_cases();
  return cases;
}

// Cases of the tensor-core kernels (f16/bf16, head sizes 16-128, at least 8 query rows; the
// wgmma kernel: head sizes 64 and 128, at least 64): query rows not a multiple of their blocks,
// keys not a multiple of their tiles, several of each, every head size, both formats, masks of
// each kind, causal with more queries than keys, and the smallest query count each takes.
inline std::vector<AnchorCase> make_mma_attention_cases() {
  std::vector<AnchorCase> cases;
  const DType f16 = DType::kF16, bf16 = DType::kBF16;
  auto add = [&](std::string name, std::vector<Tensor> in, Attributes a, DType t) {
    cases.push_back(make_anchor_case(std::move(name), Op::kAttention, std::move(in), std::move(a), t));
  };
  add("mma_attention_gqa_d128_f16", qkv4(2, 8, 2, 100, 200, 128, 128, f16, 80), {}, f16);
  add("mma_attention_causal_more_queries_d64_bf16", qkv4(1, 4, 4, 70, 50, 64, 64, bf16, 81),
      {{"is_causal", int64_t{1}}}, bf16);
  add("mma_attention_causal_d128_bf16", qkv4(1, 2, 1, 130, 130, 128, 128, bf16, 82),
      {{"is_causal", int64_t{1}}}, bf16);
  {
    // Packed 3-D, head size 32, a key-padding mask per batch: batch 1 has no visible key at all
    // (zero rows).
    std::vector<Tensor> in = {anchor_data({2, 33, 4 * 32}, 83, f16), anchor_data({2, 77, 2 * 32}, 84, f16),
                              anchor_data({2, 77, 2 * 32}, 85, f16)};
    Tensor mask = mask_bools({2, 1, 1, 77}, 86, 4);
    for (int64_t j = 0; j < 77; ++j) mask.data<bool>()[77 + j] = false;
    in.push_back(mask);
    add("mma_attention_packed_key_padding_d32_f16", std::move(in),
        {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}}, f16);
  }
  {
    // Head size 16, an additive mask per query row and key, a scale and a softcap.
    std::vector<Tensor> in = qkv4(1, 3, 3, 40, 90, 16, 16, f16, 87);
    in.push_back(anchor_data({40, 90}, 88, f16, 3.0));
    add("mma_attention_float_mask_softcap_d16_f16", std::move(in), {{"scale", 0.7f}, {"softcap", 4.0f}},
        f16);
  }
  {
    // A bool mask per (batch, head, query row) covering only 60 of 65 keys, and causal.
    std::vector<Tensor> in = qkv4(2, 2, 2, 65, 65, 64, 64, bf16, 89);
    in.push_back(mask_bools({2, 2, 65, 60}, 90, 3));
    add("mma_attention_short_bool_mask_causal_d64_bf16", std::move(in), {{"is_causal", int64_t{1}}}, bf16);
  }
  {
    // Scores that rise along the keys (every 64-key tile raises each row's maximum, so the
    // accumulators are rescaled on every tile) and that fall (the first tile holds the maxima;
    // no later tile rescales): positive queries against keys of a ramp.
    for (bool rising : {true, false}) {
      std::vector<Tensor> in = qkv4(1, 2, 2, 70, 300, 64, 64, bf16, rising ? 93 : 94);
      Tensor q = anchor_data({1, 2, 70, 64}, 95, DType::kF64, 0.5);
      Tensor k = anchor_data({1, 2, 300, 64}, 96, DType::kF64, 0.1);
      for (int64_t i = 0; i < q.numel(); ++i)
        q.data<double>()[i] = std::fabs(q.data<double>()[i]) + 0.25;
      for (int64_t i = 0; i < k.numel(); ++i) {
        const double ramp = static_cast<double>((i / 64) % 300) / 300.0;
        k.data<double>()[i] += rising ? ramp : 1.0 - ramp;
      }
      in[0] = to_dtype(q, bf16);
      in[1] = to_dtype(k, bf16);
      add(rising ? "mma_attention_rising_scores_d64_bf16" : "mma_attention_falling_scores_d64_bf16",
          std::move(in), {}, bf16);
    }
  }
  // Several query tiles and key tiles of the wgmma kernel (128 rows, 128 or 64 keys), each
  // with a remainder: GQA and causal at head size 128, and head size 64 with keys longer than
  // the queries.
  add("mma_attention_gqa_causal_many_tiles_d128_bf16", qkv4(1, 4, 2, 300, 300, 128, 128, bf16, 97),
      {{"is_causal", int64_t{1}}}, bf16);
  add("mma_attention_many_key_tiles_d64_f16", qkv4(2, 2, 1, 130, 530, 64, 64, f16, 98), {}, f16);
  {
    // Head size 128: an additive mask per head, query row and key, a scale and a softcap.
    std::vector<Tensor> in = qkv4(1, 2, 2, 70, 150, 128, 128, f16, 99);
    in.push_back(anchor_data({1, 2, 70, 150}, 100, f16, 3.0));
    add("mma_attention_float_mask_softcap_d128_f16", std::move(in),
        {{"scale", 0.09f}, {"softcap", 5.0f}}, f16);
  }
  add("mma_attention_eight_queries_one_key_d128_f16", qkv4(3, 2, 2, 8, 1, 128, 128, f16, 91), {}, f16);
  add("mma_attention_no_keys_d64_f16", qkv4(1, 2, 2, 9, 0, 64, 64, f16, 92), {}, f16);
  // Enough query rows for the wgmma kernel on sm_90, and no keys: every row's output is zero.
  add("mma_attention_no_keys_many_queries_d128_bf16", qkv4(1, 2, 1, 70, 0, 128, 128, bf16, 93), {}, bf16);
  return cases;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& mma_attention_cases() {
  static const std::vector<AnchorCase> cases = make_mma_attention_cases();
  return cases;
}

// Cases of the split-KV decode kernels (at most 4 query rows, at least 256 keys, not causal, head
// sizes 8 x 2^n up to 256; tensor cores for f16/bf16 at head sizes 16-128 with up to 16 query
// rows per key/value head, CUDA cores for the rest with up to 8): keys not a multiple of the
// cluster's 8 slices nor of a stage, every dtype, grouped heads with several query rows (more
// than 8 and 16 on tensor cores), masks of each kind (one batch with no visible key), softcap
// and scale, the packed layout, the smallest head, 16-bit inputs on CUDA cores, and caches long
// enough that every warp's ring of stages wraps around several times.
inline std::vector<AnchorCase> make_decode_attention_cases() {
  std::vector<AnchorCase> cases;
  const DType f32 = DType::kF32, f16 = DType::kF16, bf16 = DType::kBF16;
  auto add = [&](std::string name, std::vector<Tensor> in, Attributes a, DType t) {
    cases.push_back(make_anchor_case(std::move(name), Op::kAttention, std::move(in), std::move(a), t));
  };
  add("decode_attention_mha_d128_f16", qkv4(2, 4, 4, 1, 1000, 128, 128, f16, 100), {}, f16);
  add("decode_attention_gqa_two_queries_d64_bf16", qkv4(1, 8, 2, 2, 777, 64, 64, bf16, 101), {}, bf16);
  add("decode_attention_d256_f32", qkv4(3, 2, 2, 1, 300, 256, 256, f32, 102), {}, f32);
  {
    std::vector<Tensor> in = qkv4(2, 2, 2, 1, 513, 64, 64, f16, 103);
    Tensor mask = mask_bools({2, 1, 1, 513}, 104, 3);
    for (int64_t j = 0; j < 513; ++j) mask.data<bool>()[513 + j] = false;  // batch 1 sees nothing
    in.push_back(mask);
    add("decode_attention_key_padding_d64_f16", std::move(in), {}, f16);
  }
  {
    std::vector<Tensor> in = qkv4(1, 4, 4, 3, 400, 32, 32, f16, 105);
    in.push_back(anchor_data({1, 4, 3, 400}, 106, f16, 3.0));
    add("decode_attention_float_mask_softcap_d32_f16", std::move(in), {{"scale", 0.6f}, {"softcap", 3.0f}},
        f16);
  }
  {
    std::vector<Tensor> in = {anchor_data({2, 1, 6 * 16}, 107, f16), anchor_data({2, 260, 3 * 16}, 108, f16),
                              anchor_data({2, 260, 3 * 16}, 109, f16)};
    add("decode_attention_packed_gqa_d16_f16", std::move(in),
        {{"q_num_heads", int64_t{6}}, {"kv_num_heads", int64_t{3}}}, f16);
  }
  add("decode_attention_four_queries_d8_f32", qkv4(1, 1, 1, 4, 256, 8, 8, f32, 110), {}, f32);
  add("decode_attention_twelve_rows_d128_bf16", qkv4(2, 8, 2, 3, 1500, 128, 128, bf16, 111), {},
      bf16);
  {
    std::vector<Tensor> in = qkv4(1, 8, 1, 2, 700, 64, 64, f16, 112);
    in.push_back(mask_bools({1, 8, 2, 700}, 113, 4));
    add("decode_attention_sixteen_rows_bool_mask_d64_f16", std::move(in), {}, f16);
  }
  add("decode_attention_d256_bf16", qkv4(2, 4, 2, 1, 600, 256, 256, bf16, 114), {}, bf16);
  add("decode_attention_long_gqa_d128_bf16", qkv4(1, 8, 2, 1, 9000, 128, 128, bf16, 115), {}, bf16);
  add("decode_attention_long_d64_f32", qkv4(1, 2, 1, 1, 6000, 64, 64, f32, 116), {}, f32);
  return cases;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& decode_attention_cases() {
  static const std::vector<AnchorCase> cases = make_decode_attention_cases();
  return cases;
}

inline std::vector<AnchorCase> make_pool_cases() {
  std::vector<AnchorCase> cases;
  const DType f32 = DType::kF32, f16 = DType::kF16, bf16 = DType::kBF16;
  auto add = [&](std::string name, Op op, Tensor x, Attributes a, DType t) {
    cases.push_back(make_anchor_case(std::move(name), op, {std::move(x)}, std::move(a), t));
  };
  using I = std::vector<int64_t>;
  {
    Tensor x = anchor_data({2, 3, 17, 19}, 31, f32);
    x.data<float>()[40] = std::numeric_limits<float>::quiet_NaN();  // its windows' max is NaN
    add("maxpool_pad_stride_nan_f32", Op::kMaxPool, x,
        {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, f32);
  }
  add("maxpool_ceil_dilated_f32", Op::kMaxPool, anchor_data({1, 2, 15, 16}, 32, f32),
      {{"kernel_shape", I{3, 2}}, {"strides", I{2, 3}}, {"dilations", I{2, 1}},
       {"pads", I{0, 1, 1, 0}}, {"ceil_mode", int64_t{1}}},
      f32);
  add("maxpool_3d_bf16", Op::kMaxPool, anchor_data({1, 2, 5, 6, 7}, 33, bf16),
      {{"kernel_shape", I{2, 3, 2}}, {"strides", I{1, 2, 2}}}, bf16);
  add("avgpool_pad_excluded_ceil_f32", Op::kAveragePool, anchor_data({2, 3, 11, 13}, 34, f32),
      {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}},
       {"ceil_mode", int64_t{1}}},
      f32);
  add("avgpool_pad_included_ceil_f32", Op::kAveragePool, anchor_data({2, 3, 11, 13}, 35, f32),
      {{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}},
       {"ceil_mode", int64_t{1}}, {"count_include_pad", int64_t{1}}},
      f32);
  add("avgpool_1d_f16", Op::kAveragePool, anchor_data({2, 5, 31}, 36, f16),
      {{"kernel_shape", I{4}}, {"strides", I{3}}, {"pads", I{2, 1}}}, f16);
  add("avgpool_same_upper_bf16", Op::kAveragePool, anchor_data({1, 4, 10, 7}, 37, bf16),
      {{"kernel_shape", I{3, 2}}, {"strides", I{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}},
      bf16);
  add("global_avgpool_f32", Op::kGlobalAveragePool, anchor_data({2, 5, 7, 9}, 38, f32), {}, f32);
  add("global_avgpool_1d_f16", Op::kGlobalAveragePool, anchor_data({3, 4, 300}, 39, f16), {}, f16);
  add("global_maxpool_3d_bf16", Op::kGlobalMaxPool, anchor_data({2, 3, 5, 5, 5}, 40, bf16), {},
      bf16);
  add("global_maxpool_many_planes_f32", Op::kGlobalMaxPool, anchor_data({4, 70, 3, 3}, 41, f32),
      {}, f32);
  return cases;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& pool_cases() {
  static const std::vector<AnchorCase> cases = make_pool_cases();
  return cases;
}

inline std::vector<AnchorCase> make_conv_cases() {
  std::vector<AnchorCase> cases;
  const DType f32 = DType::kF32, f16 = DType::kF16, bf16 = DType::kBF16;
  auto add = [&](std::string name, std::vector<Tensor> in, Attributes a, DType t) {
    AnchorCase c = make_anchor_case(std::move(name), Op::kConv, std::move(in), std::move(a), t);
    if (t == DType::kF32) c.rtol = 1e-4, c.atol = 1e-4;  // sums of up to ~100 products
    cases.push_back(std::move(c));
  };
  using I = std::vector<int64_t>;
  add("conv_pad_bias_f32",
      {anchor_data({2, 4, 13, 11}, 51, f32), anchor_data({6, 4, 3, 3}, 52, f32),
       anchor_data({6}, 53, f32)},
      {{"pads", I{1, 1, 1, 1}}}, f32);
  add("conv_grouped_strided_dilated_asymmetric_f32",
      {anchor_data({1, 6, 15, 14}, 54, f32), anchor_data({9, 2, 3, 2}, 55, f32)},
      {{"group", int64_t{3}}, {"strides", I{2, 1}}, {"dilations", I{1, 2}}, {"pads", I{1, 0, 2, 1}}},
      f32);
  add("conv_grouped_strided_f32",
      {anchor_data({2, 6, 12, 10}, 56, f32), anchor_data({4, 3, 3, 3}, 57, f32),
       anchor_data({4}, 58, f32)},
      {{"group", int64_t{2}}, {"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}, f32);
  add("conv_depthwise_f16",
      {anchor_data({2, 8, 9, 9}, 59, f16), anchor_data({8, 1, 3, 3}, 60, f16),
       anchor_data({8}, 61, f16)},
      {{"group", int64_t{8}}, {"pads", I{1, 1, 1, 1}}}, f16);
  add("conv_1d_dilated_bf16",
      {anchor_data({3, 4, 50}, 62, bf16), anchor_data({5, 4, 7}, 63, bf16),
       anchor_data({5}, 64, bf16)},
      {{"strides", I{3}}, {"dilations", I{2}}, {"pads", I{2, 2}}}, bf16);
  add("conv_pointwise_f32", {anchor_data({1, 16, 7, 7}, 65, f32), anchor_data({32, 16, 1, 1}, 66, f32)},
      {}, f32);
  add("conv_3d_f32", {anchor_data({1, 2, 5, 6, 7}, 67, f32), anchor_data({3, 2, 2, 3, 3}, 68, f32)},
      {{"pads", I{0, 1, 1, 0, 1, 1}}}, f32);
  return cases;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& conv_cases() {
  static const std::vector<AnchorCase> cases = make_conv_cases();
  return cases;
}

inline std::vector<AnchorCase> make_all_anchor_cases() {
  std::vector<AnchorCase> all = attention_cases();
  for (auto* more : {&mma_attention_cases, &decode_attention_cases, &pool_cases, &conv_cases})
    for (const AnchorCase& c : more()) all.push_back(c);
  return all;
}

// Built once per process: the test-name generators ask for them once per case.
inline const std::vector<AnchorCase>& all_anchor_cases() {
  static const std::vector<AnchorCase> cases = make_all_anchor_cases();
  return cases;
}

}  // namespace gf::testing
