// `tidal sim compare --config FILE [--json] [--out DIR] [--threads N]`: a
// matrix of queue replays (placers x loads x seeds) in one command, one table.
#include <algorithm>
#include <unistd.h>

#include <memory>

#include <fmt/core.h>

#include "cli/commands.h"
#include "sim/compare.h"

namespace tidal::cli {
namespace {

struct CompareArgs {
  std::string config, out;
  bool json = false;
  int threads = 0;
};

int Run(const CompareArgs& a) {
  auto fail = [](const Error& e) {
    fmt::print(stderr, "tidal sim compare: {}\n", e.message);
    return 2;
  };
  auto config = sim::ReadCompareConfig(a.config);
  if (!config) return fail(config.error());
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto rows = sim::RunCompare(*config, a.threads, [&](const sim::CompareProgress& p) {
    if (tty) fmt::print(stderr, "\r[compare] {}/{} runs done (last: {})          ", p.done, p.total, p.last);
  });
  if (tty) fmt::print(stderr, "\r{:100}\r", "");
  if (!rows) return fail(rows.error());
  if (!a.out.empty()) {
    if (auto s = sim::WriteCompareOutputs(*config, *rows, a.out); !s) return fail(s.error());
  }
  if (a.json) {
    fmt::print("{}\n", sim::CompareJson(*config, *rows).dump(2));
    return 0;
  }
  const bool tenant_compare =
      std::any_of(rows->begin(), rows->end(), [](const sim::CompareRow& r) { return r.policy == "tidal"; });
  const bool market_compare = std::any_of(rows->begin(), rows->end(), [](const sim::CompareRow& r) { return r.market; });
  fmt::print("{} comparison {} ({} runs)\n{}", market_compare ? "market" : tenant_compare ? "tenant" : "placement",
             config->name, rows->size(), sim::CompareTable(*rows));
  if (market_compare) {
    fmt::print("targets (each market run against static partitions at the same load):\n");
    for (const auto& t : sim::CompareMarketTargets(*rows)) {
      auto yes = [&](const char* k) {
        return !t.contains(k) ? std::string("n/a") : std::string(t[k].get<bool>() ? "yes" : "NO");
      };
      if (!t.contains("queue_delay_cut_x")) {
        fmt::print("  {} @ {:g}: no static-partitions run at this load to compare with; ledger check ok: {}\n",
                   t["policy"].get<std::string>(), t["load"].get<double>(), yes("ledger_check_ok"));
        continue;
      }
      fmt::print("  {} @ {:g}: mean queueing {:.0f} s vs {:.0f} s = {:.1f}x cut (>= 5x: {}); hoarded {:.1f} vs {:.1f} GPU-h = "
                 "{:.1f}% cut (>= 80%: {}); ledger check ok: {}, sum of balances = grants: {}\n",
                 t["policy"].get<std::string>(), t["load"].get<double>(), t["queue_delay_mean_s"].get<double>(),
                 t["static_partitions_queue_delay_mean_s"].get<double>(), t["queue_delay_cut_x"].get<double>(),
                 yes("queue_delay_cut_5x"), t["hoarded_gpu_hours"].get<double>(),
                 t["static_partitions_hoarded_gpu_hours"].get<double>(), 100 * t["hoarded_cut"].get<double>(),
                 yes("hoarded_cut_80pct"), yes("ledger_check_ok"), yes("sum_of_balances_equals_grants"));
    }
    if (!a.out.empty()) fmt::print("wrote {0}/report.html, {0}/rows.json and {0}/rows.csv\n", a.out);
    return 0;
  }
  if (tenant_compare) {
    fmt::print("targets (tidal against the other policies, wait = JCT - time run, mean over seeds):\n");
    for (const auto& t : sim::CompareTenantTargets(*rows)) {
      const bool by_load = t.contains("load");
      auto yes = [&](const char* k) {
        return !t.contains(k) || t[k].is_null() ? std::string("n/a") : std::string(t[k].get<bool>() ? "yes" : "NO");
      };
      fmt::print("  {} {:g}: wait {:.0f} s vs best other {:.0f} s ({}) -> <= half: {}; vs static {} -> <= tenth: {}; p99 "
                 "{:.0f} vs {:.0f} ({}) -> no worse: {}; violations {:g} -> zero: {}; lost GPU-h {:.1f} -> fewer than "
                 "kueue: {}, slurm: {}\n",
                 by_load ? "load" : "time scale", by_load ? t["load"].get<double>() : t["time_scale"].get<double>(),
                 t["tidal_wait_mean"].get<double>(), t["best_other_wait_mean"].get<double>(),
                 t["best_other_wait_by"].get<std::string>(), yes("wait_at_most_half_best_other"),
                 t.contains("static_partitions_wait_mean") ? fmt::format("{:.0f} s", t["static_partitions_wait_mean"].get<double>()) : "n/a",
                 yes("wait_at_most_tenth_static"), t["tidal_wait_p99"].get<double>(), t["best_other_wait_p99"].get<double>(),
                 t["best_other_p99_by"].get<std::string>(), yes("p99_no_worse_than_best_other"),
                 t["tidal_guarantee_violations"].get<double>(), yes("zero_guarantee_violations"),
                 t["tidal_lost_gpu_hours"].get<double>(), yes("fewer_lost_gpu_hours_than_kueue"),
                 yes("fewer_lost_gpu_hours_than_slurm-multifactor"));
    }
    if (!a.out.empty()) fmt::print("wrote {0}/report.html, {0}/rows.json and {0}/rows.csv\n", a.out);
    return 0;
  }
  fmt::print("targets (topo against the other placers, mean over seeds):\n");
  for (const auto& t : sim::CompareTargets(*rows)) {
    const bool by_load = t.contains("load");
    fmt::print("  {} {:g}: comm share {:.1f}% (lowest: {}), mean JCT {:.0f} s (lowest: {}), mean delay {:.0f} s vs best other {:.0f} s "
               "({}) -> {}{}\n",
               by_load ? "load" : "time scale", by_load ? t["load"].get<double>() : t["time_scale"].get<double>(), 100 * t["topo_comm_share"].get<double>(), t["lowest_comm_share"].get<bool>() ? "yes" : "no",
               t["topo_jct_mean"].get<double>(), t["lowest_jct_mean"].get<bool>() ? "yes" : "no", t["topo_delay_mean"].get<double>(),
               t["best_other_delay_mean"].get<double>(), t["best_other_delay_by"].get<std::string>(),
               t["delay_no_worse_than_best_other"].get<bool>() ? "no worse" : "worse",
               t.contains("first_fit_comm_share") ? fmt::format(", first-fit comm {:.1f}%", 100 * t["first_fit_comm_share"].get<double>()) : "");
  }
  if (!a.out.empty()) fmt::print("wrote {0}/report.html, {0}/rows.json and {0}/rows.csv\n", a.out);
  return 0;
}

}  // namespace

void RegisterSimCompareCommand(CLI::App& sim) {
  auto args = std::make_shared<CompareArgs>();
  auto* c = sim.add_subcommand("compare", "Run a matrix of queue replays (placers x offered loads x seeds) from one config and "
                                          "print one table (docs/topology.md)");
  c->add_option("--config", args->config, "compare config (YAML, see data/compare/)")->required();
  c->add_flag("--json", args->json, "print {\"rows\":[{policy, load, seed, <sim queue keys>}], \"targets\"}");
  c->add_option("--out", args->out, "also write report.html (plots), rows.json and rows.csv here");
  c->add_option("--threads", args->threads, "replays run at once (0 = one per core)")->capture_default_str();
  c->callback([args] { SetExitCode(Run(*args)); });
}

}  // namespace tidal::cli
