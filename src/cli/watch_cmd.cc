// `tidal watch --dcgm URL [--dcgm URL...] [--interval-s 15] [--samples N]`:
// scrapes DCGM exporters, groups the GPUs by workload (namespace/pod, else
// host/gpu) and prints one JSON line per workload per scrape (its busiest
// device's activity, mean tensor-pipe activity, MFU estimate, hoarding
// state) and one per hoarding action (notify, fee, reclaim, recovered) of
// the market's detector (docs/market.md, "Hoarding"). Exit 2 on bad
// arguments; a scrape that fails is reported on stderr and skipped (its
// workloads get a gap, which the detector counts as missing data).
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "watch/gpu_watch.h"

namespace tidal::cli {
namespace {

struct WatchArgs {
  std::vector<std::string> dcgm;
  double interval_s = 15;
  int64_t samples = 0;
  market::HoardingConfig hoarding;
};

nlohmann::json Num(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }

int Run(const WatchArgs& a) {
  if (Status s = a.hoarding.Validate(); !s) {
    fmt::print(stderr, "tidal watch: {}\n", s.error().message);
    return 2;
  }
  watch::GpuWatch w(a.hoarding);
  for (int64_t i = 0; a.samples == 0 || i < a.samples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<telemetry::DcgmSample> samples;
    for (const std::string& url : a.dcgm) {
      auto text = watch::Scrape(url);
      if (!text) {
        fmt::print(stderr, "tidal watch: {}\n", text.error().message);
        continue;
      }
      auto parsed = telemetry::ParseDcgmText(*text, url);
      if (!parsed) {
        fmt::print(stderr, "tidal watch: {}\n", parsed.error().message);
        continue;
      }
      samples.insert(samples.end(), parsed->begin(), parsed->end());
    }
    auto events = w.Observe(now, samples);
    if (!events) {
      fmt::print(stderr, "tidal watch: {}\n", events.error().message);
      return 1;
    }
    for (const watch::WorkloadActivity& x : watch::Workloads(samples)) {
      nlohmann::json j = {{"at", now}, {"workload", x.key}, {"devices", x.devices}, {"model", x.model}};
      j["activity"] = {{"gr_engine_active", Num(x.busiest.gr_engine_active)}, {"gpu_util", Num(x.busiest.gpu_util)}, {"power_w", Num(x.busiest.power_w)}};
      j["tensor_active"] = x.tensor_active ? nlohmann::json(*x.tensor_active) : nlohmann::json(nullptr);
      j["mfu"] = x.mfu ? nlohmann::json(*x.mfu) : nlohmann::json(nullptr);
      if (auto d = w.detectors().find(x.key); d != w.detectors().end()) j["hoarding"] = market::ZombieStateName(d->second.state());
      fmt::print("{}\n", j.dump());
    }
    for (const watch::WatchEvent& e : *events) {
      nlohmann::json j = {{"at", e.action.at_s}, {"workload", e.workload}, {"event", market::HoardActionKindName(e.action.kind)}, {"state", market::ZombieStateName(e.state)}};
      if (e.action.kind == market::HoardActionKind::kFee) j["fee_micro_credits"] = e.action.amount;
      fmt::print("{}\n", j.dump());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

void RegisterWatchCommand(CLI::App& app) {
  auto a = std::make_shared<WatchArgs>();
  auto* cmd = app.add_subcommand("watch", "GPU activity per workload from DCGM exporters, with the market's hoarding detector (JSON lines)");
  cmd->add_option("--dcgm", a->dcgm, "a DCGM exporter's metrics URL (http://node:9400/metrics); repeatable")->required()->expected(1, -1);
  cmd->add_option("--interval-s", a->interval_s, "seconds between scrapes")->capture_default_str()->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--samples", a->samples, "scrapes to take (0: until stopped)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--activity-threshold", a->hoarding.activity_threshold, "idle below this activity (0..1)")->capture_default_str();
  cmd->add_option("--idle-period-s", a->hoarding.idle_period_s, "idle this long: notify")->capture_default_str();
  cmd->add_option("--grace-s", a->hoarding.grace_s, "then this long: fees")->capture_default_str();
  cmd->add_option("--reclaim-after-s", a->hoarding.reclaim_after_s, "then this long: reclaim")->capture_default_str();
  cmd->callback([a] { SetExitCode(Run(*a)); });
}

}  // namespace tidal::cli
