#include "runtime/cuda/session_device_memory.h"

#include <algorithm>

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/weight_upload.h"

namespace gf::cuda {

std::vector<std::shared_ptr<const DeviceBuffer>> SessionDeviceMemory::weights(
    const std::vector<WeightRequest>& requests) {
  // Under one lock to the end of the upload: another program finds a weight only once its
  // bytes are on the device.
  std::lock_guard lock(mutex_);
  // Entries of weights no program holds any more go as new ones come.
  std::erase_if(weights_, [](const auto& entry) { return entry.second.expired(); });
  std::vector<std::shared_ptr<const Held>> held(requests.size());
  std::vector<size_t> missing;
  size_t missing_bytes = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Tensor& t = *requests[i].tensor;
    const Key key{t.raw(), t.nbytes(), t.dtype(), requests[i].transposed};
    if (auto it = weights_.find(key); it != weights_.end()) held[i] = it->second.lock();
    if (!held[i]) missing.push_back(i), missing_bytes += t.nbytes();
  }
  if (!missing.empty()) {
    WeightUpload upload(missing_bytes, budget_);
    std::map<Key, std::shared_ptr<Held>> made;
    for (size_t i : missing) {
      const WeightRequest& r = requests[i];
      const Tensor& t = *r.tensor;
      const Key key{t.raw(), t.nbytes(), t.dtype(), r.transposed};
      if (const auto it = made.find(key); it != made.end()) {  // the same bytes asked twice
        held[i] = it->second;
        continue;
      }
      auto h = std::make_shared<Held>();
      // An empty constant still gets an address of its own (kernels take every buffer's
      // address).
      const std::string what = "weight '" + r.name + "' (" + t.type_string() +
                               (r.transposed ? ", stored transposed)" : ")");
      h->device = allocate(std::max<size_t>(t.nbytes(), 1), what);
      h->host = t;
      upload.copy(h->device.ptr(), t, r.transposed, what);
      held[i] = h;
      made.emplace(key, std::move(h));
    }
    upload.finish();
    for (auto& [key, h] : made) weights_[key] = h;
  }
  std::vector<std::shared_ptr<const DeviceBuffer>> out;
  out.reserve(held.size());
  for (const std::shared_ptr<const Held>& h : held)
    out.push_back(std::shared_ptr<const DeviceBuffer>(h, &h->device));
  return out;
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
