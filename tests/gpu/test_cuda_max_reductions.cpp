// Max and Min reductions on the GPU (label gpu) over rows that hold the special values: a NaN in
// some rows (the result is NaN), rows of -inf or +inf only, zeros of both signs, the largest
// finite values. ReduceMax, ReduceMin and Softmax, in f32 and bf16, at row lengths that take each
// row schedule: a warp per row (37, 1024), a block per row with the row in registers (5000) and a
// looped row (20000 f32). Every element must equal the reference interpreter's, NaN for NaN
// (zeros compare equal whatever their sign: the reduction order is not the reference's).
#ifdef GF_HAVE_CUDA

#include <cmath>
#include <limits>
#include <random>

#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/session.h"
#include "runtime/cpu/reference/interpreter.h"
#include "test_util.h"

namespace gf {
namespace {

class CudaMaxReductions : public testing::CudaDeviceTest {};

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMax = std::numeric_limits<float>::max();

// Rows of `row` values in [-3, 3] with, by row: a NaN somewhere (0, 5), NaN first and last (1),
// all -inf (2), all +inf (3), zeros of both signs only (4), -inf beside finite values (6), the
// largest finite magnitudes (7); the others plain.
Tensor special_rows(int64_t rows, int64_t row) {
  Tensor x(DType::kF32, {rows, row});
  std::mt19937 rng(static_cast<uint32_t>(rows * 131 + row));
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = dist(rng);
  auto at = [&](int64_t r, int64_t c) -> float& { return p[r * row + c]; };
  at(0, row / 2) = kNaN;
  at(1, 0) = kNaN;
  at(1, row - 1) = kNaN;
  for (int64_t c = 0; c < row; ++c) {
    at(2, c) = -kInf;
    at(3, c) = kInf;
    at(4, c) = c % 3 == 0 ? -0.0f : 0.0f;
  }
  at(5, row - 1) = kNaN;
  for (int64_t c = 0; c < row; c += 2) at(6, c) = -kInf;
  at(7, row / 3) = kMax;
  at(7, row / 4) = -kMax;
  return x;
}

Graph reduction_graph(Op op, DType t, int64_t rows, int64_t row) {
  GraphBuilder b("max_reductions");
  const ValueId x = b.input("x", t, Shape{rows, row});
  b.output(op == Op::kSoftmax ? b.softmax(x) : b.reduce(op, x, {-1}, true), "y");
  return b.build();
}

void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  const Tensor g = got.dtype() == DType::kF32 ? got : testing::to_dtype(got, DType::kF32);
  const Tensor w = want.dtype() == DType::kF32 ? want : testing::to_dtype(want, DType::kF32);
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i) {
    const float a = g.data<float>()[i], b = w.data<float>()[i];
    const bool same = std::isnan(b) ? std::isnan(a) : a == b;
    if (!same) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", the reference's " << b;
    }
  }
}

TEST_F(CudaMaxReductions, SpecialValuesGiveTheReferencesResultInEveryRowSchedule) {
  for (DType t : {DType::kF32, DType::kBF16}) {
    for (int64_t row : {37, 1024, 5000, 20000}) {
      if (row == 20000 && t != DType::kF32) continue;
      const Tensor x = testing::to_dtype(special_rows(9, row), t);
      for (Op op : {Op::kReduceMax, Op::kReduceMin, Op::kSoftmax}) {
        const std::string what = std::string(op_name(op)) + " " + std::string(dtype_name(t)) +
                                 " rows of " + std::to_string(row);
        const Graph g = reduction_graph(op, t, 9, row);
        Session session(g, SessionOptions{Device::kCuda});
        const Tensor got = session.run({x})[0];
        EXPECT_EQ(session.stats().fused_kernels, 1) << what;
        const Tensor want = ref::run_graph(g, std::vector<Tensor>{x})[0];
        if (op != Op::kSoftmax) {
          expect_same_values(got, want, what);
          continue;
        }
        // Softmax: the NaN and infinite rows exactly (NaN), the others within bf16/f32 rounding.
        const Tensor g32 = testing::to_dtype(got, DType::kF32),
                     w32 = testing::to_dtype(want, DType::kF32);
        const double tol = t == DType::kF32 ? 1e-5 : 1e-2;
        for (int64_t i = 0; i < g32.numel(); ++i) {
          const float a = g32.data<float>()[i], b = w32.data<float>()[i];
          if (std::isnan(b)) {
            ASSERT_TRUE(std::isnan(a)) << what << ": element " << i << " is " << a << ", not NaN";
          } else {
            ASSERT_NEAR(a, b, tol * (1 + std::fabs(b))) << what << ": element " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
