// A Session's compiled programs, one per set of input shapes, least recently used out first,
// bounded in count and in the bytes the programs hold (SessionOptions::max_cached_programs,
// max_cached_program_bytes). A program's bytes are its own plus its part of what the programs
// share (the CUDA arena, as large as the largest lease on it): the kept programs hold the sum of
// their own bytes and the largest shared part.
//
// Not thread-safe: the Session calls it under its own mutex. Programs are shared: a program
// dropped from the cache lives on until the last run using it lets go, so eviction never frees
// what a concurrent run is using. Dropped programs are handed back to the caller, which lets go
// of them after its lock (freeing a CUDA program synchronises with the device).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <vector>

namespace gf {

struct CompiledProgram;

class ProgramCache {
 public:
  using Key = std::vector<std::vector<int64_t>>;  // the input dims
  // Null program: the graph's shapes depend on input data at this key (it runs interpreted).
  using ProgramPtr = std::shared_ptr<const CompiledProgram>;

  // max_bytes 0: no bound on bytes.
  ProgramCache(size_t max_programs, uint64_t max_bytes);

  // The program kept for `key`, made the most recently used; nullopt on a miss. Counts a hit or
  // a miss.
  std::optional<ProgramPtr> find(const Key& key);

  // Keeps `program` (holding `own_bytes`, and `shared_bytes` of the shared part) for `key` as
  // the most recently used, dropping the least recently used ones until both bounds hold;
  // returns the program to run. When another caller kept a program for `key` meanwhile, that
  // one is returned and `program` is not kept. A program over the byte bound by itself is
  // returned but not kept (counted as an eviction).
  ProgramPtr insert(const Key& key, ProgramPtr program, uint64_t own_bytes, uint64_t shared_bytes,
                    std::vector<ProgramPtr>& dropped);

  // Drops every kept program (counted as evictions), e.g. to make room on the device.
  void drop_all(std::vector<ProgramPtr>& dropped);

  int hits() const { return hits_; }
  int misses() const { return misses_; }
  int evictions() const { return evictions_; }
  int programs() const { return programs_; }  // entries holding a compiled program
  uint64_t bytes() const;  // held by the kept programs: own bytes summed, the largest shared

 private:
  struct Entry {
    Key key;
    ProgramPtr program;
    uint64_t own_bytes = 0, shared_bytes = 0;
  };

  size_t max_programs_;
  uint64_t max_bytes_;
  std::list<Entry> lru_;  // most recently used first
  int hits_ = 0, misses_ = 0, evictions_ = 0, programs_ = 0;
  uint64_t own_bytes_ = 0;
};

}  // namespace gf
