// `tidal sim ...`: trace-driven experiments through the scheduler core.
//
// `tidal sim fill --nodes FILE --pods FILE --policy NAME|all --seeds 42-51
//                 --tune 1.3 --out DIR`
// reproduces the FGD paper's fill experiment and writes its curve files,
// report.json and report.html into DIR.
#include <unistd.h>

#include <filesystem>
#include <map>

#include <fmt/core.h>

#include "cli/commands.h"
#include "common/log.h"
#include "plugins/registry.h"
#include "sim/fill.h"
#include "sim/fill_report.h"
#include "workload/traces/openb.h"

namespace tidal::cli {
namespace {

namespace fs = std::filesystem;

struct FillArgs {
  std::string nodes, pods, policy = "all", seeds = "42-51", out = "out/fill";
  double tune = 1.3;
};

// "42-51", "42", "42,45,50-52".
Result<std::vector<uint64_t>> ParseSeeds(const std::string& spec) {
  std::vector<uint64_t> seeds;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string part = spec.substr(start, comma - start);
    uint64_t lo = 0, hi = 0;
    char dash = 0;
    int consumed = 0;
    if (std::sscanf(part.c_str(), "%lu%c%lu%n", &lo, &dash, &hi, &consumed) == 3 && dash == '-' &&
        static_cast<size_t>(consumed) == part.size() && lo <= hi && hi - lo < 100000) {
      for (uint64_t s = lo; s <= hi; ++s) seeds.push_back(s);
    } else if (std::sscanf(part.c_str(), "%lu%n", &lo, &consumed) == 1 && static_cast<size_t>(consumed) == part.size()) {
      seeds.push_back(lo);
    } else {
      return MakeError(ErrorCode::kInvalidArgument,
                       "--seeds '{}': '{}' is not a seed or a range like 42-51", spec, part);
    }
    start = comma + 1;
  }
  if (seeds.empty()) return MakeError(ErrorCode::kInvalidArgument, "--seeds '{}': no seeds", spec);
  return seeds;
}

Result<std::vector<std::string>> ParsePolicies(const std::string& spec) {
  if (spec == "all") return plugins::PolicyNames();
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string p = spec.substr(start, comma - start);
    TIDAL_RETURN_IF_ERROR(plugins::PolicyLabel(p));
    out.push_back(std::move(p));
    start = comma + 1;
  }
  return out;
}

int RunFillCommand(const FillArgs& a) {
  auto fail = [](const Error& e) {
    fmt::print(stderr, "tidal sim fill: {}\n", e.ToString());
    return 1;
  };
  auto seeds = ParseSeeds(a.seeds);
  if (!seeds) return fail(seeds.error());
  auto policies = ParsePolicies(a.policy);
  if (!policies) return fail(policies.error());
  // The FGD experiment runs on the GPU nodes only.
  auto nodes = traces::ReadOpenbNodes(a.nodes, {.gpu_nodes_only = true});
  if (!nodes) return fail(nodes.error());
  auto pods = traces::ReadOpenbPods(a.pods);
  if (!pods) return fail(pods.error());

  sim::FillReportInput report;
  report.workload = fs::path(a.pods).stem().string();
  report.nodes_path = a.nodes;
  report.pods_path = a.pods;
  // Published curves sit beside the pod lists in the artifact layout
  // (<trace>/pod_list/X.csv and <trace>/fgd_expected_results/).
  std::optional<sim::PublishedCurves> published;
  const fs::path pub_dir = fs::path(a.pods).parent_path().parent_path() / "fgd_expected_results";
  if (fs::exists(pub_dir / "analysis_allo_discrete.csv")) {
    auto p = sim::ReadPublishedCurves(pub_dir.string(), report.workload);
    if (p) {
      published = std::move(*p);
      report.published = &*published;
    } else {
      log::Warn("sim fill: published curves not used: {}", p.error().message);
    }
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  const size_t total = policies->size() * seeds->size();
  size_t done = 0;
  for (const std::string& policy : *policies) {
    for (uint64_t seed : *seeds) {
      if (tty) fmt::print(stderr, "\r[{}/{}] {} seed {}   ", done + 1, total, policy, seed);
      auto r = sim::RunFill(*nodes, *pods, {policy, a.tune, seed});
      if (r) {
        log::Info("sim fill: {} seed {}: {} arrived, {} placed, {} failed, {:.3f} s", r->label, seed, r->arrived_pods,
                  r->placed_pods, r->failed_pods, r->seconds);
      }
      if (!r) {
        if (tty) fmt::print(stderr, "\n");
        return fail(r.error());
      }
      report.runs.push_back(std::move(*r));
      ++done;
    }
  }
  if (tty) fmt::print(stderr, "\r{:60}\r", "");
  if (auto s = sim::WriteFillOutputs(a.out, report); !s) return fail(s.error());

  // Summary table: our means over seeds next to the published means.
  fmt::print("fill experiment: {} ({} GPU nodes, {} GPUs), {} pods, tune {}, seeds {}\n", report.workload,
             nodes->size(), report.runs.front().total_gpus, pods->size(), a.tune, a.seeds);
  fmt::print("{:<17} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "policy", "runs", "alloc@100",
             "published", "alloc@130", "published", "frag@100", "s/run");
  std::map<std::string, std::vector<const sim::FillResult*>> by;
  for (const auto& r : report.runs) by[r.label].push_back(&r);
  for (const auto& [label, runs] : by) {
    const sim::Curve alloc = sim::MeanCurve(runs, &sim::FillResult::alloc_pct);
    const sim::Curve frag = sim::MeanCurve(runs, &sim::FillResult::frag_pct);
    double secs = 0;
    for (auto* r : runs) secs += r->seconds;
    auto v = [](const std::optional<double>& x) { return x ? fmt::format("{:.2f}", *x) : std::string("-"); };
    auto pub = [&](int k) {
      if (!published) return std::string("-");
      auto it = published->alloc_pct.find(label);
      return it == published->alloc_pct.end() ? std::string("-") : v(it->second[static_cast<size_t>(k)]);
    };
    fmt::print("{:<17} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.3f}\n", label, runs.size(), v(alloc[100]),
               pub(100), v(alloc[130]), pub(130), v(frag[100]), secs / static_cast<double>(runs.size()));
  }
  fmt::print("wrote {}/{{analysis_allo_discrete.csv, analysis_frag_ratio_discrete.csv, analysis_frag_discrete.csv, "
             "report.json, report.html}}\n", a.out);
  return 0;
}

}  // namespace

void RegisterSimCommands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Replay workloads through the scheduler with a virtual clock");
  sim->require_subcommand(1);
  RegisterSimQueueCommand(*sim);
  RegisterSimCompareCommand(*sim);
  RegisterSimOrgCommand(*sim);
  RegisterSimColocateCommand(*sim);

  auto args = std::make_shared<FillArgs>();
  auto* fill = sim->add_subcommand(
      "fill", "FGD fill experiment: place a topped-up, shuffled pod list with no departures and record "
              "allocation and fragmentation per 1% of arrived GPU demand");
  fill->add_option("--nodes", args->nodes, "openb node list CSV (CPU-only nodes are left out)")->required();
  fill->add_option("--pods", args->pods, "openb pod list CSV")->required();
  fill->add_option("--policy", args->policy,
                   "random, dotprod, gpuclustering, gpupacking, bestfit, fgd, a comma list, or all")
      ->capture_default_str();
  fill->add_option("--seeds", args->seeds, "seeds: 42-51, 42, or 42,45")->capture_default_str();
  fill->add_option("--tune", args->tune, "arrived GPU demand as a multiple of cluster GPUs")->capture_default_str();
  fill->add_option("--out", args->out, "output directory")->capture_default_str();
  fill->callback([args] { SetExitCode(RunFillCommand(*args)); });
}

}  // namespace tidal::cli
