// Regression tests for findings of the fuzz targets (tests/fuzz) and of the sanitizer build:
// each pins the input that broke, so the fix cannot silently regress without the fuzzers.
#include <string>

#include "graphfuse/npy.h"
#include "test_util.h"

namespace gf {
namespace {

// to_npy_bytes wrote a version 1.0 file (2-byte header length) whatever the header's size, so a
// tensor of rank ~22000 (accepted by parse_npy from a 2.0 file) came back as a corrupt file.
TEST(FuzzRegressions, NpyWithAHeaderOver64KiBRoundTripsAsVersion2) {
  const std::vector<int64_t> dims(30000, 1);
  Tensor t(DType::kF32, dims);
  t.data<float>()[0] = 2.5f;
  const std::string bytes = to_npy_bytes(t);
  EXPECT_EQ(bytes[6], '\x02');       // format 2.0
  EXPECT_EQ(bytes.size() % 64, 4u);  // header padded: data starts on a 64-byte boundary
  const Tensor back = parse_npy(bytes);
  EXPECT_EQ(back.dims(), dims);
  EXPECT_EQ(back.data<float>()[0], 2.5f);
  // Small headers keep version 1.0, which every numpy reads.
  EXPECT_EQ(to_npy_bytes(testing::f32({2}, {1, 2}))[6], '\x01');
}

}  // namespace
}  // namespace gf
