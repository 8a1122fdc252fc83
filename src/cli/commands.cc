#include "cli/commands.h"

namespace tidal::cli {
namespace {
int g_exit_code = 0;  // set once by the one subcommand that runs
}  // namespace

void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }

void RegisterCommands(CLI::App& app) {
  RegisterSimCommands(app);
  RegisterTopoCommands(app);
  RegisterMarketCommands(app);
  RegisterServeCommands(app);
  RegisterK8sCommands(app);
  RegisterWatchCommand(app);
#ifdef TIDAL_HAVE_ISOLATION
  RegisterCgroupCommand(app);
#endif
#ifdef TIDAL_HAVE_PLANNER
  RegisterPlanCommand(app);
  RegisterMfuCommand(app);
#endif
}

}  // namespace tidal::cli
