// One device arena for all the CUDA programs of a session (one program per set of input
// shapes). A virtual address range is reserved once, so the arena's start never moves and the
// CUDA graphs and pointer tables that hold addresses in it stay valid however it grows; physical
// memory backs it up to what the largest living program needs. A program leases the first
// `bytes` of it for its life: the backing grows when a bigger lease is taken and shrinks when the
// biggest one ends. A session with shapes of 1k, 2k and 4k tokens thus holds the 4k arena, not
// the sum of three.
//
// Programs that share the arena take turns. Every launch of one happens with turn() locked, after
// the earlier launch of any of them (follow_last_run). Runs on one stream are ordered by it and
// record nothing: a graph run is one cuGraphLaunch. The first time a run comes on another stream
// after a graph run, the device is synchronised once (the earlier stream may be gone by then, so
// nothing can be recorded on it), and from then on every run records done() at its end, which a
// run on another stream waits for. Eager runs always record it (their caller's stream waits for
// it too).
//
// Where the device has no virtual memory management each lease is an allocation of its own
// (shared() is false); the programs still take turns. Thread-safe.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/cuda/device_buffer.h"

namespace gf::cuda {

class SessionArena : public std::enable_shared_from_this<SessionArena> {
 public:
  // The start of a lease, valid while the lease lives; its end gives the bytes back.
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    CUdeviceptr ptr() const { return ptr_; }
    uint64_t bytes() const { return bytes_; }

   private:
    friend class SessionArena;
    Lease() = default;
    std::shared_ptr<SessionArena> arena_;
    uint64_t bytes_ = 0;
    CUdeviceptr ptr_ = 0;
    DeviceBuffer own_;  // without virtual memory management: the lease's own allocation
  };

  // Device memory charged to `budget` (null: none). Needs a current context. Throws
  // kDeviceError when the address range cannot be reserved.
  static std::shared_ptr<SessionArena> create(std::shared_ptr<DeviceMemoryBudget> budget);
  ~SessionArena();
  SessionArena(const SessionArena&) = delete;
  SessionArena& operator=(const SessionArena&) = delete;

  // The arena's first `bytes`, backed until the lease ends. Throws kOutOfMemory naming `what`
  // when the device or the budget has no room for the growth; nothing changes then.
  std::unique_ptr<Lease> lease(uint64_t bytes, const std::string& what);

  bool shared() const { return reserved_bytes_ > 0; }
  uint64_t backed_bytes() const;  // physical memory behind the arena now (the leases', if own)

  // Turn-taking (see above), with turn() locked. follow_last_run orders work on `stream` after
  // the arena's last run (nothing to order on a stream under capture: its graph's launches are
  // the caller's to order) and returns whether the run about to be launched must record done()
  // at its end; ran() tells whether it did. Throws kDeviceError naming `what`.
  std::mutex& turn() const { return turn_; }
  bool follow_last_run(CUstream stream, const std::string& what) const;
  void ran(bool recorded_done) const;
  CUevent done() const { return done_; }

 private:
  struct Chunk {
    CUmemGenericAllocationHandle handle = 0;
    uint64_t offset = 0, bytes = 0;
  };
  explicit SessionArena(std::shared_ptr<DeviceMemoryBudget> budget);
  void reserve();
  void grow_to(uint64_t bytes, const std::string& what);  // mutex_ held
  void end_lease(uint64_t bytes) noexcept;
  void shrink_to(uint64_t bytes) noexcept;  // mutex_ held
  void shorten_last_chunk(uint64_t target) noexcept;

  std::shared_ptr<DeviceMemoryBudget> budget_;
  CUdevice device_ = 0;
  CUdeviceptr base_ = 0;
  uint64_t reserved_bytes_ = 0;  // 0: no virtual memory management, leases allocate their own
  uint64_t granularity_ = 0;
  mutable std::mutex mutex_;
  std::multiset<uint64_t> leases_;  // the bytes of each living lease
  std::vector<Chunk> chunks_;       // the backing, in address order
  uint64_t backed_ = 0;
  uint64_t own_bytes_ = 0;  // leases' own allocations (no virtual memory management)

  mutable std::mutex turn_;
  mutable bool any_run_ = false;
  mutable CUstream last_stream_ = nullptr;
  mutable bool last_recorded_ = false;     // the last run recorded done_
  mutable bool last_captured_ = false;     // its stream was found capturing
  mutable bool record_every_run_ = false;  // runs came on more than one stream
  CUevent done_ = nullptr;
};

}  // namespace gf::cuda
