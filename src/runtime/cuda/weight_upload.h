// Weights to the device, many in one go. Host bytes pass through pinned staging chunks, filled
// on several threads while the copy engine drains the chunk before (the driver stages a
// pageable copy itself, a piece at a time, well below the link's rate). A weight stored
// transposed (weight_layout.h) is copied as it is into device scratch and transposed there by a
// kernel of ours (kernels/transpose.cuh, bits moved unchanged), instead of on the host; where
// no scratch fits the budget, the host transposes it as before. Copies run on a stream of the
// upload's own; finish() waits for them.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>

#include "graphfuse/tensor.h"
#include "runtime/cuda/device_buffer.h"

namespace gf::cuda {

class WeightUpload {
 public:
  // `total_bytes`: about how much will be uploaded (staging pays only for large uploads).
  // Scratch for device transposes is charged to `budget` (null: none).
  WeightUpload(size_t total_bytes, std::shared_ptr<DeviceMemoryBudget> budget);
  ~WeightUpload();  // waits for the copies in flight; never throws
  WeightUpload(const WeightUpload&) = delete;
  WeightUpload& operator=(const WeightUpload&) = delete;

  // Enqueues the copy of `t` (its 2-D transpose with `transposed`) to `dst`, which holds
  // t.nbytes(); `what` names the weight in errors. `t` may change or go once this returns.
  void copy(CUdeviceptr dst, const Tensor& t, bool transposed, const std::string& what);
  // Waits for every copy; throws kDeviceError naming the call that failed.
  void finish();

  // How the copies went, for tests and figures.
  bool staged() const;            // through pinned chunks (else the driver's pageable copies)
  int device_transposes() const;  // weights transposed on the device

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gf::cuda
