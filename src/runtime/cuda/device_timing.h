// Timing work on the device for choices made at compile time (which attention path, which
// cuBLASLt algorithm): CUDA events on the null stream around each launch.
#pragma once

#include <cuda.h>

#include <functional>
#include <string>

namespace gf::cuda {

// The median over `runs` of the device time of `launch` (which queues work on the null stream),
// after `warmups` launches that are not measured. Throws kDeviceError naming `what` when a call
// fails; the events are released on every path.
double median_device_us(const std::function<void()>& launch, const std::string& what,
                        int warmups = 2, int runs = 7);

// The device time per call of `launch` (which queues one call on the stream it is given) as a
// program runs it: `calls` calls captured into one CUDA graph, whose replays are timed (median of
// `runs` after one warm-up), divided by `calls`. Unlike median_device_us, a library's host cost
// per call does not count, as it does not in a graph. Throws kDeviceError naming `what`; the
// stream, graph and events are released on every path.
double median_captured_us(const std::function<void(CUstream)>& launch, const std::string& what,
                          int calls = 10, int runs = 5);

}  // namespace gf::cuda
