// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graphfuse/graphfuse.h"
#include "runtime/cpu/reference/interpreter.h"

namespace gf::testing {

// Runs one op on the reference interpreter. Inputs are passed as run-time data, so shapes are
// inferred from them (undefined Tensor = omitted optional input).
inline std::vector<Tensor> run_op(Op op, const std::vector<Tensor>& inputs, Attributes attrs = {},
                                  int num_outputs = 1) {
  Node node{op, std::string(op_name(op)) + "_under_test", {}, {}, std::move(attrs)};
  for (size_t i = 0; i < inputs.size(); ++i)
    node.inputs.push_back(inputs[i].defined() ? static_cast<ValueId>(i) : kNoValue);
  for (int i = 0; i < num_outputs; ++i) node.outputs.push_back(static_cast<ValueId>(inputs.size() + i));
  return ref::run_node(node, inputs);
}

// Every element of `t` as a double (the expected values of expect_values).
inline std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

inline Tensor run_op1(Op op, const std::vector<Tensor>& inputs, Attributes attrs = {}) {
  return run_op(op, inputs, std::move(attrs), 1)[0];
}

// f32 tensor from values.
inline Tensor f32(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::from_vector<float>(std::move(dims), values);
}
inline Tensor i64(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Tensor::from_vector<int64_t>(std::move(dims), values);
}

// Converts a float tensor to another float dtype (for dtype sweeps).
inline Tensor to_dtype(const Tensor& t, DType dtype) {
  Tensor out(dtype, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.element_as_double(i);
    switch (dtype) {
      case DType::kF32: out.data<float>()[i] = static_cast<float>(v); break;
      case DType::kF16: out.data<Half>()[i] = Half(static_cast<float>(v)); break;
      case DType::kBF16: out.data<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
      case DType::kF64: out.data<double>()[i] = v; break;
      case DType::kI64: out.data<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DType::kI32: out.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DType::kI8: out.data<int8_t>()[i] = static_cast<int8_t>(v); break;
      case DType::kU8: out.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DType::kBool: out.data<bool>()[i] = v != 0.0; break;
    }
  }
  return out;
}

// Element-wise comparison with |a - e| <= atol + rtol * |e|; NaN matches NaN only.
inline void expect_values(const Tensor& actual, std::vector<int64_t> dims,
                          const std::vector<double>& expected, double rtol = 1e-6,
                          double atol = 1e-6) {
  ASSERT_TRUE(actual.defined());
  ASSERT_EQ(actual.dims(), dims) << "got " << actual.type_string();
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.element_as_double(i);
    const double e = expected[static_cast<size_t>(i)];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(a)) << "element " << i << ": expected NaN, got " << a;
    } else if (std::isinf(e)) {
      EXPECT_EQ(a, e) << "element " << i;
    } else {
      EXPECT_LE(std::fabs(a - e), atol + rtol * std::fabs(e))
          << "element " << i << ": got " << a << ", expected " << e;
    }
  }
}

// Expects `fn` to throw gf::Error with `code` and a message containing every one of `parts`.
template <class Fn>
void expect_error(Fn&& fn, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected gf::Error (" << to_string(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
    }
  }
}

}  // namespace gf::testing
