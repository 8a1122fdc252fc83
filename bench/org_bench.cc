// Speed of the organisation experiment (tidal sim org, docs/org.md): the
// shipped default (Philly on the 6,776-GPU Lingjun fabric, three inference
// services, before + after + five ablations) on one thread, on the first
// N jobs and on the whole trace (issue 14's target: <= 60 s on one core).
// Counters give each side's replay time; the `before` side (static
// partitions, first-fit, no market, a separate inference fleet) is the
// baseline the others are read against, measured in the same run.
//
//   build/bench/org_bench --benchmark_counters_tabular=true
//   build/bench/org_bench --benchmark_filter='BM_Org/0'   # the whole default
#include <sys/resource.h>

#include <cstdio>
#include <filesystem>

#include <benchmark/benchmark.h>

#include "sim/org.h"

namespace {

const tidal::sim::OrgConfig& Config() {
  static const tidal::sim::OrgConfig c = [] {
    const std::string path = std::string(TIDAL_SOURCE_DIR) + "/data/org/default.yaml";
    auto r = tidal::sim::ReadOrgConfig(path);
    if (!r) {
      std::fprintf(stderr, "org_bench: %s\n", r.error().message.c_str());
      std::exit(1);
    }
    return *r;
  }();
  return c;
}

void BM_Org(benchmark::State& state) {
  tidal::sim::OrgConfig c = Config();
  c.limit = state.range(0);
  tidal::sim::OrgResult last;
  for (auto _ : state) {
    auto r = tidal::sim::RunOrg(c, /*threads=*/1);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["jobs"] = static_cast<double>(last.jobs);
  state.counters["before_s"] = last.before.seconds;
  state.counters["after_s"] = last.after.seconds;
  double ablations = 0;
  for (const auto& a : last.ablations) ablations += a.seconds;
  state.counters["ablations_s"] = ablations;
  state.counters["after_vs_before"] = last.before.seconds > 0 ? last.after.seconds / last.before.seconds : 0;
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

BENCHMARK(BM_Org)->Arg(5000)->Arg(20000)->Arg(0)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
