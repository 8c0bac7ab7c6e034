// What the DeviceProgram GPU tests share: device memory at an offset, caller buffers for a
// program's inputs and outputs, a comparison of device bytes with a host tensor, and a small
// model with GEMMs and kernels. Included by test_device_program*.cpp and
// test_tensor_core_gemm.cpp.
#pragma once

#ifdef GF_HAVE_CUDA

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "graphfuse/builder.h"
#include "graphfuse/cuda_graph.h"
#include "graphfuse/session.h"

namespace gf {
namespace {

#define CK(call) ASSERT_EQ((call), cudaSuccess) << #call

inline Tensor normal(std::mt19937& rng, std::vector<int64_t> dims) {
  return testing::normal_f32(rng, std::move(dims));
}

// Two inputs, two outputs; the inputs feed cuBLASLt GEMMs directly (library calls must never
// see a caller's address) and a generated kernel; one output is a GEMM's, one a kernel's.
inline Graph two_branch_model(std::mt19937& rng) {
  GraphBuilder b("two_branches");
  const ValueId x = b.input("x", DType::kF32, Shape{48, 80});
  const ValueId y = b.input("y", DType::kF32, Shape{48, 80});
  const ValueId w = b.constant("w", normal(rng, {80, 72}));
  const ValueId bias = b.constant("bias", normal(rng, {72}));
  const ValueId left = b.gelu(b.add(b.matmul(x, w), bias), false);
  const ValueId right = b.matmul(b.mul(y, y), w);
  b.output(b.add(left, right), "sum");
  b.output(b.unary(Op::kTanh, x), "tanh_x");
  return b.build();
}

// Device memory with an offset (so that caller buffers need not be aligned), freed at exit.
class DeviceMemory {
 public:
  DeviceMemory(size_t bytes, size_t offset) : offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, bytes + offset), cudaSuccess);
    EXPECT_EQ(cudaMemset(base_, 0, bytes + offset), cudaSuccess);
  }
  ~DeviceMemory() { cudaFree(base_); }
  void* get() const { return static_cast<char*>(base_) + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_;
};

struct Buffers {
  std::vector<std::unique_ptr<DeviceMemory>> in, out;
  DeviceBindings bindings() const {
    DeviceBindings b;
    for (const auto& m : in) b.inputs.push_back(m->get());
    for (const auto& m : out) b.outputs.push_back(m->get());
    return b;
  }
};

inline Buffers make_buffers(const std::vector<Tensor>& inputs, const DeviceProgram& p,
                            size_t offset) {
  Buffers b;
  for (const Tensor& t : inputs) {
    b.in.push_back(std::make_unique<DeviceMemory>(t.nbytes(), offset));
    EXPECT_EQ(cudaMemcpy(b.in.back()->get(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  for (const TensorType& t : p.output_types()) {
    b.out.push_back(std::make_unique<DeviceMemory>(
        static_cast<size_t>(t.shape.numel()) * dtype_size(t.dtype), offset));
  }
  // The memsets and copies above go on the legacy default stream, which the tests' non-blocking
  // streams do not wait for (and a copy from pageable memory may return before its DMA lands):
  // without this, a zeroing memset could land after a run wrote its outputs.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return b;
}

inline void expect_device_equals(const void* device, const Tensor& want) {
  std::vector<char> got(want.nbytes());
  ASSERT_EQ(cudaMemcpy(got.data(), device, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::memcmp(got.data(), want.raw(), got.size()), 0);
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
