// A program's weights (graph constants read on the device): the session's shared device copies
// (session_device_memory.h), in the layout weight_layout.h gives, looked up once at compile time.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "graphfuse/graph.h"
#include "runtime/cuda/device_buffer.h"
#include "runtime/cuda/session_device_memory.h"

namespace gf::cuda {

class DeviceWeights {
 public:
  DeviceWeights() = default;
  // `values`: constants of `g` (duplicates allowed). Needs a current context; synchronous.
  DeviceWeights(const Graph& g, const std::vector<ValueId>& values, SessionDeviceMemory& memory);

  // The device copy of constant `v`; 0 when it was not uploaded.
  CUdeviceptr ptr(ValueId v) const;
  // Bytes of the weights this program reads (shared with the session's other programs).
  uint64_t bytes() const { return bytes_; }

 private:
  std::unordered_map<ValueId, std::shared_ptr<const DeviceBuffer>> held_;
  uint64_t bytes_ = 0;
};

}  // namespace gf::cuda
