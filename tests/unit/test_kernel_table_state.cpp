// When a program's own launch may skip gf_bind_in (runtime/cuda/program_bindings.h,
// KernelTableState): only where its one job would be to point the kernels' tables where a launch
// of the program last pointed them, and never once a caller's graph holds the program. The GPU
// side (the runs' results across such sequences) is tests/gpu/test_device_program_bindings.cpp.
#ifdef GF_HAVE_CUDA

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/cuda/program_bindings.h"

namespace gf::cuda {
namespace {

BoundAddresses bound(bool bind_in_needed, bool copies) {
  BoundAddresses b;
  b.bind_in_needed = bind_in_needed;
  b.copies = copies;
  return b;
}

const std::vector<uint64_t> kA = {0x10000, 0x20000}, kB = {0x10000, 0x30000};

TEST(KernelTableState, UnknownTablesArePointedFirst) {
  const KernelTableState tables;
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), kA));
  EXPECT_FALSE(tables.bind_in_runs(bound(false, false), kA));  // nothing to do at all
}

TEST(KernelTableState, TheSameAddressesSkipOnlyWhenNothingIsCopied) {
  KernelTableState tables;
  tables.pointed_at(kA);
  EXPECT_FALSE(tables.bind_in_runs(bound(true, false), kA));
  EXPECT_TRUE(tables.bind_in_runs(bound(true, true), kA));  // a copy each run
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), kB));
  tables.pointed_at(kB);
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), kA));
  EXPECT_FALSE(tables.bind_in_runs(bound(true, false), kB));
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), std::vector<uint64_t>{0x10000}));
}

TEST(KernelTableState, ACallersGraphMakesEveryLaunchPointThem) {
  KernelTableState tables;
  tables.pointed_at(kA);
  tables.share();
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), kA));
  tables.pointed_at(kA);
  EXPECT_TRUE(tables.bind_in_runs(bound(true, false), kA));
  EXPECT_FALSE(tables.bind_in_runs(bound(false, false), kA));
}

}  // namespace
}  // namespace gf::cuda

#endif  // GF_HAVE_CUDA
