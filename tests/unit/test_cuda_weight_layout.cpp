// How the CUDA executor lays out product weights on the device (runtime/cuda/weight_layout.h)
// and how plan_gemm reads them, without a GPU: which constants are stored [n, k], the host
// transpose against the reference Transpose, and the product the device computes from those
// bytes (the reference Gemm with transB on them, as the plan says) against the reference run of
// the graph as given. The GPU runs are tests/gpu/test_cuda_weight_layout.cpp.
#ifdef GF_HAVE_CUDA

#include <cstring>
#include <random>

#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/weight_layout.h"
#include "test_util.h"

namespace gf {
namespace {

Tensor uniform(std::mt19937& rng, std::vector<int64_t> dims, DType dtype) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> d(-1, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return testing::to_dtype(t, dtype);
}

int64_t product_of(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

NodeId first_node_of(const Graph& g, Op op) {
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (g.node(static_cast<NodeId>(i)).op == op) return static_cast<NodeId>(i);
  return kNoNode;
}

TEST(CudaWeightLayout, TransposeMatrixIsTheReferenceTranspose) {
  std::mt19937 rng(1);
  // Sizes off the 64-element tiles, one row, one column, and one large enough for threads.
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (std::vector<int64_t> dims :
         {std::vector<int64_t>{70, 130}, {1, 5}, {129, 1}, {64, 64}, {1030, 1100}}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(dims[0]) + "x" +
                   std::to_string(dims[1]));
      const Tensor w = uniform(rng, dims, t);
      const Tensor got = transpose_matrix(w);
      const Tensor want =
          testing::run_op1(Op::kTranspose, {w}, {{"perm", std::vector<int64_t>{1, 0}}});
      ASSERT_EQ(got.dims(), want.dims());
      ASSERT_EQ(got.dtype(), t);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
    }
  }
}

// A [..., k] times a constant W [k, n] (MatMul, or Gemm with transB 0 and a bias row): the
// device reads W^T [n, k] with trans_b; those bytes through the reference Gemm (transB = 1) on
// A's rows give the graph's result.
TEST(CudaWeightLayout, TheProductOfTheStoredBytesIsTheGraphs) {
  std::mt19937 rng(2);
  const int64_t k = 37, n = 21;
  struct Case {
    Op op;
    std::vector<int64_t> a;
  };
  const Case cases[] = {
      {Op::kMatMul, {5, k}}, {Op::kMatMul, {2, 3, k}}, {Op::kMatMul, {k}}, {Op::kGemm, {6, k}}};
  for (DType t : {DType::kF32, DType::kF16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::string(op_name(c.op)) + " of A rank " +
                   std::to_string(c.a.size()));
      GraphBuilder b;
      const ValueId a = b.input("a", t, Shape::from_static(c.a));
      const Tensor w = uniform(rng, {k, n}, t), bias = uniform(rng, {n}, t);
      const ValueId wv = b.constant("w", w);
      b.output(c.op == Op::kMatMul ? b.matmul(a, wv)
                                   : b.op1(Op::kGemm, {a, wv, b.constant("bias", bias)}),
               "y");
      const Graph g = b.build();
      const Tensor x = uniform(rng, c.a, t);
      const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];

      ASSERT_TRUE(cuda::stores_transposed(g, wv));
      const cuda::GemmPlan p = cuda::plan_gemm(g, g.node(first_node_of(g, c.op)), false);
      EXPECT_TRUE(p.spec.trans_b);
      EXPECT_EQ(p.b, wv);
      const int64_t rows = product_of(c.a) / k;
      EXPECT_EQ(p.spec.m, rows);
      EXPECT_EQ(p.spec.n, n);
      EXPECT_EQ(p.spec.k, k);
      ASSERT_EQ(p.calls.size(), 1u);

      const Tensor stored = transpose_matrix(w);
      ASSERT_EQ(stored.dims(), (std::vector<int64_t>{n, k}));
      std::vector<Tensor> in{x.reshaped({rows, k}), stored};
      if (c.op == Op::kGemm) in.push_back(bias);
      const Tensor got = testing::run_op1(Op::kGemm, in, {{"transB", int64_t{1}}});
      // The same sums in the same order; f16 results round from the same f32 sums.
      testing::expect_values(got.reshaped(want.dims()), want.dims(), testing::doubles(want), 1e-6,
                             1e-6);
    }
  }
}

TEST(CudaWeightLayout, AWeightReadByTwoProductsIsStoredTransposedOnce) {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape{3, 8});
  const ValueId w = b.constant("w", Tensor(DType::kF32, {8, 8}));
  b.output(b.matmul(x, w), "y");
  b.output(b.matmul(b.unary(Op::kRelu, x), w), "z");
  const Graph g = b.build();
  EXPECT_TRUE(cuda::stores_transposed(g, w));
  int products = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node& node = g.node(static_cast<NodeId>(i));
    if (node.op != Op::kMatMul) continue;
    const cuda::GemmPlan p = cuda::plan_gemm(g, node, false);
    EXPECT_TRUE(p.spec.trans_b);
    EXPECT_EQ(p.b, w);  // one constant, so one device copy (DeviceWeights holds it per value)
    ++products;
  }
  EXPECT_EQ(products, 2);
}

TEST(CudaWeightLayout, WeightsReadOtherwiseKeepTheirLayout) {
  auto plan_of_first = [](const Graph& g, Op op) {
    return cuda::plan_gemm(g, g.node(first_node_of(g, op)), false);
  };
  {  // B computed at run time (here an input): read as given.
    GraphBuilder b;
    const ValueId w = b.input("w", DType::kF32, Shape{8, 4});
    b.output(b.matmul(b.input("x", DType::kF32, Shape{2, 8}), w));
    const Graph g = b.build();
    EXPECT_FALSE(cuda::stores_transposed(g, w));
    EXPECT_FALSE(plan_of_first(g, Op::kMatMul).spec.trans_b);
  }
  {  // Also read by an Add: a generated kernel would read the [k, n] bytes.
    GraphBuilder b;
    const ValueId w = b.constant("w", Tensor(DType::kF32, {4, 4}));
    const ValueId x = b.input("x", DType::kF32, Shape{4, 4});
    b.output(b.matmul(x, w));
    b.output(b.add(x, w));
    const Graph g = b.build();
    EXPECT_FALSE(cuda::stores_transposed(g, w));
    EXPECT_FALSE(plan_of_first(g, Op::kMatMul).spec.trans_b);
  }
  {  // A graph output: copied out of the device as it is.
    GraphBuilder b;
    const ValueId w = b.constant("w", Tensor(DType::kF32, {8, 4}));
    b.output(b.matmul(b.input("x", DType::kF32, Shape{2, 8}), w));
    b.output(w);
    EXPECT_FALSE(cuda::stores_transposed(b.build(), w));
  }
  {  // Read as A by another product.
    GraphBuilder b;
    const ValueId w = b.constant("w", Tensor(DType::kF32, {4, 4}));
    b.output(b.matmul(b.input("x", DType::kF32, Shape{2, 4}), w));
    b.output(b.matmul(w, b.input("y", DType::kF32, Shape{4, 3})));
    EXPECT_FALSE(cuda::stores_transposed(b.build(), w));
  }
  {  // A Gemm with transB already reads W [n, k]; a batched (3-D) weight is no matrix.
    GraphBuilder b;
    const ValueId w = b.constant("w", Tensor(DType::kF32, {4, 8}));
    const ValueId batched = b.constant("wb", Tensor(DType::kF32, {2, 8, 4}));
    b.output(
        b.op1(Op::kGemm, {b.input("x", DType::kF32, Shape{2, 8}), w}, {{"transB", int64_t{1}}}));
    b.output(b.matmul(b.input("z", DType::kF32, Shape{2, 3, 8}), batched));
    const Graph g = b.build();
    EXPECT_FALSE(cuda::stores_transposed(g, w));
    const cuda::GemmPlan p = plan_of_first(g, Op::kGemm);
    EXPECT_TRUE(p.spec.trans_b);
    EXPECT_EQ(p.spec.n, 4);
    EXPECT_FALSE(cuda::stores_transposed(g, batched));
    EXPECT_FALSE(plan_of_first(g, Op::kMatMul).spec.trans_b);
  }
  {  // Integers: no cuBLASLt product.
    GraphBuilder b;
    const ValueId w = b.constant("w", Tensor(DType::kI32, {8, 4}));
    b.output(b.matmul(b.input("x", DType::kI32, Shape{2, 8}), w));
    EXPECT_FALSE(cuda::stores_transposed(b.build(), w));
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
