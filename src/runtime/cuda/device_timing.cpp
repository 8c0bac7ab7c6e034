#include "runtime/cuda/device_timing.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/library_recapture.h"

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

double median_captured_us(const std::function<void(CUstream)>& launch, const std::string& what,
                          int calls, int runs) {
  const CudaDriverApi& cu = cuda_driver();
  const CudaStream stream;
  CUgraph graph = nullptr;
  // The runtime's capture calls (the driver table has none); CUstream is cudaStream_t.
  check_rt(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal),
           "cudaStreamBeginCapture (" + what + ")");
  try {
    for (int i = 0; i < std::max(calls, 1); ++i) launch(stream.get());
  } catch (...) {
    cudaGraph_t ignored = nullptr;
    cudaStreamEndCapture(stream.get(), &ignored);
    if (ignored) cudaGraphDestroy(ignored);
    cudaGetLastError();
    throw;
  }
  check_rt(cudaStreamEndCapture(stream.get(), &graph), "cudaStreamEndCapture (" + what + ")");
  CUgraphExec exec = nullptr;
  const CUresult instantiated = cu.cuGraphInstantiateWithFlags(&exec, graph, 0);
  cu.cuGraphDestroy(graph);
  check_cu(instantiated, "cuGraphInstantiateWithFlags (" + what + ")");
  try {
    const TimingEvent start(what), stop(what);
    check_cu(cu.cuGraphLaunch(exec, stream.get()), "cuGraphLaunch (" + what + ")");
    std::vector<double> times;
    for (int i = 0; i < std::max(runs, 1); ++i) {
      check_cu(cu.cuEventRecord(start.get(), stream.get()), "cuEventRecord (" + what + ")");
      check_cu(cu.cuGraphLaunch(exec, stream.get()), "cuGraphLaunch (" + what + ")");
      check_cu(cu.cuEventRecord(stop.get(), stream.get()), "cuEventRecord (" + what + ")");
      check_cu(cu.cuEventSynchronize(stop.get()), "cuEventSynchronize (" + what + ")");
      float ms = 0;
      check_cu(cu.cuEventElapsedTime(&ms, start.get(), stop.get()),
               "cuEventElapsedTime (" + what + ")");
      times.push_back(ms * 1e3 / std::max(calls, 1));
    }
    cu.cuGraphExecDestroy(exec);
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  } catch (...) {
    cu.cuGraphExecDestroy(exec);
    throw;
  }
}

}  // namespace gf::cuda
