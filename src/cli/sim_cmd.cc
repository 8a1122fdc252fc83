// `tidal sim ...`: trace-driven experiments through the scheduler core.
#include <fmt/core.h>

#include "cli/commands.h"
#include "sim/fill.h"
#include "workload/traces/openb.h"

namespace tidal::cli {

void RegisterSimCommands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Replay workloads through the scheduler with a virtual clock");
  sim->require_subcommand(1);
  RegisterSimQueueCommand(*sim);
  auto* fill = sim->add_subcommand("fill", "FGD fill experiment");
  static std::string nodes, pods, policy = "fgd";
  static uint64_t seed = 42;
  static double tune = 1.3;
  fill->add_option("--nodes", nodes)->required();
  fill->add_option("--pods", pods)->required();
  fill->add_option("--policy", policy);
  fill->add_option("--seed", seed);
  fill->add_option("--tune", tune);
  fill->callback([] {
    auto n = traces::ReadOpenbNodes(nodes, {.gpu_nodes_only = true});
    if (!n) { fmt::print(stderr, "tidal: {}\n", n.error().ToString()); SetExitCode(1); return; }
    auto p = traces::ReadOpenbPods(pods);
    if (!p) { fmt::print(stderr, "tidal: {}\n", p.error().ToString()); SetExitCode(1); return; }
    auto r = sim::RunFill(*n, *p, {policy, tune, seed});
    if (!r) { fmt::print(stderr, "tidal: {}\n", r.error().ToString()); SetExitCode(1); return; }
    fmt::print("{} seed {}: arrived {} placed {} failed {} alloc@100 {} alloc@130 {} frag@100 {} time {:.3f}s\n",
               r->label, seed, r->arrived_pods, r->placed_pods, r->failed_pods, r->alloc_pct[100].value_or(-1),
               r->alloc_pct[130].value_or(-1), r->frag_pct[100].value_or(-1), r->seconds);
    for (int k : {0, 1, 50, 90, 100, 110, 130})
      fmt::print("  k={} alloc={} fragratio={:.2f} frag={}\n", k, r->alloc_pct[k].value_or(-1), r->frag_ratio_pct[k].value_or(-1), r->frag_pct[k].value_or(-1));
  });
}

}  // namespace tidal::cli
