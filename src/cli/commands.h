// Subcommand registration. Each Register* adds one subcommand whose callback
// does the work and records its exit code with SetExitCode; errors are printed
// to stderr as "tidal: <what>, <where>, <what to do>" and never thrown out.
#pragma once

#include <CLI/CLI.hpp>

namespace tidal::cli {

void RegisterCommands(CLI::App& app);

// Defined in their own files.
void RegisterSimCommands(CLI::App& app);
// `tidal sim queue`, registered under the `sim` subcommand.
void RegisterSimQueueCommand(CLI::App& sim);
void RegisterSimCompareCommand(CLI::App& sim);
void RegisterSimOrgCommand(CLI::App& sim);
void RegisterSimColocateCommand(CLI::App& sim);
void RegisterPlanCommand(CLI::App& app);
void RegisterMfuCommand(CLI::App& app);
void RegisterTopoCommands(CLI::App& app);
void RegisterMarketCommands(CLI::App& app);
void RegisterCgroupCommand(CLI::App& app);
// `tidal serve` and `tidal token` (serve_cmd.cc).
void RegisterServeCommands(CLI::App& app);
// `tidal k8s run` (k8s_cmd.cc).
void RegisterK8sCommands(CLI::App& app);
// `tidal watch` (watch_cmd.cc).
void RegisterWatchCommand(CLI::App& app);

void SetExitCode(int code);
int ExitCode();

}  // namespace tidal::cli
