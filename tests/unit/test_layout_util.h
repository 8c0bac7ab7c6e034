// Helpers for the layout family's tests (test_layout*.cpp).
#pragma once

#include <limits>

#include "test_util.h"

namespace gf::testing {

inline constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

inline const std::vector<DType> kAllDTypes = {DType::kF32, DType::kF16, DType::kBF16,
                                              DType::kF64, DType::kI64, DType::kI32,
                                              DType::kI8,  DType::kU8,  DType::kBool};

inline Tensor i32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Tensor::from_vector<int32_t>(std::move(dims), values);
}

// 0, 1, ..., n-1 shaped as `dims` (f32; exact in every dtype while n <= 128).
inline Tensor iota_f32(std::vector<int64_t> dims) {
  Tensor t(DType::kF32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// Expects running `op` on `inputs` to fail with `code` and every one of `parts` in the message.
inline void expect_op_error(Op op, const std::vector<Tensor>& inputs, const Attributes& attrs,
                            ErrorCode code, const std::vector<std::string>& parts,
                            int num_outputs = 1) {
  expect_error([&] { run_op(op, inputs, attrs, num_outputs); }, code, parts);
}

// Runs a data-movement op with input 0 converted to every dtype (the other inputs as given) and
// expects the same values moved: `expected` holds f32 values; for bool, nonzero reads as 1.
inline void expect_every_dtype(Op op, const Tensor& data, std::vector<Tensor> rest,
                               const Attributes& attrs, const std::vector<int64_t>& dims,
                               const std::vector<double>& expected) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    std::vector<Tensor> inputs{to_dtype(data, t)};
    inputs.insert(inputs.end(), rest.begin(), rest.end());
    const Tensor out = run_op1(op, inputs, attrs);
    EXPECT_EQ(out.dtype(), t);
    std::vector<double> want = expected;
    if (t == DType::kBool)
      for (double& v : want) v = v != 0.0 ? 1.0 : 0.0;
    expect_values(out, dims, want);
  }
}

}  // namespace gf::testing
