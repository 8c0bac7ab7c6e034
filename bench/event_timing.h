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

// Median microseconds of one replay of `graph` on `stream` (instantiated here, destroyed after),
// over `reps` replays after 3 warm-ups, each between two events.
inline double graph_replay_us(CUgraph graph, CUstream stream, int reps) {
  const CudaDriverApi& cu = cuda_driver();
  CUgraphExec exec = nullptr;
  GF_CU(cu.cuGraphInstantiateWithFlags(&exec, graph, 0));
  std::vector<double> us;
  try {
    for (int i = 0; i < 3; ++i) GF_CU(cu.cuGraphLaunch(exec, stream));
    CudaEvent start, stop;
    for (int i = 0; i < reps; ++i) {
      start.record(stream);
      GF_CU(cu.cuGraphLaunch(exec, stream));
      stop.record(stream);
      us.push_back(1e3 * stop.elapsed_ms_since(start));
    }
  } catch (...) {
    cu.cuGraphExecDestroy(exec);
    throw;
  }
  cu.cuGraphExecDestroy(exec);
  return median(us);
}

}  // namespace gf::bench
