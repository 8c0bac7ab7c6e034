#include "runtime/cuda/session_device_memory.h"

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/weight_layout.h"

namespace gf::cuda {

std::shared_ptr<const DeviceBuffer> SessionDeviceMemory::weight(const Tensor& t,
                                                                const std::string& name,
                                                                bool transposed) {
  std::lock_guard lock(mutex_);
  const Key key{t.raw(), t.nbytes(), t.dtype(), transposed};
  if (auto it = weights_.find(key); it != weights_.end()) {
    if (std::shared_ptr<const Held> held = it->second.lock())
      return std::shared_ptr<const DeviceBuffer>(held, &held->device);
    weights_.erase(it);
  }
  // Entries of weights no program holds any more go as new ones come.
  std::erase_if(weights_, [](const auto& entry) { return entry.second.expired(); });
  auto held = std::make_shared<Held>();
  // An empty constant still gets an address of its own (kernels take every buffer's address).
  const std::string what =
      "weight '" + name + "' (" + t.type_string() + (transposed ? ", stored transposed)" : ")");
  held->device = allocate(std::max<size_t>(t.nbytes(), 1), what);
  held->host = t;
  if (t.nbytes() > 0) {
    const Tensor bytes = transposed ? transpose_matrix(t) : t;
    check_cu(cuda_driver().cuMemcpyHtoD(held->device.ptr(), bytes.raw(), bytes.nbytes()),
             "cuMemcpyHtoD (weight '" + name + "', " + std::to_string(t.nbytes()) + " bytes)");
  }
  weights_[key] = held;
  return std::shared_ptr<const DeviceBuffer>(held, &held->device);
}

std::shared_ptr<SessionArena> SessionDeviceMemory::arena() {
  std::lock_guard lock(mutex_);
  if (!arena_) arena_ = SessionArena::create(budget_);
  return arena_;
}

uint64_t SessionDeviceMemory::arena_backed_bytes() const {
  std::lock_guard lock(mutex_);
  return arena_ ? arena_->backed_bytes() : 0;
}

uint64_t SessionDeviceMemory::weight_bytes() const {
  std::lock_guard lock(mutex_);
  uint64_t bytes = 0;
  for (const auto& [key, entry] : weights_)
    if (std::shared_ptr<const Held> held = entry.lock()) bytes += held->device.bytes();
  return bytes;
}

}  // namespace gf::cuda
