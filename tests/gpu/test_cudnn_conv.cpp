// cuDNN convolution (runtime/cuda/cudnn_conv.h) on the device against the reference Conv, over
// the Conv cases of tests/gpu/cuda_anchor_cases.h. Skips without a device, and with a message
// in a build without cuDNN (Conv then runs as the direct kernel, tested in
// test_cuda_anchor_kernels.cpp).
#ifdef GF_HAVE_CUDA

#include "cuda_anchor_cases.h"
#include "cuda_device_runner.h"
#include "runtime/cpu/reference/interpreter.h"
#include "runtime/cuda/cudnn_conv.h"
#include "unit/test_cpu_codegen_util.h"

namespace gf {
namespace {

using testing::AnchorCase;
using testing::CudaTestDevice;
using testing::DeviceBuffer;

class CudnnConvCases : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    if (!cuda::cudnn_available()) {
      GTEST_SKIP() << "built without cuDNN (configure with -DGF_CUDNN_ROOT=<dir with "
                      "include/cudnn.h>); Conv uses the direct CUDA kernel";
    }
    std::string reason;
    device_ = CudaTestDevice::get(&reason);
    if (!device_) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  // One handle for the process, made while the test device's context is current.
  static cuda::CudnnHandle& handle() {
    static cuda::CudnnHandle h;
    return h;
  }
  CudaTestDevice* device_ = nullptr;
};

// Runs `conv` on c's inputs; the output is poisoned with NaN first.
Tensor run_cudnn(const cuda::CudnnConv& conv, const AnchorCase& c) {
  const CudaDriverApi& cu = cuda_driver();
  std::vector<std::unique_ptr<DeviceBuffer>> in;
  for (const Tensor& t : c.inputs) {
    in.push_back(std::make_unique<DeviceBuffer>(t.nbytes()));
    GF_CU(cu.cuMemcpyHtoD(in.back()->ptr(), t.raw(), t.nbytes()));
  }
  const TensorType& type = c.graph.value(c.node().outputs[0]).type;
  Tensor y(type.dtype, type.shape.static_dims());
  DeviceBuffer out(y.nbytes());
  GF_CU(cu.cuMemsetD8(out.ptr(), 0xff, y.nbytes()));
  DeviceBuffer workspace(conv.workspace_bytes());
  auto ptr = [](const DeviceBuffer& b) { return reinterpret_cast<void*>(b.ptr()); };
  conv.run(ptr(*in[0]), ptr(*in[1]), in.size() > 2 ? ptr(*in[2]) : nullptr, ptr(out),
           conv.workspace_bytes() > 0 ? ptr(workspace) : nullptr, nullptr);
  GF_CU(cu.cuCtxSynchronize());
  GF_CU(cu.cuMemcpyDtoH(y.raw(), out.ptr(), y.nbytes()));
  return y;
}

TEST_P(CudnnConvCases, MatchTheReferenceKernel) {
  const AnchorCase c = testing::conv_cases().at(GetParam());
  std::unique_ptr<cuda::CudnnConv> conv;
  try {
    conv = std::make_unique<cuda::CudnnConv>(handle(), c.node(), c.graph, /*allow_tf32=*/false);
  } catch (const Error& e) {
    // cuDNN pads both ends alike; such a node is refused and runs as the direct kernel.
    ASSERT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(c.name.find("asymmetric"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("asymmetric padding"), std::string::npos) << e.what();
    return;
  }
  const Tensor want = ref::run_node(c.node(), testing::anchor_reference_inputs(c)).at(0);
  const Tensor got = run_cudnn(*conv, c);
  testing::expect_values(got, want.dims(), testing::as_doubles(want), c.rtol, c.atol);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudnnConvCases,
                         ::testing::Range<size_t>(0, testing::conv_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return testing::conv_cases().at(info.param).name;
                         });

TEST_F(CudnnConvCases, ANonConvNodeIsAnInvalidArgument) {
  const AnchorCase c = testing::pool_cases().at(0);
  testing::expect_error([&] { cuda::CudnnConv(handle(), c.node(), c.graph, false); },
                        ErrorCode::kInvalidArgument, {"not a Conv or NhwcConv node"});
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
