// Timing work on the device for choices made at compile time (which attention path, which
// cuBLASLt algorithm): CUDA events on the null stream around each launch.
#pragma once

#include <functional>
#include <string>

namespace gf::cuda {

// The median over `runs` of the device time of `launch` (which queues work on the null stream),
// after `warmups` launches that are not measured. Throws kDeviceError naming `what` when a call
// fails; the events are released on every path.
double median_device_us(const std::function<void()>& launch, const std::string& what,
                        int warmups = 2, int runs = 7);

}  // namespace gf::cuda
