// Reference kernels: one function per op, written for obvious correctness. They are the oracle
// every other backend is tested against, so clarity wins over speed (BLAS aside).
#pragma once

#include <array>
#include <span>
#include <string>

#include "graphfuse/graph.h"

namespace gf::ref {

struct KernelArgs {
  const Node& node;
  std::span<const Tensor> inputs;  // an undefined Tensor for an omitted optional input
  std::span<Tensor> outputs;       // allocated (zeroed) with the inferred dtypes and shapes
  const Attributes& attrs() const { return node.attrs; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
};

// A data-dependent failure inside a kernel (an index out of range, say), with the node's name,
// op and input types in the message.
[[noreturn]] void kernel_fail(const KernelArgs& args, const std::string& msg,
                              ErrorCode code = ErrorCode::kInvalidArgument);

using Kernel = void (*)(const KernelArgs&);
using KernelTable = std::array<Kernel, kNumOps>;

const KernelTable& kernel_table();

// One registration function per op family (src/runtime/cpu/reference/<family>.cpp).
void register_elementwise_kernels(KernelTable& table);
void register_reduction_kernels(KernelTable& table);
void register_layout_kernels(KernelTable& table);
void register_linear_kernels(KernelTable& table);

}  // namespace gf::ref
