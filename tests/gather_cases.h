// Gather, GatherElements and GatherND with indices that are inputs (read at run time), each
// followed by a consumer it fuses with: every axis position, scalar and 1-d and 2-d indices, i32
// and i64, negative indices. Every index is in range, so the reference interpreter is their
// oracle. Shared by the CPU tests (tests/unit/test_fused_cpu_gather.cpp), the CUDA code
// generator's NVRTC test and the GPU tests (through tests/gpu/cuda_kernel_cases.h).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "graphfuse/builder.h"
#include "test_util.h"

namespace gf::testing {

struct GatherCase {
  std::string name;
  Graph graph;
  std::vector<Tensor> inputs;
  double rtol = 1e-6, atol = 1e-6;
};

// Deterministic floats, all distinct within a tensor of up to 10^4 elements, so a value read
// from the wrong position shows.
inline Tensor distinct_f32(const std::vector<int64_t>& dims, float offset) {
  Tensor t(DType::kF32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = offset + 0.01f * static_cast<float>(i);
  return t;
}

inline Tensor int32s(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Tensor::from_vector<int32_t>(std::move(dims), values);
}

inline Attributes axis_attr(int64_t axis) { return {{"axis", axis}}; }

// A token embedding and a position embedding, as language models start:
// wte[ids] + wpe, wte: [11, 24] (a constant), ids: i64 [2, 5], wpe: [5, 24].
inline GatherCase embedding_plus_position_case() {
  GraphBuilder b("embedding");
  const ValueId wte = b.constant("wte", distinct_f32({11, 24}, -1.f));
  const ValueId wpe = b.constant("wpe", distinct_f32({5, 24}, 0.5f));
  const ValueId ids = b.input("ids", DType::kI64, Shape::from_static({2, 5}));
  b.output(b.add(b.op1(Op::kGather, {wte, ids}), wpe), "h");
  return {"gather_embedding_plus_position", b.build(),
          {i64({2, 5}, {3, 0, 10, -1, 7, -11, 5, 5, 2, 9})}};
}

// Axis 1 of [3, 6, 4] with i32 indices [4], times 2.
inline GatherCase middle_axis_i32_case() {
  GraphBuilder b("gather_axis1");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({3, 6, 4}));
  const ValueId idx = b.input("idx", DType::kI32, Shape::from_static({4}));
  b.output(b.mul(b.op1(Op::kGather, {x, idx}, axis_attr(1)), b.constant_scalar(2.f, DType::kF32)), "y");
  return {"gather_axis1_i32", b.build(), {distinct_f32({3, 6, 4}, 0.f), int32s({4}, {5, -6, 0, 2})}};
}

// The last axis of [4, 9] with i64 indices [2, 3] (output [4, 2, 3]), negated.
inline GatherCase last_axis_2d_case() {
  GraphBuilder b("gather_last");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({4, 9}));
  const ValueId idx = b.input("idx", DType::kI64, Shape::from_static({2, 3}));
  b.output(b.unary(Op::kNeg, b.op1(Op::kGather, {x, idx}, axis_attr(-1))), "y");
  return {"gather_last_axis_2d", b.build(), {distinct_f32({4, 9}, 1.f), i64({2, 3}, {8, -9, 4, 0, -1, 3})}};
}

// A scalar index on axis 1 of [3, 5, 2]: the axis goes away (output [3, 2]), then Relu.
inline GatherCase scalar_index_case() {
  GraphBuilder b("gather_scalar");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({3, 5, 2}));
  const ValueId idx = b.input("idx", DType::kI32, Shape::from_static({}));
  b.output(b.unary(Op::kRelu, b.op1(Op::kGather, {x, idx}, axis_attr(1))), "y");
  return {"gather_scalar_index", b.build(), {distinct_f32({3, 5, 2}, -0.2f), int32s({}, {-2})}};
}

// Data and indices both computed in the kernel: exp(x)[idx - 1] over axis 0 of [6, 7].
inline GatherCase computed_operands_case() {
  GraphBuilder b("gather_computed");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({6, 7}));
  const ValueId idx = b.input("idx", DType::kI64, Shape::from_static({4}));
  const ValueId shifted = b.binary(Op::kSub, idx, b.constant("one", Tensor::scalar<int64_t>(1)));
  b.output(b.op1(Op::kGather, {b.unary(Op::kExp, x), shifted}), "y");
  GatherCase c{"gather_computed_operands", b.build(), {distinct_f32({6, 7}, -0.3f), i64({4}, {6, 1, -4, 3})}};
  c.rtol = 1e-6;
  return c;
}

// GatherElements on axis 0 (i64, [3, 5] from [4, 5]) and on the last axis (i32, [4, 2] from
// [4, 5]), each plus one.
inline GatherCase gather_elements_case() {
  GraphBuilder b("gather_elements");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({4, 5}));
  const ValueId rows = b.input("rows", DType::kI64, Shape::from_static({3, 5}));
  const ValueId cols = b.input("cols", DType::kI32, Shape::from_static({4, 2}));
  const ValueId one = b.constant_scalar(1.f, DType::kF32);
  b.output(b.add(b.op1(Op::kGatherElements, {x, rows}, axis_attr(0)), one), "by_rows");
  b.output(b.add(b.op1(Op::kGatherElements, {x, cols}, axis_attr(-1)), one), "by_cols");
  return {"gather_elements",
          b.build(),
          {distinct_f32({4, 5}, 2.f), i64({3, 5}, {0, 3, -1, 2, 1, -4, 1, 1, 3, 0, 2, 2, -2, 0, 3}),
           int32s({4, 2}, {4, 0, -5, 2, 1, 1, -1, 3})}};
}

// Indices past both ends of their axis (the index types' extremes too), which the reference
// rejects, with the outputs of a kernel that clamps each index into the axis after wrapping a
// negative one once (-5 on an axis of 4 reads 0), worked out by hand. x[i][j] = 0.01 * (3i + j)
// over [4, 3]; rows by i64, columns by i32, GatherElements along rows, GatherND by pairs.
struct OutOfRangeCase {
  GatherCase gather;
  std::vector<std::vector<int64_t>> dims;  // per output
  std::vector<std::vector<double>> values;
};

inline OutOfRangeCase out_of_range_case() {
  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
  constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
  GraphBuilder b("out_of_range");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({4, 3}));
  const ValueId rows = b.input("rows", DType::kI64, Shape::from_static({6}));
  const ValueId cols = b.input("cols", DType::kI32, Shape::from_static({3}));
  const ValueId elems = b.input("elems", DType::kI64, Shape::from_static({2, 3}));
  b.output(b.op1(Op::kGather, {x, rows}, axis_attr(0)), "by_rows");
  b.output(b.op1(Op::kGather, {x, cols}, axis_attr(1)), "by_cols");
  b.output(b.op1(Op::kGatherElements, {x, elems}, axis_attr(0)), "elements");
  const ValueId pairs = b.input("pairs", DType::kI64, Shape::from_static({2, 2}));
  b.output(b.op1(Op::kGatherND, {x, pairs}), "pairs");
  OutOfRangeCase c{{"gather_out_of_range",
                    b.build(),
                    {distinct_f32({4, 3}, 0.f), i64({6}, {4, -5, kI64Max, kI64Min, 100, -100}),
                     int32s({3}, {3, kI32Min, kI32Max}), i64({2, 3}, {-9, 7, 2, kI64Min, 4, -1}),
                     i64({2, 2}, {5, -7, kI64Max, 1})}},
                   {{6, 3}, {4, 3}, {2, 3}, {2}},
                   {{}, {}, {}, {}}};
  auto x_at = [](int64_t i, int64_t j) { return 0.01f * static_cast<float>(3 * i + j); };
  for (int64_t r : {3, 0, 3, 0, 3, 0})
    for (int64_t j = 0; j < 3; ++j) c.values[0].push_back(x_at(r, j));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t col : {2, 0, 2}) c.values[1].push_back(x_at(i, col));
  const int64_t element_rows[] = {0, 3, 2, 0, 3, 3};
  for (int64_t k = 0; k < 6; ++k) c.values[2].push_back(x_at(element_rows[k], k % 3));
  c.values[3] = {x_at(3, 0), x_at(3, 1)};
  return c;
}

// GatherND: pairs of indices into [5, 4, 3] picking rows of 3 (batch_dims 0), and single
// indices within each of 2 batches of [2, 5, 4] picking rows of 4 (batch_dims 1), minus one.
inline GatherCase gather_nd_case() {
  GraphBuilder b("gather_nd");
  const ValueId x = b.input("x", DType::kF32, Shape::from_static({5, 4, 3}));
  const ValueId pairs = b.input("pairs", DType::kI64, Shape::from_static({2, 3, 2}));
  const ValueId y = b.input("y", DType::kF32, Shape::from_static({2, 5, 4}));
  const ValueId rows = b.input("rows", DType::kI64, Shape::from_static({2, 3, 1}));
  const ValueId one = b.constant_scalar(1.f, DType::kF32);
  b.output(b.binary(Op::kSub, b.op1(Op::kGatherND, {x, pairs}), one), "pairs_picked");
  b.output(b.binary(Op::kSub, b.op1(Op::kGatherND, {y, rows}, {{"batch_dims", int64_t{1}}}), one),
           "rows_picked");
  return {"gather_nd",
          b.build(),
          {distinct_f32({5, 4, 3}, 0.f), i64({2, 3, 2}, {4, 3, -5, 0, 2, -1, 0, 0, -1, -4, 3, 1}),
           distinct_f32({2, 5, 4}, 1.f), i64({2, 3, 1}, {4, -5, 2, 0, 3, -1})}};
}

inline std::vector<GatherCase> gather_cases() {
  return {embedding_plus_position_case(), middle_axis_i32_case(), last_axis_2d_case(),
          scalar_index_case(), computed_operands_case(), gather_elements_case(), gather_nd_case()};
}

}  // namespace gf::testing
