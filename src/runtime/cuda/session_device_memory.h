// What the CUDA programs of one session (one per set of input shapes) share on the device:
//   - the weights: a constant is uploaded once, however many programs read it, and freed when
//     the last program that reads it is;
//   - the budget (SessionOptions::device_memory_limit_bytes) that every device buffer of those
//     programs is charged to, so a session cannot take more than its cap;
//   - the arena their intermediates live in (session_arena.h), as large as the largest needs.
// Thread-safe: programs may be compiled on several threads at once.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "graphfuse/tensor.h"
#include "runtime/cuda/device_buffer.h"
#include "runtime/cuda/session_arena.h"

namespace gf::cuda {

class SessionDeviceMemory {
 public:
  explicit SessionDeviceMemory(uint64_t limit_bytes = 0)
      : budget_(std::make_shared<DeviceMemoryBudget>(limit_bytes)) {}

  // Device memory charged to the session's budget.
  DeviceBuffer allocate(size_t bytes, const std::string& what) const {
    return DeviceBuffer(bytes, what, budget_);
  }
  const std::shared_ptr<DeviceMemoryBudget>& budget() const { return budget_; }

  // The programs' shared arena, made on first use (needs a current context).
  std::shared_ptr<SessionArena> arena();
  uint64_t arena_backed_bytes() const;  // 0 before the arena is made

  // One constant a program reads on the device: `tensor` (named `name` in errors), as it is or
  // as its 2-D transpose (weight_layout.h), which is a weight of its own.
  struct WeightRequest {
    const Tensor* tensor = nullptr;
    std::string name;
    bool transposed = false;
  };
  // The device copies of `requests`, in order: those not held yet uploaded in one go
  // (weight_upload.h), all complete on return, and each shared while any program holds it.
  // Two constants are the same weight when they are the same host bytes: a specialised graph's
  // constants share the session graph's storage (and precision conversion is memoised,
  // convert_precision.h), while a constant folded anew for one set of shapes is that program's
  // own. Needs a current context.
  std::vector<std::shared_ptr<const DeviceBuffer>> weights(
      const std::vector<WeightRequest>& requests);

  // Bytes of the distinct weights held now.
  uint64_t weight_bytes() const;

 private:
  // Keeps the host bytes alive with their device copy, so that the key's address cannot be
  // reused by another tensor while the entry can be found.
  struct Held {
    DeviceBuffer device;
    Tensor host;
  };
  using Key = std::tuple<const void*, size_t, DType, bool>;

  std::shared_ptr<DeviceMemoryBudget> budget_;
  mutable std::mutex mutex_;
  std::map<Key, std::weak_ptr<const Held>> weights_;
  std::shared_ptr<SessionArena> arena_;
};

}  // namespace gf::cuda
