// Each subcommand lives in its own file and registers itself on the app; main() parses and runs
// the one selected. A command returns the process exit code; errors are thrown as gf::Error.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace gf::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

void add_demo_command(CLI::App& app, std::vector<Command>& commands);
void add_devices_command(CLI::App& app, std::vector<Command>& commands);
void add_run_command(CLI::App& app, std::vector<Command>& commands);
void add_conformance_command(CLI::App& app, std::vector<Command>& commands);
void add_plan_command(CLI::App& app, std::vector<Command>& commands);

}  // namespace gf::cli
