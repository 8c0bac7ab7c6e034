// Subcommands whose parts are not in this version yet: they say so instead of pretending.
#include "commands.h"
#include "graphfuse/error.h"

namespace gf::cli {

void add_reserved_commands(CLI::App& app, std::vector<Command>& commands) {
  struct Reserved {
    const char* name;
    const char* help;
    const char* missing;
  };
  static const Reserved kReserved[] = {
      {"plan", "Show the fusion plan of a model (not yet available)", "the fusion planner"},
  };
  for (const Reserved& r : kReserved) {
    CLI::App* sub = app.add_subcommand(r.name, r.help);
    sub->allow_extras();
    commands.push_back({sub, [r] () -> int {
                          throw Error(ErrorCode::kUnsupported,
                                      std::string("'graphfuse ") + r.name + "' needs " +
                                          r.missing + ", which this version does not have yet");
                        }});
  }
}

}  // namespace gf::cli
