#include "runtime/cuda/weight_upload.h"

#include <algorithm>
#include <thread>

#include "codegen/cuda/kernels/transpose_cuh.h"
#include "codegen/cuda/nvrtc_compiler.h"
#include "graphfuse/error.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/weight_layout.h"
#include "runtime/parallel_copy.h"

namespace gf::cuda {

namespace {

// Two chunks: one filling while the copy engine drains the other. Filling is the slower side
// (about 16 GB/s on 4-8 threads against 52 GB/s over the link on an H200 machine), so a third
// would not be used; and pinning costs about 0.55 ms a MB.
constexpr size_t kChunkBytes = size_t{4} << 20;
constexpr int kChunks = 2;
// Below this much in all, pinning the chunks costs more than it saves.
constexpr size_t kMinStagedBytes = size_t{32} << 20;
constexpr unsigned kMaxFillThreads = 8;

// Tiles along k are the grid's y dimension.
constexpr int64_t kMaxGridY = 65535;

}  // namespace

struct WeightUpload::State {
  std::shared_ptr<DeviceMemoryBudget> budget;
  CUstream stream = nullptr;
  void* pinned = nullptr;  // kChunks * kChunkBytes, or null: pageable copies
  std::unique_ptr<ParallelCopy> fill;  // fills the chunks (with `pinned`)
  CUevent chunk_free[kChunks] = {};
  bool chunk_used[kChunks] = {};
  int next_chunk = 0;
  DeviceBuffer scratch;                // a transposed weight's bytes as the host has them
  std::unique_ptr<CudaModule> module;  // the transpose kernels (kernels/transpose.cuh)
  bool no_device_transpose = false;    // the budget refused scratch once: the host does the rest
  int device_transposes = 0;

  ~State() {
    const CudaDriverApi& cu = cuda_driver();
    if (stream) cu.cuStreamSynchronize(stream);  // nothing may still read what goes below
    for (CUevent e : chunk_free)
      if (e) cu.cuEventDestroy(e);
    if (pinned) cu.cuMemFreeHost(pinned);
    if (stream) cu.cuStreamDestroy(stream);
  }

  // src's bytes to dst, in stream order.
  void to_device(CUdeviceptr dst, const char* src, size_t bytes, const std::string& what) {
    const CudaDriverApi& cu = cuda_driver();
    if (!pinned) {
      // A pageable source: the call returns once the driver has taken the bytes.
      check_cu(cu.cuMemcpyHtoDAsync(dst, src, bytes, stream),
               "cuMemcpyHtoDAsync (" + what + ", " + std::to_string(bytes) + " bytes)");
      return;
    }
    for (size_t done = 0; done < bytes;) {
      const size_t n = std::min(kChunkBytes, bytes - done);
      const int c = next_chunk;
      next_chunk = (next_chunk + 1) % kChunks;
      if (chunk_used[c])
        check_cu(cu.cuEventSynchronize(chunk_free[c]), "cuEventSynchronize (" + what + ")");
      char* chunk = static_cast<char*>(pinned) + static_cast<size_t>(c) * kChunkBytes;
      (*fill)(chunk, src + done, n);
      check_cu(cu.cuMemcpyHtoDAsync(dst + done, chunk, n, stream),
               "cuMemcpyHtoDAsync (" + what + ", " + std::to_string(n) + " bytes)");
      check_cu(cu.cuEventRecord(chunk_free[c], stream), "cuEventRecord (" + what + ")");
      chunk_used[c] = true;
      done += n;
    }
  }

  // t's transpose written to dst on the device; false (nothing enqueued) where the budget has
  // no room for the scratch or the grid would be too tall, and the host is to do it.
  bool transpose_on_device(CUdeviceptr dst, const Tensor& t, const std::string& what) {
    const int64_t k = t.dims()[0], n = t.dims()[1];
    const size_t es = dtype_size(t.dtype());
    if (no_device_transpose || (es != 2 && es != 4) || (k + 31) / 32 > kMaxGridY) return false;
    const CudaDriverApi& cu = cuda_driver();
    if (scratch.bytes() < t.nbytes()) {
      // The last transpose must have read the old scratch before it is freed.
      check_cu(cu.cuStreamSynchronize(stream), "cuStreamSynchronize (" + what + ")");
      scratch = DeviceBuffer();
      try {
        scratch = DeviceBuffer(t.nbytes(), "scratch to transpose " + what, budget);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kOutOfMemory) throw;
        no_device_transpose = true;
        return false;
      }
    }
    if (!module) {
      const CudaContext& ctx = CudaContext::get();
      const codegen::CubinPtr cubin =
          process_nvrtc().compile(codegen::embedded::transpose_cuh, ctx.compute_capability());
      module = CudaModule::load(*cubin, "weight transposes");
    }
    to_device(scratch.ptr(), static_cast<const char*>(t.raw()), t.nbytes(), what);
    CUdeviceptr from = scratch.ptr(), to = dst;
    long long rows = k, cols = n;
    void* params[] = {&from, &to, &rows, &cols};
    const CUfunction fn = module->function(es == 2 ? "gf_transpose_2byte" : "gf_transpose_4byte");
    check_cu(cu.cuLaunchKernel(fn, static_cast<unsigned>((n + 31) / 32),
                               static_cast<unsigned>((k + 31) / 32), 1, 32, 8, 1, 0, stream, params,
                               nullptr),
             "cuLaunchKernel (transpose of " + what + ")");
    ++device_transposes;
    return true;
  }
};

WeightUpload::WeightUpload(size_t total_bytes, std::shared_ptr<DeviceMemoryBudget> budget)
    : state_(std::make_unique<State>()) {
  const CudaDriverApi& cu = cuda_driver();
  state_->budget = std::move(budget);
  check_cu(cu.cuStreamCreate(&state_->stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate (weight upload)");
  if (total_bytes < kMinStagedBytes) return;
  if (cu.cuMemHostAlloc(&state_->pinned, kChunks * kChunkBytes, 0) != CUDA_SUCCESS) {
    state_->pinned = nullptr;  // no pinned memory to spare: the driver's pageable copies
    return;
  }
  for (CUevent& e : state_->chunk_free)
    check_cu(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate (weight upload)");
  state_->fill = std::make_unique<ParallelCopy>(
      std::min(kMaxFillThreads, std::max(1u, std::thread::hardware_concurrency())));
}

WeightUpload::~WeightUpload() = default;

void WeightUpload::copy(CUdeviceptr dst, const Tensor& t, bool transposed,
                        const std::string& what) {
  if (t.nbytes() == 0) return;
  if (!transposed) {
    state_->to_device(dst, static_cast<const char*>(t.raw()), t.nbytes(), what);
    return;
  }
  GF_ASSERT(t.rank() == 2, "a weight stored transposed is 2-D");
  if (state_->transpose_on_device(dst, t, what)) return;
  const Tensor host = transpose_matrix(t);
  state_->to_device(dst, static_cast<const char*>(host.raw()), host.nbytes(), what);
}

void WeightUpload::finish() {
  check_cu(cuda_driver().cuStreamSynchronize(state_->stream),
           "cuStreamSynchronize (weight upload)");
}

bool WeightUpload::staged() const {
  return state_->pinned != nullptr;
}

int WeightUpload::device_transposes() const {
  return state_->device_transposes;
}

}  // namespace gf::cuda
