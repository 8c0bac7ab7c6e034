// A program's weights (graph constants read on the device), uploaded once at compile time into
// one device buffer, each at a 256-byte aligned offset.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/device_buffer.h"

namespace gf::cuda {

class DeviceWeights {
 public:
  DeviceWeights() = default;
  // `values`: constants of `g` (duplicates allowed). Needs a current context; synchronous.
  DeviceWeights(const Graph& g, const std::vector<ValueId>& values);

  // The device copy of constant `v`; 0 when it was not uploaded.
  CUdeviceptr ptr(ValueId v) const;
  uint64_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
  std::unordered_map<ValueId, uint64_t> offset_;
};

}  // namespace gf::cuda
