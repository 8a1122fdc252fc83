// `tidal sim org [--config FILE] [--limit N] [--json] [--out DIR] [--threads N]`:
// the organisation before tidal and with it, lever by lever (docs/org.md).
// Without --config it runs the shipped data/org/default.yaml.
#include <unistd.h>

#include <memory>

#include <fmt/core.h>

#include "cli/commands.h"
#include "common/data_path.h"
#include "sim/org.h"

namespace tidal::cli {
namespace {

struct OrgArgs {
  std::string config, out;
  bool json = false;
  int threads = 0;
  int64_t limit = -1;
};

int Run(const OrgArgs& a) {
  auto fail = [](const Error& e) {
    fmt::print(stderr, "tidal sim org: {}\n", e.message);
    return 2;
  };
  const std::string path = a.config.empty() ? FindShippedPath("data/org/default.yaml") : a.config;
  auto config = sim::ReadOrgConfig(path);
  if (!config) return fail(config.error());
  if (a.limit >= 0) config->limit = a.limit;
  const bool tty = isatty(STDERR_FILENO) != 0;
  fmt::print(stderr, "[org] {}: before, after and {} ablations (each a replay of the trace)\n", config->name, config->inference ? 5 : 4);
  auto r = sim::RunOrg(*config, a.threads, [&](const sim::OrgProgress& p) {
    fmt::print(stderr, "{}[org] {}/{} sides done (last: {}, {:.0f} s){}", tty ? "\r" : "", p.done, p.total, p.last, p.last_seconds,
               tty ? "          " : "\n");
  });
  if (tty) fmt::print(stderr, "\n");
  if (!r) return fail(r.error());
  if (!a.out.empty()) {
    if (auto s = sim::WriteOrgOutputs(*config, *r, a.out); !s) return fail(s.error());
  }
  if (a.json) {
    fmt::print("{}\n", sim::OrgJson(*config, *r).dump(2));
    return 0;
  }
  fmt::print("org {}: {} GPUs ({}), {} jobs at offered load {:.2f}, window {:.1f} days\n{}", config->name, r->total_gpus,
             r->gpu, r->jobs, r->offered_load, static_cast<double>(r->window_s) / 86400, sim::OrgTable(*r));
  const auto j = sim::OrgJson(*config, *r);
  fmt::print("targets (after):\n");
  for (const auto& [k, t] : j["targets"].items()) {
    fmt::print("  {:<24} before {:>10.4g}  after {:>10.4g}  target {:>8.4g}  met: {}\n", k, t["before"].get<double>(),
               t["after"].get<double>(), t["target"].get<double>(), t["met"].get<bool>() ? "yes" : "NO");
  }
  if (!a.out.empty()) fmt::print("wrote {0}/report.html, {0}/summary.json, {0}/figures.csv, {0}/jobs_mfu.csv and {0}/hourly.csv\n", a.out);
  return 0;
}

}  // namespace

void RegisterSimOrgCommand(CLI::App& sim) {
  auto args = std::make_shared<OrgArgs>();
  auto* c = sim.add_subcommand("org", "The organisation before tidal and with it, lever by lever: training MFU, communication "
                                      "share, queueing and idle GPUs on one simulated fleet (docs/org.md)");
  c->add_option("--config", args->config, "org config (YAML); default: data/org/default.yaml");
  c->add_option("--limit", args->limit, "replay only the first N jobs (overrides the config's limit; 0 = all)")
      ->check(CLI::Validator(
          [](const std::string& v) { return !v.empty() && v[0] == '-' ? std::string("a job count, 0 or more") : std::string(); },
          "N >= 0"));
  c->add_flag("--json", args->json, "print {\"before\", \"after\", \"ablations\", \"targets\", \"config\"}");
  c->add_option("--out", args->out, "also write report.html (plots), summary.json, figures.csv and jobs_mfu.csv here");
  c->add_option("--threads", args->threads, "replays run at once (0 = one per core)")->capture_default_str();
  c->callback([args] { SetExitCode(Run(*args)); });
}

}  // namespace tidal::cli
