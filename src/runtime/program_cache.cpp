#include "runtime/program_cache.h"

#include <algorithm>

namespace gf {

ProgramCache::ProgramCache(size_t max_programs, uint64_t max_bytes)
    : max_programs_(max_programs), max_bytes_(max_bytes) {}

std::optional<ProgramCache::ProgramPtr> ProgramCache::find(const Key& key) {
  auto it = std::find_if(lru_.begin(), lru_.end(), [&](const Entry& e) { return e.key == key; });
  if (it == lru_.end()) {
    ++misses_;
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it);
  ++hits_;
  return it->program;
}

uint64_t ProgramCache::bytes() const {
  uint64_t shared = 0;
  for (const Entry& e : lru_) shared = std::max(shared, e.shared_bytes);
  return own_bytes_ + shared;
}

ProgramCache::ProgramPtr ProgramCache::insert(const Key& key, ProgramPtr program,
                                              uint64_t own_bytes, uint64_t shared_bytes,
                                              std::vector<ProgramPtr>& dropped) {
  auto it = std::find_if(lru_.begin(), lru_.end(), [&](const Entry& e) { return e.key == key; });
  if (it != lru_.end()) {
    // Two runs missed on the same shapes and both compiled: the first one kept wins, so later
    // runs share one program (and, on CUDA, one arena).
    lru_.splice(lru_.begin(), lru_, it);
    dropped.push_back(std::move(program));
    return it->program;
  }
  if (max_bytes_ != 0 && own_bytes + shared_bytes > max_bytes_) {
    ++evictions_;
    return program;
  }
  lru_.push_front(Entry{key, program, own_bytes, shared_bytes});
  own_bytes_ += own_bytes;
  if (program) ++programs_;
  while (lru_.size() > max_programs_ || (max_bytes_ != 0 && bytes() > max_bytes_)) {
    Entry& last = lru_.back();
    own_bytes_ -= last.own_bytes;
    if (last.program) --programs_;
    ++evictions_;
    dropped.push_back(std::move(last.program));
    lru_.pop_back();
  }
  return program;
}

void ProgramCache::drop_all(std::vector<ProgramPtr>& dropped) {
  for (Entry& e : lru_) {
    if (e.program) ++evictions_;
    dropped.push_back(std::move(e.program));
  }
  lru_.clear();
  own_bytes_ = 0;
  programs_ = 0;
}

}  // namespace gf
