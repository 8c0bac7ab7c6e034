#include "runtime/cuda/session_arena.h"

#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

namespace {

uint64_t round_up(uint64_t bytes, uint64_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

CUmemAllocationProp device_memory_props(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

std::string out_of_memory(uint64_t bytes, const std::string& what) {
  return "cannot allocate " + std::to_string(bytes) + " bytes of GPU memory for " + what;
}

}  // namespace

SessionArena::Lease::~Lease() {
  if (arena_) arena_->end_lease(bytes_);
}

SessionArena::SessionArena(std::shared_ptr<DeviceMemoryBudget> budget)
    : budget_(std::move(budget)) {}

std::shared_ptr<SessionArena> SessionArena::create(std::shared_ptr<DeviceMemoryBudget> budget) {
  std::shared_ptr<SessionArena> arena(new SessionArena(std::move(budget)));
  check_cu(cuda_driver().cuEventCreate(&arena->done_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  arena->reserve();
  return arena;
}

// Reserves as many addresses as the device has bytes: no arena can need more. Without virtual
// memory management (or when the range is refused) leases fall back to allocations of their own.
void SessionArena::reserve() {
  const CudaDriverApi& cu = cuda_driver();
  device_ = CudaContext::get().device();
  int supported = 0;
  check_cu(cu.cuDeviceGetAttribute(
               &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device_),
           "cuDeviceGetAttribute(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  if (!supported) return;
  const CUmemAllocationProp prop = device_memory_props(device_);
  size_t granularity = 0, total = 0;
  check_cu(
      cu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
      "cuMemGetAllocationGranularity");
  check_cu(cu.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem");
  granularity_ = granularity;
  const uint64_t bytes = round_up(total, granularity_);
  if (cu.cuMemAddressReserve(&base_, bytes, 0, 0, 0) != CUDA_SUCCESS) {
    base_ = 0;
    return;
  }
  reserved_bytes_ = bytes;
}

SessionArena::~SessionArena() {
  // Every lease holds the arena, so none is left: the backing is gone already.
  const CudaDriverApi& cu = cuda_driver();
  shrink_to(0);
  if (reserved_bytes_ > 0) cu.cuMemAddressFree(base_, reserved_bytes_);
  if (done_) cu.cuEventDestroy(done_);
}

bool SessionArena::follow_last_run(CUstream stream, const std::string& what) const {
  const CudaDriverApi& cu = cuda_driver();
  if (any_run_ && stream != last_stream_) {
    // A run captured into the caller's graph is ordered by that graph's launches (cuda_graph.h:
    // they must not overlap the session's runs); waiting here would order nothing that replays,
    // and a synchronisation would end the capture.
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    check_cu(cu.cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing (" + what + ")");
    last_captured_ = capture != CU_STREAM_CAPTURE_STATUS_NONE;
    if (capture == CU_STREAM_CAPTURE_STATUS_NONE && last_recorded_) {
      check_cu(cu.cuStreamWaitEvent(stream, done_, 0), "cuStreamWaitEvent (" + what + ")");
    } else if (capture == CU_STREAM_CAPTURE_STATUS_NONE) {
      // The last run recorded nothing, and its stream may be gone: wait for the device, once.
      check_cu(cu.cuCtxSynchronize(), "cuCtxSynchronize (" + what + ")");
      record_every_run_ = true;
    }
  }
  any_run_ = true;
  last_stream_ = stream;
  last_recorded_ = false;
  return record_every_run_;
}

void SessionArena::ran(bool recorded_done) const {
  // An event recorded under capture is recorded only when the caller's graph runs.
  last_recorded_ = recorded_done && !last_captured_;
}

std::unique_ptr<SessionArena::Lease> SessionArena::lease(uint64_t bytes, const std::string& what) {
  std::unique_ptr<Lease> l(new Lease);
  l->bytes_ = bytes;
  if (!shared()) {
    l->own_ = DeviceBuffer(bytes, what, budget_);
    l->ptr_ = l->own_.ptr();
    std::lock_guard lock(mutex_);
    own_bytes_ += bytes;
    leases_.insert(bytes);
  } else {
    std::lock_guard lock(mutex_);
    grow_to(bytes, what);
    leases_.insert(bytes);
    l->ptr_ = base_;
  }
  l->arena_ = shared_from_this();
  return l;
}

uint64_t SessionArena::backed_bytes() const {
  std::lock_guard lock(mutex_);
  return shared() ? backed_ : own_bytes_;
}

void SessionArena::grow_to(uint64_t bytes, const std::string& what) {
  const uint64_t target = round_up(bytes, granularity_);
  if (target <= backed_) return;
  const uint64_t more = target - backed_;
  if (target > reserved_bytes_) {
    throw Error(ErrorCode::kOutOfMemory, out_of_memory(more, what) + ": the device has " +
                                             std::to_string(reserved_bytes_) + " bytes");
  }
  if (budget_) budget_->charge(more, what);
  const CudaDriverApi& cu = cuda_driver();
  const CUmemAllocationProp prop = device_memory_props(device_);
  Chunk chunk{0, backed_, more};
  CUresult r = cu.cuMemCreate(&chunk.handle, more, &prop, 0);
  if (r == CUDA_SUCCESS) {
    r = cu.cuMemMap(base_ + chunk.offset, more, 0, chunk.handle, 0);
    if (r == CUDA_SUCCESS) {
      CUmemAccessDesc access{};
      access.location = prop.location;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = cu.cuMemSetAccess(base_ + chunk.offset, more, &access, 1);
      if (r != CUDA_SUCCESS) cu.cuMemUnmap(base_ + chunk.offset, more);
    }
    if (r != CUDA_SUCCESS) cu.cuMemRelease(chunk.handle);
  }
  if (r != CUDA_SUCCESS) {
    if (budget_) budget_->refund(more);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw Error(ErrorCode::kOutOfMemory, out_of_memory(more, what));
    check_cu(r, "mapping " + std::to_string(more) + " bytes of GPU memory for " + what);
  }
  chunks_.push_back(chunk);
  backed_ = target;
}

void SessionArena::end_lease(uint64_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  leases_.erase(leases_.find(bytes));
  if (!shared()) {
    own_bytes_ -= bytes;
    return;
  }
  shrink_to(leases_.empty() ? 0 : *leases_.rbegin());
}

void SessionArena::shrink_to(uint64_t bytes) noexcept {
  if (!shared()) return;
  const uint64_t target = round_up(bytes, granularity_);
  if (backed_ <= target) return;
  const CudaDriverApi& cu = cuda_driver();
  // The memory may still be read by work queued before the lease ended (a run of the program
  // being freed, or a caller's graph that holds it): unmapping waits for the device to finish.
  cu.cuCtxSynchronize();
  while (!chunks_.empty() && chunks_.back().offset >= target) {
    const Chunk& c = chunks_.back();
    cu.cuMemUnmap(base_ + c.offset, c.bytes);  // errors cannot leave a destructor
    cu.cuMemRelease(c.handle);
    if (budget_) budget_->refund(c.bytes);
    backed_ = c.offset;
    chunks_.pop_back();
  }
  if (backed_ > target) shorten_last_chunk(target);
}

// A chunk is mapped and unmapped whole, so the one across `target` is swapped for a shorter one.
// What it held is not kept: a run leaves nothing in the arena for the next (inputs are copied in
// at its start), and no run is in flight. Where the swap fails the old chunk stays.
void SessionArena::shorten_last_chunk(uint64_t target) noexcept {
  const CudaDriverApi& cu = cuda_driver();
  Chunk& c = chunks_.back();
  const uint64_t keep = target - c.offset;
  const CUmemAllocationProp prop = device_memory_props(device_);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUmemGenericAllocationHandle shorter = 0;
  if (cu.cuMemCreate(&shorter, keep, &prop, 0) != CUDA_SUCCESS) return;
  cu.cuMemUnmap(base_ + c.offset, c.bytes);
  const auto map = [&](CUmemGenericAllocationHandle h, uint64_t size) {
    if (cu.cuMemMap(base_ + c.offset, size, 0, h, 0) != CUDA_SUCCESS) return false;
    if (cu.cuMemSetAccess(base_ + c.offset, size, &access, 1) == CUDA_SUCCESS) return true;
    cu.cuMemUnmap(base_ + c.offset, size);
    return false;
  };
  if (map(shorter, keep)) {
    cu.cuMemRelease(c.handle);
    if (budget_) budget_->refund(c.bytes - keep);
    c.handle = shorter;
    c.bytes = keep;
    backed_ = target;
  } else {
    cu.cuMemRelease(shorter);
    map(c.handle, c.bytes);
  }
}

}  // namespace gf::cuda
