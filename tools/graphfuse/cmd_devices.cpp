// graphfuse devices: what this process can run on.
#include <cstdio>

#include "commands.h"
#include "graphfuse/device.h"

namespace gf::cli {

void add_devices_command(CLI::App& app, std::vector<Command>& commands) {
  CLI::App* sub = app.add_subcommand("devices", "List the CUDA devices graphfuse can use");
  commands.push_back({sub, [] {
                        CudaProbe probe = probe_cuda();
                        std::printf("cpu: available\n");
                        if (probe.devices.empty()) {
                          std::printf("cuda: none (%s)\n", probe.reason.c_str());
                        }
                        for (const CudaDeviceInfo& d : probe.devices) {
                          std::printf("cuda:%d: %s, compute capability %d.%d, %d SMs, %.1f GiB\n",
                                      d.index, d.name.c_str(), d.compute_major, d.compute_minor,
                                      d.multiprocessors,
                                      static_cast<double>(d.memory_bytes) / (1 << 30));
                        }
                        return 0;
                      }});
}

}  // namespace gf::cli
