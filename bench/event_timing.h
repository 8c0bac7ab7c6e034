// What the CUDA benchmarks share for timing: the median of a sample, and a launch timed with
// CUDA events (warm-ups first, then the median of `iters`).
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/cuda/device_memory.h"

namespace gf::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times `launch` `iters` times after 3 warm-up runs, events around each on the null stream; the
// median in microseconds.
template <class F>
double time_us(int iters, F&& launch) {
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> us;
  CudaEvent start, stop;
  for (int i = 0; i < iters; ++i) {
    start.record();
    launch();
    stop.record();
    us.push_back(1e3 * stop.elapsed_ms_since(start));
  }
  return median(us);
}

// Device time per launch with the host's cost hidden: `batch` launches queued back to back
// between two events, `iters` times after 3 warm-ups; the median of elapsed / batch.
template <class F>
double time_us_batched(int iters, int batch, F&& launch) {
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> us;
  CudaEvent start, stop;
  for (int i = 0; i < iters; ++i) {
    start.record();
    for (int b = 0; b < batch; ++b) launch();
    stop.record();
    us.push_back(1e3 * stop.elapsed_ms_since(start) / batch);
  }
  return median(us);
}

}  // namespace gf::bench
