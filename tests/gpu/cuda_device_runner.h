// Runs generated kernels on CUDA device 0 for the GPU tests, through the driver API as the
// executor will: NVRTC cubin -> CudaModule, device buffers, a device-resident buffer table, one
// cuLaunchKernel with the emitted launch config. Every CUDA call is checked (kDeviceError).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/device.h"
#include "graphfuse/tensor.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device_memory.h"

namespace gf::testing {

using gf::DeviceBuffer;

class CudaTestDevice {
 public:
  // The process's device, or nullptr (with `reason` set) when there is none.
  static CudaTestDevice* get(std::string* reason) {
    static const CudaProbe probe = probe_cuda();
    if (probe.devices.empty()) {
      if (reason) *reason = probe.reason;
      return nullptr;
    }
    static CudaTestDevice device(probe.devices.front());
    return &device;
  }

  int compute_capability() const { return compute_capability_; }
  int sm_count() const { return sm_count_; }
  codegen::NvrtcCompiler& compiler() { return compiler_; }

  // Runs `k` on `buffers` (k.buffers order): inputs are copied to the device, each output is
  // filled with `poison` bytes first (so an element the kernel does not write is caught), then
  // copied back into its host tensor.
  // `options.sm_count` is set to the device's. Returns what was emitted.
  codegen::CudaKernelSource run(const fusion::FusedKernel& k, const Graph& g,
                                std::vector<Tensor>& buffers, unsigned char poison,
                                bool round_16bit_intermediates = true,
                                codegen::CudaEmitOptions options = {}) {
    options.sm_count = sm_count_;
    options.compute_capability = compute_capability_;
    options.round_16bit_intermediates = round_16bit_intermediates;
    std::vector<bool> is_output;
    for (const fusion::KernelBuffer& b : k.buffers) is_output.push_back(b.is_output);
    codegen::CudaKernelSource src = codegen::emit_cuda_kernel(k, g, options);
    run_source(src, buffers, is_output, poison);
    return src;
  }

  // The same for any emitted source of the common ABI (an anchor kernel, say): `buffers` in the
  // kernel's table order, `is_output` marking those it writes. Each buffer starts
  // `offset_bytes` past an allocation (a multiple of 256 bytes): an odd multiple of the element
  // size gives the kernel pointers that are not vector-aligned.
  void run_source(const codegen::CudaKernelSource& src, std::vector<Tensor>& buffers,
                  const std::vector<bool>& is_output, unsigned char poison,
                  size_t offset_bytes = 0) {
    const CudaDriverApi& cu = cuda_driver();
    const codegen::CubinPtr cubin =
        compiler_.compile(src.source, compute_capability_, codegen::arch_target_of(src));
    const std::unique_ptr<CudaModule> module = CudaModule::load(*cubin, src.name);
    const CUfunction fn = module->function(src.name);
    allow_dynamic_shared_memory(fn, src.launch.dynamic_shared_bytes, src.name);
    allow_cluster_blocks(fn, src.launch.cluster_blocks, src.name);

    std::vector<std::unique_ptr<DeviceBuffer>> device;
    std::vector<CUdeviceptr> table;
    for (size_t i = 0; i < buffers.size(); ++i) {
      Tensor& t = buffers[i];
      device.push_back(std::make_unique<DeviceBuffer>(t.nbytes() + offset_bytes));
      table.push_back(device.back()->ptr() + offset_bytes);
      if (t.nbytes() == 0) continue;
      if (is_output.at(i)) {
        GF_CU(cu.cuMemsetD8(table.back(), poison, t.nbytes()));
      } else {
        GF_CU(cu.cuMemcpyHtoD(table.back(), t.raw(), t.nbytes()));
      }
    }
    DeviceBuffer table_buffer(table.size() * sizeof(CUdeviceptr));
    if (!table.empty()) {
      GF_CU(cu.cuMemcpyHtoD(table_buffer.ptr(), table.data(), table_buffer.bytes()));
    }
    if (src.launch.grid > 0) {
      CUdeviceptr table_ptr = table_buffer.ptr();
      void* params[] = {&table_ptr};
      GF_CU(cu.cuLaunchKernel(fn, src.launch.grid, 1, 1, src.launch.block, 1, 1,
                              src.launch.dynamic_shared_bytes, nullptr, params, nullptr));
    }
    GF_CU(cu.cuCtxSynchronize());
    for (size_t i = 0; i < buffers.size(); ++i) {
      Tensor& t = buffers[i];
      if (is_output[i] && t.nbytes() > 0) {
        GF_CU(cu.cuMemcpyDtoH(t.raw(), table[i], t.nbytes()));
      }
    }
  }

 private:
  explicit CudaTestDevice(const CudaDeviceInfo& info)
      : compute_capability_(info.compute_major * 10 + info.compute_minor),
        sm_count_(info.multiprocessors),
        compiler_([] {
          codegen::NvrtcOptions o;
          o.cache_dir = std::filesystem::temp_directory_path() /
                        ("gf_test_cuda_kernels_" + std::to_string(getpid()));
          return o;
        }()),
        context_(info.index) {}
  ~CudaTestDevice() {
    std::error_code ec;
    std::filesystem::remove_all(compiler_.options().cache_dir, ec);
  }

  int compute_capability_;
  int sm_count_;
  codegen::NvrtcCompiler compiler_;
  PrimaryContext context_;
};

}  // namespace gf::testing
