// Values computed once per key by whichever thread asks first, shared by the threads that ask
// meanwhile and kept for later calls: the in-memory layer of the kernel compilers (a kernel is
// compiled once however many threads want it). A computation that throws is not kept: its
// exception reaches every thread that waited for it, and the next call computes again.
#pragma once

#include <exception>
#include <future>
#include <mutex>
#include <unordered_map>

namespace gf::codegen {

template <class Key, class Value>
class OncePerKey {
 public:
  // The value for `key`: computed by `compute()` on this thread when nobody has it yet, else
  // the one computed (or being computed) by another call.
  template <class Compute>
  Value get(const Key& key, Compute&& compute) {
    std::promise<Value> promise;
    std::shared_future<Value> future;
    bool owner = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = values_.find(key);
      if (it == values_.end()) {
        future = promise.get_future().share();
        values_.emplace(key, future);
        owner = true;
      } else {
        future = it->second;
      }
    }
    if (!owner) return future.get();  // computed, or being computed by another thread
    try {
      promise.set_value(compute());
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        values_.erase(key);  // a later call tries again
      }
      promise.set_exception(std::current_exception());
    }
    return future.get();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_future<Value>> values_;
};

}  // namespace gf::codegen
