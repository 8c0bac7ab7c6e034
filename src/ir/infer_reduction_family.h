// Private to the reduction family's shape inference (infer_reduction.cpp,
// infer_normalization.cpp): attribute readers that name the node on failure.
#pragma once

#include <string>

#include "ir/infer.h"

namespace gf {

// Reads an integer attribute; a present attribute of the wrong kind fails naming the node.
inline int64_t int_attr(const InferContext& ctx, const std::string& name, int64_t fallback) {
  try {
    return ctx.attrs().get_int(name, fallback);
  } catch (const Error& e) {
    ctx.fail(e.what(), ErrorCode::kInvalidGraph);
  }
}

inline float float_attr(const InferContext& ctx, const std::string& name, float fallback) {
  try {
    return ctx.attrs().get_float(name, fallback);
  } catch (const Error& e) {
    ctx.fail(e.what(), ErrorCode::kInvalidGraph);
  }
}

// A 0/1 flag attribute (keepdims, exclusive, ...); any other value is a malformed graph.
inline bool flag_attr(const InferContext& ctx, const std::string& name, bool fallback) {
  const int64_t v = int_attr(ctx, name, fallback ? 1 : 0);
  if (v != 0 && v != 1) {
    ctx.fail("attribute '" + name + "' must be 0 or 1, got " + std::to_string(v),
             ErrorCode::kInvalidGraph);
  }
  return v == 1;
}

// The only stash_type supported: 1 (ONNX TensorProto FLOAT), the ONNX default.
inline constexpr int64_t kStashFloat = 1;

// Registered by infer_normalization.cpp, called from register_reduction_infer.
void register_normalization_infer(InferTable& table);

}  // namespace gf
