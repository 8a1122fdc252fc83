// `tidal sim ...`: trace-driven experiments through the scheduler core.
#include "cli/commands.h"

namespace tidal::cli {

void RegisterSimCommands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Replay workloads through the scheduler with a virtual clock");
  sim->require_subcommand(1);
}

}  // namespace tidal::cli
