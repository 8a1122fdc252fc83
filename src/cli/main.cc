// The `tidal` binary: one executable, one subcommand per job. Each subcommand
// lives in its own file and registers itself here; nothing depends on cli.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "common/log.h"

int main(int argc, char** argv) {
  CLI::App app{"tidal: GPU-cluster scheduling, planning and measurement"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tidal 0.1.0");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off")
      ->capture_default_str()
      ->each([](const std::string& level) {
        if (auto s = tidal::log::SetLevel(level); !s) throw CLI::ValidationError(s.error().message);
      });
  tidal::cli::RegisterCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return tidal::cli::ExitCode();
}
