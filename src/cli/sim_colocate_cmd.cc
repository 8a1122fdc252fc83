// `tidal sim colocate [--config FILE] [--json] [--out DIR]`: the training/
// inference co-location experiment (docs/colocate.md). No --config: the
// shipped default, data/colocate/default.yaml.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/core.h>

#include "cli/commands.h"
#include "common/data_path.h"
#include "sim/colocate.h"

namespace tidal::cli {
namespace {

struct ColocateArgs {
  std::string config, out;
  bool json = false;
};

// data/colocate/default.yaml under the working directory, else next to the
// binary's source tree (build/tidal -> ../data).
std::string DefaultConfig() { return FindShippedPath("data/colocate/default.yaml"); }

int Run(const ColocateArgs& a) {
  auto fail = [](const Error& e) {
    fmt::print(stderr, "tidal sim colocate: {}\n", e.message);
    return 2;
  };
  const std::string path = a.config.empty() ? DefaultConfig() : a.config;
  auto config = sim::ReadColocateConfig(path);
  if (!config) return fail(config.error());
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto result = sim::RunColocate(*config, [&](const sim::ColocateProgress& p) {
    fmt::print(stderr, "{}[colocate] {}: day {}/{}{}", tty ? "\r" : "", p.policy, p.minute / 1440, p.minutes / 1440, tty ? "      " : "\n");
  });
  if (tty) fmt::print(stderr, "\r{:60}\r", "");
  if (!result) return fail(result.error());
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    std::ofstream(a.out + "/report.html") << sim::ColocateHtml(*result);
    std::ofstream(a.out + "/rows.json") << sim::ColocateJson(*result).dump(2) << "\n";
    if (!std::ifstream(a.out + "/rows.json")) return fail(Error{ErrorCode::kIo, fmt::format("cannot write into {}", a.out)});
  }
  if (a.json) {
    fmt::print("{}\n", sim::ColocateJson(*result).dump(2));
    return 0;
  }
  fmt::print("co-location {} ({} GPUs, {} days, training load {:.2f})\n{}", result->name, result->gpus, result->days,
             result->offered_load, sim::ColocateTable(*result));
  fmt::print("targets (each policy against static):\n");
  for (const auto& t : sim::ColocateTargets(*result)) {
    auto yes = [&](const char* k) { return !t.contains(k) ? std::string("n/a") : std::string(t[k].get<bool>() ? "yes" : "NO"); };
    fmt::print("  {}: worst SLO minutes met {:.4f} (>= 0.999: {}); training GPU-h {} x static (>= 1.25: {}); lost {:.2f}% of "
               "training (< 1%: {})\n",
               t["policy"].get<std::string>(), t["worst_slo_minutes_met"].get<double>(), yes("slo_999_every_service"),
               t.contains("training_gpu_hours_vs_static") ? fmt::format("{:.3f}", t["training_gpu_hours_vs_static"].get<double>()) : "n/a",
               yes("training_1_25x_static"), 100 * t["lost_share_of_training"].get<double>(), yes("lost_below_1pct"));
  }
  if (!a.out.empty()) fmt::print("wrote {0}/report.html and {0}/rows.json\n", a.out);
  return 0;
}

}  // namespace

void RegisterSimColocateCommand(CLI::App& sim) {
  auto args = std::make_shared<ColocateArgs>();
  auto* c = sim.add_subcommand("colocate", "Training/inference co-location on one fleet: static split, Lyra-like day/night loaning, "
                                           "reactive MIG autoscaling and tidal, on the same traces (docs/colocate.md)");
  c->add_option("--config", args->config, "colocate config (YAML); default: data/colocate/default.yaml");
  c->add_flag("--json", args->json, "print {\"rows\":[{policy, slo_minutes_met, training_gpu_hours, ...}], \"targets\"}");
  c->add_option("--out", args->out, "also write report.html (MIG layouts per hour) and rows.json here");
  c->callback([args] { SetExitCode(Run(*args)); });
}

}  // namespace tidal::cli
