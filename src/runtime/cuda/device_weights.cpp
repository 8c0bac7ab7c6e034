#include "runtime/cuda/device_weights.h"

#include <unordered_set>

#include "graphfuse/error.h"
#include "runtime/cuda/weight_layout.h"

namespace gf::cuda {

DeviceWeights::DeviceWeights(const Graph& g, const std::vector<ValueId>& values,
                             SessionDeviceMemory& memory) {
  std::vector<ValueId> distinct;
  std::unordered_set<ValueId> seen;
  std::vector<SessionDeviceMemory::WeightRequest> requests;
  for (ValueId v : values) {
    GF_ASSERT(g.value(v).is_constant(), "only constants are uploaded as weights");
    if (!seen.insert(v).second) continue;
    distinct.push_back(v);
    requests.push_back({&g.value(v).constant, g.value(v).name, stores_transposed(g, v)});
  }
  std::vector<std::shared_ptr<const DeviceBuffer>> buffers = memory.weights(requests);
  for (size_t i = 0; i < distinct.size(); ++i) {
    bytes_ += buffers[i]->bytes();
    held_.emplace(distinct[i], std::move(buffers[i]));
  }
}

CUdeviceptr DeviceWeights::ptr(ValueId v) const {
  auto it = held_.find(v);
  return it == held_.end() ? 0 : it->second->ptr();
}

}  // namespace gf::cuda
