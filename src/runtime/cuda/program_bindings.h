// How a CudaProgram meets the caller's device buffers. Two kernels at the program's edges
// (codegen/cuda/kernels/bindings.cuh) connect it to the caller's addresses, which travel as
// gf_bind_in's kernel parameter: moving a built graph to new buffers is that one kernel-node
// parameter update (cuGraphExecKernelNodeSetParams), however many kernels the program has, plus
// the library calls that touch a buffer bound directly (below), and takes effect at the next
// launch like any exec update.
//
// Each input and output is either bound directly or copied:
// - Directly: the kernels that read or write the value use the caller's buffer in place.
//   gf_bind_in points their pointer-table entries at it, and a cuBLASLt call that touches it is
//   captured with the caller's address (re-captured when the address changes; the graph keeps
//   its nodes and takes their new parameters). No copy. A value can be bound directly when it is
//   its own storage, is bound once, is touched only by kernels and GEMMs, and its buffer is
//   256-byte aligned (as the arena is) and overlaps no other bound buffer (an output may be the
//   same buffer as an input: then it is copied, and the input is still read in place).
// - Copied: gf_bind_in copies the input into its arena slot, gf_bind_out copies the output out of
//   it, at the edges of the run; everything inside uses the arena.
// With the default addresses (the arena's own, used when the Session copies host tensors in and
// out) both ways come to the same, and neither kernel has anything to do. A program's own run on
// the addresses of its run before, with nothing to copy, skips gf_bind_in while no caller's graph
// holds the program (KernelTableState below): the tables already point there.
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

// Where one run finds each bound value.
struct BoundAddresses {
  std::vector<uint64_t> caller;  // inputs then outputs, as given
  std::vector<bool> direct;      // per binding: used in place
  // Whether gf_bind_in / gf_bind_out have anything to do (a copy, or table entries to point);
  // a graph may disable them when not.
  bool bind_in_needed = true;
  bool bind_out_needed = true;
  // Whether a binding is copied in or out: gf_bind_in then has more to do than point the
  // kernels' tables, which a run whose tables already point at these buffers may skip.
  bool copies = true;
};

// Where a program's kernel pointer tables point, as far as its own launches know: the addresses
// a launch of its gf_bind_in last pointed them at, while nothing else writes them. A caller's
// graph holding the program has a gf_bind_in of its own that rewrites them whenever that graph
// runs, so once the program is populated anywhere the state is unknown for good. Not
// thread-safe: the program's run mutex guards it.
class KernelTableState {
 public:
  // Whether gf_bind_in must run for a launch bound as `bound` to `addresses`: it has work, and
  // more than pointing the tables where they already point (the same addresses give the same
  // entries).
  bool bind_in_runs(const BoundAddresses& bound, std::span<const uint64_t> addresses) const;
  // A launch's gf_bind_in pointed them at `addresses`.
  void pointed_at(std::span<const uint64_t> addresses);
  // The program joined a caller's graph.
  void share() { shared_ = true; }

 private:
  std::vector<uint64_t> addresses_;
  bool known_ = false;
  bool shared_ = false;
};

// The parameter block of one gf_bind_in launch or node; kernel_params() points into it, so it
// must stay where it is while they are used.
struct BindInParams {
  std::vector<uint64_t> addresses;  // the kernel's by-value array: capacity entries
  CUdeviceptr copies = 0;
  int copy_count = 0;
  CUdeviceptr table = 0;
  int binding_count = 0;
  CUdeviceptr patches = 0;
  int patch_count = 0;
  CUdeviceptr kernel_tables = 0;

  std::array<void*, 8> kernel_params() {
    return {addresses.data(), &copies,  &copy_count,  &table,
            &binding_count,   &patches, &patch_count, &kernel_tables};
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
  // The alignment a buffer bound directly needs (the arena's: kernels and cuBLASLt's algorithms
  // were chosen for it).
  static constexpr uint64_t kDirectAlignment = 256;

  // The source to compile for `g` (codegen::binding_kernels_source); throws kUnsupported when
  // the graph has more inputs and outputs than a kernel parameter holds.
  static std::string source_for(const Graph& g);

  // `cubin` compiled from source_for(g). Needs the program's steps, arena and kernel tables
  // placed and the weights that outputs read uploaded. Throws kDeviceError / kOutOfMemory
  // naming the call.
  ProgramBindings(const Graph& g, const CudaProgramState& state, const std::string& cubin,
                  int sm_count);

  // Inputs then outputs, in graph order.
  size_t count() const { return defaults_.size(); }
  // The program's own addresses of its inputs and outputs (0 for an input nothing reads).
  const std::vector<uint64_t>& defaults() const { return defaults_; }
  // kInvalidArgument naming the value when `addresses` has the wrong count or a null address
  // where the value has bytes.
  void check(const Graph& g, std::span<const uint64_t> addresses) const;

  // Which bindings a run on `addresses` uses in place; none unless `allow_direct` (loops, ifs
  // and child graphs copy everything: re-binding reaches no node inside them but gf_bind_in).
  BoundAddresses resolve(std::span<const uint64_t> addresses, bool allow_direct) const;
  // Where `v` (a value or a view) is during a run bound by `bound` (null: the arena's own).
  CUdeviceptr address_of(const Graph& g, const CudaProgramState& st, ValueId v,
                         const BoundAddresses* bound) const;
  // Per binding, the address the library calls use: the caller's where direct, else the arena's.
  std::vector<uint64_t> library_addresses(const BoundAddresses& bound) const;
  // The library steps (indices into the program's steps) that touch a value that can be bound
  // directly: their graph nodes change with its address.
  const std::vector<size_t>& rebound_steps() const { return rebound_steps_; }
  // How many inputs and outputs can be bound directly.
  int direct_capable() const;

  CUfunction bind_in() const { return bind_in_; }
  CUfunction bind_out() const { return bind_out_; }
  CUdeviceptr table() const { return table_.ptr(); }  // the caller's addresses, on the device
  uint32_t grid() const { return grid_; }
  uint32_t block() const { return kBlock; }
  BindInParams in_params(const BoundAddresses& bound) const;
  BindOutParams out_params() const;

 private:
  static constexpr uint32_t kBlock = 256;
  // Fills capable_, binding_of_root_ and rebound_steps_; `bound` is the values of the bindings.
  void find_direct_bindings(const Graph& g, const CudaProgramState& st,
                            const std::vector<ValueId>& bound);

  size_t inputs_ = 0;
  std::vector<uint64_t> defaults_;
  std::vector<uint64_t> bytes_;  // per binding
  std::vector<bool> capable_;    // per binding: may be bound directly
  std::vector<int> binding_of_root_;  // per value: the capable binding it is the storage of, or -1
  std::vector<size_t> rebound_steps_;
  size_t capacity_ = 0;
  int in_copies_ = 0, out_copies_ = 0, patch_count_ = 0;
  CUdeviceptr kernel_tables_ = 0;
  std::unique_ptr<CudaModule> module_;
  CUfunction bind_in_ = nullptr, bind_out_ = nullptr;
  DeviceBuffer copies_;  // the input copies, then the output copies
  DeviceBuffer patches_;
  DeviceBuffer table_;
  uint32_t grid_ = 1;
};

}  // namespace gf::cuda
