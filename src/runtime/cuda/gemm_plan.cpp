#include "runtime/cuda/gemm_plan.h"

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/weight_layout.h"

namespace gf::cuda {

namespace {

[[noreturn]] void refuse(const Graph& g, const Node& n, const std::string& why) {
  throw Error(ErrorCode::kUnsupported, describe_node(g, n) + ": no cuBLASLt GEMM: " + why);
}

std::vector<int64_t> dims_of(const Graph& g, ValueId v) { return g.value(v).type.shape.static_dims(); }

int64_t product(const std::vector<int64_t>& d) {
  int64_t p = 1;
  for (int64_t x : d) p *= x;
  return p;
}

void plan_matmul(const Graph& g, const Node& n, GemmPlan& p) {
  std::vector<int64_t> a = dims_of(g, n.inputs[0]), b = dims_of(g, n.inputs[1]);
  if (a.size() == 1) a.insert(a.begin(), 1);  // numpy: a vector is a row of A ...
  if (b.size() == 1) b.push_back(1);          // ... and a column of B
  const int64_t m = a[a.size() - 2], k = a.back(), n_cols = b.back();
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  a_batch.insert(a_batch.begin(), rank - a_batch.size(), 1);
  b_batch.insert(b_batch.begin(), rank - b_batch.size(), 1);
  std::vector<int64_t> out_batch(rank);
  for (size_t i = 0; i < rank; ++i) out_batch[i] = std::max(a_batch[i], b_batch[i]);
  const int64_t batch = product(out_batch);
  GemmSpec& s = p.spec;
  s.m = m;
  s.n = n_cols;
  s.k = k;
  if (product(b_batch) == 1) {
    // One B for all: the batch folds into A's rows, which are contiguous. A constant weight is
    // on the device as [n, k] when weight_layout.h says so.
    s.m = m * batch;
    s.trans_b = stores_transposed(g, n.inputs[1]);
    p.calls.push_back({});
  } else if (a_batch == out_batch && b_batch == out_batch) {
    s.batch = batch;
    p.calls.push_back({});
  } else {
    // Broadcast batch dims: one call per output entry, each operand at its broadcast index.
    for (int64_t o = 0; o < batch; ++o) {
      int64_t rest = o, ai = 0, bi = 0, a_stride = 1, b_stride = 1;
      for (size_t d = rank; d-- > 0;) {
        const int64_t idx = rest % out_batch[d];
        rest /= out_batch[d];
        if (a_batch[d] != 1) ai += idx * a_stride;
        if (b_batch[d] != 1) bi += idx * b_stride;
        a_stride *= a_batch[d];
        b_stride *= b_batch[d];
      }
      p.calls.push_back({ai * m * k, bi * k * n_cols, o * m * n_cols});
    }
  }
}

void plan_gemm_node(const Graph& g, const Node& n, GemmPlan& p) {
  const float alpha = n.attrs.get_float("alpha", 1.0f), beta = n.attrs.get_float("beta", 1.0f);
  const bool trans_a = n.attrs.get_int("transA", 0) != 0, trans_b = n.attrs.get_int("transB", 0) != 0;
  // A constant weight may be on the device as [n, k] (weight_layout.h): B^T then.
  const bool stored_transposed = !trans_b && stores_transposed(g, n.inputs[1]);
  const std::vector<int64_t> a = dims_of(g, n.inputs[0]), b = dims_of(g, n.inputs[1]);
  GemmSpec& s = p.spec;
  s.trans_a = trans_a;
  s.trans_b = trans_b || stored_transposed;
  s.m = trans_a ? a[1] : a[0];
  s.k = trans_a ? a[0] : a[1];
  s.n = trans_b ? b[0] : b[1];
  if (alpha != 1.0f) refuse(g, n, "alpha " + std::to_string(alpha) + " is not 1");
  const ValueId c = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  if (c != kNoValue && beta != 0.0f) {
    const std::vector<int64_t> cd = dims_of(g, c);
    const bool row = (cd.size() == 1 && cd[0] == s.n) || (cd.size() == 2 && cd[0] == 1 && cd[1] == s.n);
    if (!row || beta != 1.0f) refuse(g, n, "C is not a bias of [N] with beta 1");
    if (g.value(c).type.dtype != s.dtype) refuse(g, n, "the bias has another dtype");
    s.epilogue = GemmEpilogue::kBias;
    p.bias = c;
  }
  p.calls.push_back({});
}

}  // namespace

GemmPlan plan_gemm(const Graph& g, const Node& node, bool allow_tf32) {
  GF_ASSERT(node.op == Op::kMatMul || node.op == Op::kGemm, "plan_gemm takes MatMul or Gemm");
  GemmPlan p;
  p.a = node.inputs[0];
  p.b = node.inputs[1];
  p.c = node.outputs[0];
  const DType dtype = g.value(p.a).type.dtype;
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    refuse(g, node, "dtype " + std::string(dtype_name(dtype)) + " (cuBLASLt takes f32, f16, bf16)");
  }
  p.spec.dtype = dtype;
  p.spec.allow_tf32 = allow_tf32;
  if (node.op == Op::kMatMul) {
    plan_matmul(g, node, p);
  } else {
    plan_gemm_node(g, node, p);
  }
  if (p.spec.m <= 0 || p.spec.n <= 0 || p.spec.k <= 0) refuse(g, node, "an empty dimension");
  // cuBLASLt's heuristic assumes operands aligned as allocations are (kGemmOperandAlignment);
  // per-entry offsets of a broadcast batch may not be.
  const auto es = static_cast<int64_t>(dtype_size(dtype));
  for (const GemmCall& c : p.calls) {
    for (int64_t offset : {c.a_offset, c.b_offset, c.c_offset}) {
      if (offset * es % kGemmOperandAlignment != 0) {
        refuse(g, node, "a broadcast batch entry at byte offset " + std::to_string(offset * es) +
                            " is not " + std::to_string(kGemmOperandAlignment) + "-byte aligned");
      }
    }
  }
  return p;
}

}  // namespace gf::cuda
