#include "runtime/cuda/weight_layout.h"

#include <algorithm>

#include "graphfuse/error.h"

namespace gf::cuda {

namespace {

bool is_gemm_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
}

}  // namespace

bool stores_transposed(const Graph& g, ValueId w) {
  const Value& v = g.value(w);
  if (!v.is_constant() || v.constant.rank() != 2 || v.constant.numel() == 0) return false;
  const DType dtype = v.constant.dtype();
  if (!is_gemm_dtype(dtype)) return false;
  if (std::find(g.outputs().begin(), g.outputs().end(), w) != g.outputs().end()) return false;
  bool read = false;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& n = g.node(static_cast<NodeId>(i));
    if (std::find(n.inputs.begin(), n.inputs.end(), w) == n.inputs.end()) continue;
    const bool product =
        n.op == Op::kMatMul || (n.op == Op::kGemm && n.attrs.get_int("transB", 0) == 0);
    const bool as_b_only = std::count(n.inputs.begin(), n.inputs.end(), w) == 1 && n.inputs[1] == w;
    if (!product || !as_b_only || g.value(n.inputs[0]).type.dtype != dtype) return false;
    read = true;
  }
  return read;
}

}  // namespace gf::cuda
