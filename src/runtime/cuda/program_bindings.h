// How a CudaProgram meets the caller's device buffers. The program computes in its own arena;
// two kernels at its edges (codegen/cuda/kernels/bindings.cuh) connect it to the caller's
// addresses: gf_bind_in copies the inputs in and keeps the addresses in a small device table,
// gf_bind_out copies the outputs out to the addresses in that table. The addresses travel as
// gf_bind_in's kernel parameter, so moving a built graph to new buffers is one kernel-node
// parameter update (cuGraphExecKernelNodeSetParams), however many kernels the program has, and
// takes effect at the next launch like any exec update. Library calls (cuBLASLt, cuDNN) never
// see a caller's address, so nothing else needs updating.
//
// The price is a copy of the inputs and outputs through the arena. With the default addresses
// (the arena's own, used when the Session copies host tensors in and out) both kernels find
// source = destination everywhere and do nothing.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/device_buffer.h"

namespace gf::cuda {

struct CudaProgramState;

// The parameter block of one gf_bind_in launch or node; kernel_params() points into it, so it
// must stay where it is while they are used.
struct BindInParams {
  std::vector<uint64_t> addresses;  // the kernel's by-value array: capacity entries
  CUdeviceptr copies = 0;
  int copy_count = 0;
  CUdeviceptr table = 0;
  int binding_count = 0;

  std::array<void*, 5> kernel_params() {
    return {addresses.data(), &copies, &copy_count, &table, &binding_count};
  }
};

struct BindOutParams {
  CUdeviceptr copies = 0;
  int copy_count = 0;
  CUdeviceptr table = 0;

  std::array<void*, 3> kernel_params() { return {&copies, &copy_count, &table}; }
};

class ProgramBindings {
 public:
  // The source to compile for `g` (codegen::binding_kernels_source); throws kUnsupported when
  // the graph has more inputs and outputs than a kernel parameter holds.
  static std::string source_for(const Graph& g);

  // `cubin` compiled from source_for(g). Needs the program's arena placed and the weights that
  // outputs read uploaded. Throws kDeviceError / kOutOfMemory naming the call.
  ProgramBindings(const Graph& g, const CudaProgramState& state, const std::string& cubin,
                  int sm_count);

  // Inputs then outputs, in graph order.
  size_t count() const { return defaults_.size(); }
  // The program's own addresses of its inputs and outputs (0 for an input nothing reads).
  const std::vector<uint64_t>& defaults() const { return defaults_; }
  // kInvalidArgument naming the value when `addresses` has the wrong count or a null address
  // where the value has bytes.
  void check(const Graph& g, std::span<const uint64_t> addresses) const;

  CUfunction bind_in() const { return bind_in_; }
  CUfunction bind_out() const { return bind_out_; }
  CUdeviceptr table() const { return table_.ptr(); }  // the caller's addresses, on the device
  uint32_t grid() const { return grid_; }
  uint32_t block() const { return kBlock; }
  BindInParams in_params(std::span<const uint64_t> addresses) const;
  BindOutParams out_params() const;

 private:
  static constexpr uint32_t kBlock = 256;
  std::vector<uint64_t> defaults_;
  std::vector<uint64_t> bytes_;  // per binding
  size_t capacity_ = 0;
  int in_copies_ = 0, out_copies_ = 0;
  std::unique_ptr<CudaModule> module_;
  CUfunction bind_in_ = nullptr, bind_out_ = nullptr;
  DeviceBuffer copies_;  // the input copies, then the output copies
  DeviceBuffer table_;
  uint32_t grid_ = 1;
};

}  // namespace gf::cuda
