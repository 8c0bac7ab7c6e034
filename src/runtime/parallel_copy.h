// A memcpy split over threads kept for the object's lifetime. One thread reads host memory at a
// fraction of what the memory system can take (about 6 GB/s of 16 on the H200 machine's host),
// and starting threads for every piece of a large transfer costs about as much as the copy
// (65 us a thread there). The weight upload fills its pinned staging chunks with it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace gf {

class ParallelCopy {
 public:
  // Starts threads - 1 helpers (fewer where the system refuses more); copies smaller than
  // `min_split_bytes` stay on the calling thread.
  explicit ParallelCopy(unsigned threads, size_t min_split_bytes = size_t{1} << 20);
  ~ParallelCopy();  // stops and joins the helpers
  ParallelCopy(const ParallelCopy&) = delete;
  ParallelCopy& operator=(const ParallelCopy&) = delete;

  // Copies `bytes` from `src` to `dst` (not overlapping), the caller doing one part; returns
  // once every part is done. One call at a time.
  void operator()(char* dst, const char* src, size_t bytes);
  size_t helpers() const { return helpers_.size(); }

 private:
  void copy_part(size_t index) const;  // of the copy in progress
  void work(size_t index);             // helper `index` (1..)

  const size_t min_split_bytes_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::vector<std::thread> helpers_;
  // The copy in progress: set under the lock before `generation_` moves, read by the helpers
  // after they see it move.
  uint64_t generation_ = 0;
  bool stop_ = false;
  size_t pending_ = 0;  // helpers not done with this generation
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  size_t bytes_ = 0, part_ = 0;
};

}  // namespace gf
