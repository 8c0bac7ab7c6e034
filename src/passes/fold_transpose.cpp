#include "passes/fold_transpose.h"

#include <unordered_map>
#include <vector>

#include "ir/tensor_transpose.h"
#include "passes/compact_graph.h"
#include "passes/rewrite_util.h"

namespace gf {

namespace {

// The perm of a Transpose node, with ONNX's default (reverse the dims) filled in.
std::vector<int64_t> transpose_perm(const Graph& g, const Node& t) {
  std::vector<int64_t> perm = t.attrs.get_ints("perm");
  if (perm.empty()) {
    const auto rank = static_cast<int64_t>(g.value(t.inputs[0]).type.shape.rank());
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  return perm;
}

int fold_into_gemm(Graph& g, Node& gemm) {
  int changed = 0;
  for (size_t i = 0; i < 2; ++i) {
    const Node* t = producer_if(g, gemm.inputs[i], Op::kTranspose);
    if (t == nullptr || transpose_perm(g, *t) != std::vector<int64_t>{1, 0}) continue;
    const char* flag = i == 0 ? "transA" : "transB";
    gemm.inputs[i] = t->inputs[0];
    gemm.attrs.set(flag, int64_t{gemm.attrs.get_int(flag, 0) != 0 ? 0 : 1});
    ++changed;
  }
  return changed;
}

// `folded` maps a Transpose's output to the constant that replaces it, so a weight read by
// several MatMuls is transposed once.
int fold_into_matmul(Graph& g, NodeId matmul, std::unordered_map<ValueId, ValueId>& folded) {
  int changed = 0;
  for (size_t i = 0; i < 2; ++i) {
    const ValueId in = g.node(matmul).inputs[i];
    const Node* t = producer_if(g, in, Op::kTranspose);
    if (t == nullptr || !g.value(t->inputs[0]).is_constant()) continue;
    auto it = folded.find(in);
    if (it == folded.end()) {
      Tensor data = transpose_tensor(g.value(t->inputs[0]).constant, transpose_perm(g, *t));
      const ValueId c = g.add_constant(g.unique_value_name(g.value(in).name + "/folded"), data);
      it = folded.emplace(in, c).first;
    }
    g.node(matmul).inputs[i] = it->second;
    ++changed;
  }
  return changed;
}

}  // namespace

int fold_transposes(Graph& g) {
  int folded = 0;
  std::unordered_map<ValueId, ValueId> folded_constants;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (g.node(id).op == Op::kGemm) folded += fold_into_gemm(g, g.node(id));
    if (g.node(id).op == Op::kMatMul) folded += fold_into_matmul(g, id, folded_constants);
  }
  if (folded > 0) remove_dead_nodes(g);
  return folded;
}

}  // namespace gf
