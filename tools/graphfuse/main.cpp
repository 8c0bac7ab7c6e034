// graphfuse: the command-line tool.
#include <cstdio>
#include <exception>

#include "commands.h"
#include "graphfuse/error.h"

int main(int argc, char** argv) {
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
