// transpose_tensor (ir/tensor_transpose.h) against the reference Transpose op: the batched
// path (leading dims kept, last two swapped) and the general one, every element size, sizes
// off the 64-element tiles and one large enough for threads.
#include <cstring>
#include <random>

#include "ir/tensor_transpose.h"
#include "test_util.h"

namespace gf {
namespace {

Tensor random_bits(std::mt19937& rng, const std::vector<int64_t>& dims, DType t) {
  Tensor out(t, dims);
  auto* bytes = static_cast<unsigned char*>(out.raw());
  for (size_t i = 0; i < out.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  return out;
}

TEST(TensorTranspose, EveryPathGivesTheReferenceTransposeBitForBit) {
  std::mt19937 rng(7);
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  const std::vector<Case> cases = {
      {{70, 130}, {1, 0}},             // 2-D, off the tiles
      {{1, 5}, {1, 0}},                // one row
      {{3, 65, 33}, {0, 2, 1}},        // a batch of matrices
      {{2, 3, 17, 9}, {0, 1, 3, 2}},   // two leading dims
      {{1030, 1100}, {1, 0}},          // threaded
      {{4, 5, 6}, {2, 0, 1}},          // general
      {{2, 3, 4, 5}, {0, 2, 1, 3}},    // general: heads and positions swapped
      {{0, 4}, {1, 0}},                // empty
  };
  for (DType t : {DType::kU8, DType::kF16, DType::kF32, DType::kI64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + ::testing::PrintToString(c.dims) + " perm " +
                   ::testing::PrintToString(c.perm));
      const Tensor x = random_bits(rng, c.dims, t);
      const Tensor got = transpose_tensor(x, c.perm);
      const Tensor want = testing::run_op1(Op::kTranspose, {x}, {{"perm", c.perm}});
      ASSERT_EQ(got.dims(), want.dims());
      ASSERT_EQ(got.dtype(), t);
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
    }
  }
  const Tensor m = random_bits(rng, {3, 7}, DType::kF32);
  EXPECT_EQ(std::memcmp(transpose_matrix(m).raw(), transpose_tensor(m, {1, 0}).raw(), m.nbytes()), 0);
}

}  // namespace
}  // namespace gf
