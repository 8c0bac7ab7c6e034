// graphfuse: the command-line tool.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "commands.h"
#include "graphfuse/error.h"

namespace {

// OpenMP threads (generated kernels, OpenBLAS) should sleep when idle rather than spin, unless
// the user chose: a spinning team takes the cores that its working thread and the rest of the
// machine need. ResNet-50 on the fused CPU backend, two threads on a loaded 2-core machine: 830
// ms per run spinning (libgomp's default), 120 ms passive. libgomp reads OMP_WAIT_POLICY only
// when it is loaded, so the tool starts itself again with it set (once; on failure it goes on).
void prefer_passive_openmp_threads(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  execv("/proc/self/exe", argv);
}

}  // namespace

int main(int argc, char** argv) {
  prefer_passive_openmp_threads(argv);
  CLI::App app{"graphfuse: an inference compiler and runtime for NVIDIA GPUs, with a CPU backend"};
  app.require_subcommand(1);
  std::vector<gf::cli::Command> commands;
  gf::cli::add_demo_command(app, commands);
  gf::cli::add_devices_command(app, commands);
  gf::cli::add_run_command(app, commands);
  gf::cli::add_conformance_command(app, commands);
  gf::cli::add_plan_command(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see graphfuse --help)\n", e.what());
    return 1;
  }
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
  } catch (const gf::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
