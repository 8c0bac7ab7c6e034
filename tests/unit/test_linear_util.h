// Test data shared by the linear/NN family's tests (MatMul, Gemm, Conv, pools, BatchNorm,
// Attention). Expected values for larger cases come from ONNX's reference evaluator run on the
// same data: pattern() matches this Python, so each pasted case can be regenerated:
//   def pat(dims, seed):
//       n = int(np.prod(dims)) if dims else 1
//       v = np.array([((i * 7 + seed * 3) % 13 - 6) / 4 for i in range(n)])
//       return v.reshape(dims).astype(np.float32)
#pragma once

#include <string>
#include <vector>

#include "test_util.h"

namespace gf::testing {

// Deterministic data in [-1.5, 1.5], multiples of 1/4: exact in every float dtype.
inline Tensor pattern(std::vector<int64_t> dims, int seed, DType dtype = DType::kF32) {
  Tensor t(DType::kF64, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<double>()[i] = static_cast<double>((i * 7 + seed * 3) % 13 - 6) / 4.0;
  }
  return to_dtype(t, dtype);
}

// A name for dtype-parameterised assertions.
inline std::string dtype_label(DType t) {
  return std::string(dtype_name(t));
}

// Loose enough for 16-bit floats (values computed in float, rounded once), tight for the rest.
inline double tolerance(DType t) {
  switch (t) {
    case DType::kF16:
      return 2e-3;
    case DType::kBF16:
      return 1e-2;
    default:
      return 1e-5;
  }
}

}  // namespace gf::testing
