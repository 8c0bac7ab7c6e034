#include "runtime/cuda/device_timing.h"

#include <cuda.h>

#include <algorithm>
#include <vector>

#include "runtime/cuda/cuda_module.h"

namespace gf::cuda {

namespace {

class TimingEvent {
 public:
  explicit TimingEvent(const std::string& what) {
    check_cu(cuda_driver().cuEventCreate(&event_, CU_EVENT_DEFAULT),
             "cuEventCreate (" + what + ")");
  }
  ~TimingEvent() { cuda_driver().cuEventDestroy(event_); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

}  // namespace

double median_device_us(const std::function<void()>& launch, const std::string& what, int warmups,
                        int runs) {
  const CudaDriverApi& cu = cuda_driver();
  const TimingEvent start(what), stop(what);
  for (int i = 0; i < warmups; ++i) launch();
  std::vector<double> times;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    check_cu(cu.cuEventRecord(start.get(), nullptr), "cuEventRecord (" + what + ")");
    launch();
    check_cu(cu.cuEventRecord(stop.get(), nullptr), "cuEventRecord (" + what + ")");
    check_cu(cu.cuEventSynchronize(stop.get()), "cuEventSynchronize (" + what + ")");
    float ms = 0;
    check_cu(cu.cuEventElapsedTime(&ms, start.get(), stop.get()),
             "cuEventElapsedTime (" + what + ")");
    times.push_back(ms * 1e3);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace gf::cuda
