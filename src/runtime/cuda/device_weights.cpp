#include "runtime/cuda/device_weights.h"

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/memory_plan.h"

namespace gf::cuda {

DeviceWeights::DeviceWeights(const Graph& g, const std::vector<ValueId>& values) {
  uint64_t end = 0;
  for (ValueId v : values) {
    GF_ASSERT(g.value(v).is_constant(), "only constants are uploaded as weights");
    if (offset_.count(v)) continue;
    offset_.emplace(v, end);
    const uint64_t bytes = g.value(v).constant.nbytes();
    end += (std::max<uint64_t>(bytes, 1) + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  buffer_ = DeviceBuffer(end, "the weights of '" + g.name + "'");
  const CudaDriverApi& cu = cuda_driver();
  for (const auto& [v, offset] : offset_) {
    const Tensor& t = g.value(v).constant;
    if (t.nbytes() == 0) continue;
    check_cu(cu.cuMemcpyHtoD(buffer_.ptr() + offset, t.raw(), t.nbytes()),
             "cuMemcpyHtoD (weight '" + g.value(v).name + "', " + std::to_string(t.nbytes()) + " bytes)");
  }
}

CUdeviceptr DeviceWeights::ptr(ValueId v) const {
  auto it = offset_.find(v);
  return it == offset_.end() ? 0 : buffer_.ptr() + it->second;
}

}  // namespace gf::cuda
