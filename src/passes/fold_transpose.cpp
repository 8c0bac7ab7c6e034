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

// A 1-D int64 constant holding `dims` (a Reshape's target shape).
ValueId shape_constant(Graph& g, const std::string& base, const std::vector<int64_t>& dims) {
  return g.add_constant(g.unique_value_name(base),
                        Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
}

// MatMul(A, Transpose(W)) with W a 2-D constant [n, k] and A of static shape [..., k]: becomes
// Gemm(A', W, transB=1) with A's leading dims folded into rows (Reshapes, which are views), so
// W is read as it is stored: no transposed copy made here, none made back by a backend that
// keeps such weights [n, k], and a weight also read elsewhere (GPT-2's tied embedding) stays
// one tensor. False when the node does not have that form.
bool matmul_to_gemm_trans_b(Graph& g, NodeId matmul) {
  const Node& mm = g.node(matmul);
  const Node* t = producer_if(g, mm.inputs[1], Op::kTranspose);
  if (t == nullptr || transpose_perm(g, *t) != std::vector<int64_t>{1, 0}) return false;
  const ValueId w = t->inputs[0], a = mm.inputs[0], y = mm.outputs[0];
  // Copies: the nodes and values added below may move the graph's storage.
  const Shape a_shape = g.value(a).type.shape;
  const Shape y_shape = g.value(y).type.shape;
  if (!g.value(w).is_constant() || g.value(w).type.shape.rank() != 2 || a_shape.rank() < 2 ||
      !a_shape.is_static() || !y_shape.is_static())
    return false;
  const std::vector<int64_t> a_dims = a_shape.static_dims();
  const int64_t k = a_dims.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < a_dims.size(); ++d) rows *= a_dims[d];
  const std::string name = mm.name;  // a copy, as above
  Attributes attrs;
  attrs.set("transB", int64_t{1});
  if (a_dims.size() == 2) {
    replace_producer(g, y, Op::kGemm, g.unique_node_name(name + "/gemm"), {a, w}, std::move(attrs));
    return true;
  }
  const ValueId a_rows = add_helper_node(g, Op::kReshape, name + "/rows", {a, shape_constant(g, name + "/rows_shape", {rows, k})});
  const ValueId product = add_helper_node(g, Op::kGemm, name + "/gemm", {a_rows, w}, std::move(attrs));
  replace_producer(g, y, Op::kReshape, g.unique_node_name(name + "/unfold"),
                   {product, shape_constant(g, name + "/shape", y_shape.static_dims())});
  return true;
}

// `folded` maps a Transpose's output to the constant that replaces it, so a weight read by
// several MatMuls is transposed once.
int fold_into_matmul(Graph& g, NodeId matmul, std::unordered_map<ValueId, ValueId>& folded) {
  if (matmul_to_gemm_trans_b(g, matmul)) return 1;
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
