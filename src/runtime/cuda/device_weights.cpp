#include "runtime/cuda/device_weights.h"

#include "graphfuse/error.h"
#include "runtime/cuda/weight_layout.h"

namespace gf::cuda {

DeviceWeights::DeviceWeights(const Graph& g, const std::vector<ValueId>& values,
                             SessionDeviceMemory& memory) {
  for (ValueId v : values) {
    GF_ASSERT(g.value(v).is_constant(), "only constants are uploaded as weights");
    if (held_.count(v)) continue;
    std::shared_ptr<const DeviceBuffer> b =
        memory.weight(g.value(v).constant, g.value(v).name, stores_transposed(g, v));
    bytes_ += b->bytes();
    held_.emplace(v, std::move(b));
  }
}

CUdeviceptr DeviceWeights::ptr(ValueId v) const {
  auto it = held_.find(v);
  return it == held_.end() ? 0 : it->second->ptr();
}

}  // namespace gf::cuda
