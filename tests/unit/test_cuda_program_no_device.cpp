// The CUDA executor on a machine without a GPU: building a program, or a CUDA session, is a
// clean kDeviceError naming the reason, and the process stays usable (the CPU path runs after).
#ifdef GF_HAVE_CUDA

#include "runtime/cuda/cuda_program.h"
#include "test_util.h"

namespace gf {
namespace {

Graph relu_graph() {
  GraphBuilder b;
  b.output(b.op1(Op::kRelu, {b.input("x", DType::kF32, Shape{2})}), "y");
  return b.build();
}

TEST(CudaProgramWithoutDevice, IsADeviceErrorAndTheCpuPathStillRuns) {
  if (!probe_cuda().devices.empty()) GTEST_SKIP() << "a CUDA device is present";
  testing::expect_error([] { cuda::CudaProgram program(relu_graph()); }, ErrorCode::kDeviceError, {"CUDA"});
  SessionOptions options{Device::kCuda};
  options.precision = Precision::kBf16;
  testing::expect_error([&] { Session s(relu_graph(), options); }, ErrorCode::kDeviceError,
                        {"cannot run on cuda"});
  Session cpu(relu_graph());
  testing::expect_values(cpu.run({testing::f32({2}, {-1, 3})})[0], {2}, {0, 3});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
