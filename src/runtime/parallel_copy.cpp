#include "runtime/parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <system_error>

namespace gf {

ParallelCopy::ParallelCopy(unsigned threads, size_t min_split_bytes)
    : min_split_bytes_(min_split_bytes) {
  try {
    for (size_t i = 1; i < threads; ++i) helpers_.emplace_back([this, i] { work(i); });
  } catch (const std::system_error&) {
    // Fewer helpers than asked: the parts are split over those that started.
  }
}

ParallelCopy::~ParallelCopy() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void ParallelCopy::operator()(char* dst, const char* src, size_t bytes) {
  if (bytes == 0) return;  // memcpy's pointers must be valid even for no bytes
  if (bytes < min_split_bytes_ || helpers_.empty()) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t parts = helpers_.size() + 1;
  {
    std::lock_guard lock(mutex_);
    dst_ = dst, src_ = src, bytes_ = bytes;
    part_ = ((bytes + parts - 1) / parts + 63) / 64 * 64;  // whole cache lines
    pending_ = helpers_.size();
    ++generation_;
  }
  start_.notify_all();
  copy_part(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
}

void ParallelCopy::copy_part(size_t index) const {
  const size_t begin = std::min(bytes_, index * part_);
  const size_t end = std::min(bytes_, begin + part_);
  if (end > begin) std::memcpy(dst_ + begin, src_ + begin, end - begin);
}

void ParallelCopy::work(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    copy_part(index);
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

}  // namespace gf
