// Speed of one fill-experiment run (one policy, one seed, openb default
// workload: 1,213 GPU nodes, ~10,800 arriving pods). The FGD paper's own
// simulator needs about 46 minutes and 4 GB for one such run; the target here
// is well under a second on one core. Random is the baseline that the other
// policies are compared against in the same invocation.
//
//   build/fill_bench --benchmark_counters_tabular=true
#include <sys/resource.h>

#include <filesystem>

#include <benchmark/benchmark.h>

#include "sim/fill.h"
#include "workload/traces/openb.h"

namespace {

namespace fs = std::filesystem;

struct Inputs {
  std::vector<tidal::NodeSpec> nodes;
  std::vector<tidal::Job> pods;
};

const Inputs& Load() {
  static const Inputs in = [] {
    // Prefer the shipped copy so the benchmark runs from a plain clone.
    fs::path base = fs::path(TIDAL_SOURCE_DIR) / "data/openb";
    Inputs r;
    auto n = tidal::traces::ReadOpenbNodes((base / "node_list/openb_node_list_gpu_node.csv").string(), {.gpu_nodes_only = true});
    auto p = tidal::traces::ReadOpenbPods((base / "pod_list/openb_pod_list_default.csv").string());
    if (!n || !p) {
      fprintf(stderr, "fill_bench: cannot read inputs under %s\n", base.c_str());
      std::exit(1);
    }
    r.nodes = std::move(*n);
    r.pods = std::move(*p);
    return r;
  }();
  return in;
}

void BM_FillOneRun(benchmark::State& state, const char* policy) {
  const Inputs& in = Load();
  int64_t pods = 0;
  double alloc130 = 0;
  for (auto _ : state) {
    auto r = tidal::sim::RunFill(in.nodes, in.pods, {policy, 1.3, 42});
    if (!r) state.SkipWithError(r.error().message.c_str());
    pods = r->arrived_pods;
    alloc130 = r->alloc_pct[130].value_or(0);
    benchmark::DoNotOptimize(r);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["pods"] = static_cast<double>(pods);
  state.counters["pods_per_s"] = benchmark::Counter(static_cast<double>(pods) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["alloc130"] = alloc130;
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

BENCHMARK_CAPTURE(BM_FillOneRun, random, "random")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillOneRun, dotprod, "dotprod")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillOneRun, gpuclustering, "gpuclustering")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillOneRun, gpupacking, "gpupacking")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillOneRun, bestfit, "bestfit")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FillOneRun, fgd, "fgd")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
