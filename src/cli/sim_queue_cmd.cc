// `tidal sim queue`: replay a time-stamped trace with queueing.
//
//   tidal sim queue --nodes FILE --jobs FILE [--format philly|openb]
//                   [--policy NAME] [--queue fifo|fifo-backfill] [--seed N]
//                   [--limit N] [--single-node-if-fits] [--json] [--out DIR]
//
// Philly: --jobs is the Pollux job list, --nodes the Philly machine list.
// openb: --jobs is a pod list with creation/deletion times, --nodes the node
// list (all nodes, CPU-only ones included: CPU-only pods need them).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "market/market_config.h"
#include "plugins/registry.h"
#include "scheduler/queue.h"
#include "sim/queue_sim.h"
#include "sim/workload_input.h"
#include "sim/workload_model.h"
#include "topology/formats.h"
#include "topology/level.h"
#include "workload/traces/openb.h"
#include "workload/traces/philly.h"

namespace tidal::cli {
namespace {

struct QueueArgs {
  std::string nodes, jobs, format = "auto", policy = "bestfit", queue = "fifo-backfill", out;
  std::string topology, topology_format = "auto", workload_model, require_level, prefer_level, tenants;
  int64_t checkpoint_interval_s = 1800, restart_penalty_s = 60;
  int64_t explain_job = -1, explain_at_s = 0;
  int64_t start_estimates = 0;
  int start_estimate_samples = 20;
  std::string estimate = "exact";
  std::string hoarding, market;
  uint64_t seed = 42;
  int64_t limit = 0;
  double load = 0, time_scale = 0, slowdown_ok = 1.0, reclaim_slowdown_max = 0;
  int64_t max_wait_s = -1;
  bool json = false;
  bool single_node_if_fits = false;
};

void PrintSummary(const sim::QueueSimResult& r) {
  auto row = [](const char* name, const sim::Summary& s) {
    fmt::print("  {:<16} mean {:>12.1f}  p50 {:>10.1f}  p95 {:>12.1f}  p99 {:>12.1f}\n", name, s.mean, s.p50, s.p95,
               s.p99);
  };
  fmt::print("queue experiment: placer {}, queue {}, seed {}: {} nodes, {} GPUs\n", r.policy, r.queue, r.seed, r.nodes,
             r.total_gpus);
  fmt::print("  jobs {} finished {} unresolvable {} backfilled {}, makespan {} s, max waiting {}\n", r.jobs_total,
             r.jobs_finished, r.jobs_unresolvable, r.backfilled, r.makespan_s, r.max_waiting);
  row("queue delay (s)", r.queue_delay_s);
  row("JCT (s)", r.jct_s);
  if (r.preemptions > 0) row("wait (s)", r.wait_s);
  fmt::print("  GPU allocation rate {:.4f}   stranded GPU share {:.4f}, idle {:.4f} (while jobs wait: {:.1f}% of the run)\n",
             r.allocation_rate, r.stranded_gpu_share, r.idle_gpu_share_while_waiting, 100.0 * r.waiting_time_share);
  if (!r.tenants.empty()) {
    fmt::print("  tenants {}: preemptions {}, lost GPU-hours {:.1f}, guarantee violations {} ({:.1f} tenant-hours), "
               "fairness max/min slowdown {:.2f}\n",
               r.tenants, r.preemptions, r.lost_gpu_hours, r.guarantee_violations, r.guarantee_violation_hours,
               r.fairness_max_min_slowdown);
  }
  if (r.explain.job >= 0) {
    fmt::print("  job {} at {} s: {}\n", r.explain.job, r.explain.at_s, r.explain.state);
    for (const auto& b : r.explain.causes) fmt::print("    - {}{}\n", b.detail, b.resolvable ? "" : " (unresolvable)");
    if (r.explain.start_samples > 0) {
      auto at = [](int64_t v) { return v < 0 ? std::string("never") : fmt::format("{} s", v); };
      fmt::print("    estimated start: P50 {}, P90 {} ({} sample{}, forward run of the queue with the {} estimates)\n",
                 at(r.explain.start_p50_s), at(r.explain.start_p90_s), r.explain.start_samples,
                 r.explain.start_samples == 1 ? "" : "s", r.estimate);
    }
  }
  if (const auto& e = r.start_estimate_error; e.sampled > 0) {
    fmt::print("  start estimates: {} sampled, {} started at once; on the {} that waited |P50 - actual| p50 {:.0f} s, "
               "p90 {:.0f} s, mean {:.0f} s (bias {:+.0f} s), actual <= P90 for {:.1f}%\n",
               e.sampled, e.started_at_once, e.samples, e.p50, e.p90, e.mean, e.bias_mean, 100 * e.coverage_p90);
  }
  if (r.zombies > 0) {
    fmt::print("  zombies {}: hoarded {:.1f} GPU-hours idle, {} reclaimed by the market\n", r.zombies,
               r.hoarded_gpu_hours, r.zombies_reclaimed);
  }
  if (r.market) {
    const sim::MarketSimResult& m = *r.market;
    fmt::print("  market: revenue {} credits, keep fees {}, price multiplier {:.2f}-{:.2f} (mean {:.2f}); ledger check "
               "{} ({} transfers, grants {} = balances {})\n",
               market::FormatCredits(m.revenue), market::FormatCredits(m.penalties), m.multiplier_min,
               m.multiplier_max, m.multiplier_mean, m.check.ok() ? "ok" : "FAILED", m.check.transfers,
               market::FormatCredits(m.check.grants), market::FormatCredits(m.check.tenant_balances));
    fmt::print("    {:<14} {:>14} {:>14} {:>14} {:>12} {:>14}\n", "tenant", "granted", "spent", "lending", "fees",
               "balance");
    for (const auto& t : m.tenants)
      fmt::print("    {:<14} {:>14} {:>14} {:>14} {:>12} {:>14}{}\n", t.name, market::FormatCredits(t.granted),
                 market::FormatCredits(t.spent), market::FormatCredits(t.lending_credits),
                 market::FormatCredits(t.hoarding_fees), market::FormatCredits(t.balance),
                 t.over_budget ? "  over budget" : "");
  }
  fmt::print("  replay took {:.2f} s\n", r.seconds);
}

int RunQueueCommand(const QueueArgs& a) {
  auto fail = [](const Error& e) {
    fmt::print(stderr, "tidal sim queue: {}\n", e.ToString());
    return 1;
  };
  const auto& names = plugins::PlacerNames();
  if (std::find(names.begin(), names.end(), a.policy) == names.end()) {
    return fail(Error{ErrorCode::kInvalidArgument,
                      fmt::format("unknown --policy '{}'; choose one of {}", a.policy, fmt::join(names, ", "))});
  }
  auto queue = ParseQueuePolicy(a.queue);
  if (!queue) return fail(queue.error());

  sim::QueueSimOptions options;
  options.policy = a.policy;
  options.queue = *queue;
  options.seed = a.seed;
  options.limit = a.limit;
  options.single_node_if_fits = a.single_node_if_fits;
  options.load = a.load;
  options.time_scale = a.time_scale;
  options.max_wait_s = a.max_wait_s;
  options.slowdown_ok = a.slowdown_ok;
  if (a.reclaim_slowdown_max != 0 && !(a.reclaim_slowdown_max >= 1)) {
    return fail(Error{ErrorCode::kInvalidArgument, "--reclaim-slowdown-max must be >= 1 (times a compact placement's step time)"});
  }
  options.reclaim_slowdown_max = a.reclaim_slowdown_max;
  options.tenants = a.tenants;
  options.explain_job = a.explain_job;
  options.estimate = a.estimate;
  options.explain_at_s = a.explain_at_s;
  options.start_estimates = a.start_estimates;
  options.start_estimate_samples = a.start_estimate_samples;
  if (!a.hoarding.empty()) {
    auto h = sim::ParseHoarding(a.hoarding);
    if (!h) return fail(h.error());
    options.hoarding = *h;
  }
  if (!a.market.empty()) {
    auto cfg = a.market == "default" ? Result<market::MarketConfig>(market::DefaultMarketConfig())
                                     : market::ReadMarketFile(a.market);
    if (!cfg) return fail(cfg.error());
    options.market = sim::MarketSimOptions{.config = *cfg};
  }
  options.checkpoint_interval_s = a.checkpoint_interval_s;
  options.restart_penalty_s = a.restart_penalty_s;
  if (a.checkpoint_interval_s <= 0 || a.restart_penalty_s < 0) {
    return fail(Error{ErrorCode::kInvalidArgument, "--checkpoint-interval must be > 0 and --restart-penalty >= 0 seconds"});
  }
  for (auto [text, slot] : {std::pair{&a.require_level, &options.require_level}, std::pair{&a.prefer_level, &options.prefer_level}}) {
    if (text->empty()) continue;
    auto l = topo::ParseLevel(*text);
    if (!l) return fail(l.error());
    *slot = *l;
  }
  if (!a.topology.empty()) {
    auto f = topo::ParseFormat(a.topology_format);
    if (!f) return fail(f.error());
    auto t = topo::ReadTopology(a.topology, *f);
    if (!t) return fail(t.error());
    options.topology = std::make_shared<const topo::Topology>(std::move(*t));
  }
  if (a.limit < 0) {
    return fail(Error{ErrorCode::kInvalidArgument, fmt::format("--limit {} is negative; use 0 for all jobs or N > 0", a.limit)});
  }
  auto w = sim::LoadWorkload(a.nodes, a.jobs, a.format, options.topology.get());
  if (!w) return fail(w.error());
  if (!a.workload_model.empty()) {
    auto wm = sim::WorkloadModel::Read(a.workload_model);
    if (!wm) return fail(wm.error());
    options.workload_model = std::move(*wm);
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto start = std::chrono::steady_clock::now();
  if (tty) {
    options.progress = [start](const sim::QueueProgress& p) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double frac = p.jobs_total > 0 ? static_cast<double>(p.jobs_done) / static_cast<double>(p.jobs_total) : 1;
      const double eta = frac > 0 ? elapsed / frac - elapsed : 0;
      fmt::print(stderr, "\r[queue] {:5.1f}%  {}/{} jobs  day {:.1f}  waiting {}  running {}  eta {:.0f}s   ",
                 100.0 * frac, p.jobs_done, p.jobs_total, static_cast<double>(p.now_s) / 86400.0, p.waiting,
                 p.running, eta);
    };
  }
  auto r = sim::RunQueueSim(w->nodes, w->jobs, options);
  if (tty) fmt::print(stderr, "\r{:100}\r", "");
  if (!r) return fail(r.error());

  if (r->jobs_unresolvable > 0) {
    fmt::print(stderr, "tidal sim queue: {} job(s) can never fit and were left out of the metrics:\n",
               r->jobs_unresolvable);
    int shown = 0;
    for (const auto& j : r->jobs) {
      if (j.outcome != sim::JobOutcome::kUnresolvable) continue;
      if (++shown > 5) {
        fmt::print(stderr, "  ... (all listed in jobs.csv with --out DIR)\n");
        break;
      }
      fmt::print(stderr, "  {}\n", j.reason);
    }
  }
  if (!a.out.empty()) {
    if (auto s = sim::WriteQueueSimOutputs(*r, a.out); !s) return fail(s.error());
  }
  if (a.json) {
    fmt::print("{}\n", sim::QueueSimJson(*r).dump(2));
  } else {
    PrintSummary(*r);
    if (!a.out.empty()) fmt::print("wrote {0}/summary.json, {0}/jobs.csv and {0}/report.html\n", a.out);
  }
  return 0;
}

}  // namespace

void RegisterSimQueueCommand(CLI::App& sim) {
  auto args = std::make_shared<QueueArgs>();
  auto* q = sim.add_subcommand(
      "queue", "Queue experiment: replay a time-stamped trace (jobs arrive, wait, run, leave) through the "
               "scheduler with FIFO or FIFO + EASY backfill and report queueing delay, JCT, GPU allocation "
               "and stranded GPU share");
  q->add_option("--nodes", args->nodes, "node list: Philly machine list or openb node list (may be left out with a --topology that gives every host's GPUs)");
  q->add_option("--jobs", args->jobs, "job list: Philly (Pollux) jobs or an openb pod list with times")
      ->required();
  q->add_option("--format", args->format, "philly, openb, or auto (from the job file's header)")
      ->capture_default_str();
  q->add_option("--policy", args->policy,
                "placer: random, dotprod, gpuclustering, gpupacking, bestfit, fgd, topo, first-fit, slurm-tree, "
                "kueue-tas, hived")
      ->capture_default_str();
  q->add_option("--topology", args->topology,
                "interconnect (any format `tidal topo show` reads; host names must match the node list): placers see "
                "switches and multi-GPU jobs run longer on worse placements");
  q->add_option("--topology-format", args->topology_format, "format of --topology (auto by content)")->capture_default_str();
  q->add_option("--workload-model", args->workload_model,
                "which model each multi-GPU job trains (default: data/workload_models/default.yaml, built in)");
  q->add_option("--load", args->load, "compress arrivals to this offered load (e.g. 0.75 of the GPUs); 0 = as recorded");
  q->add_option("--time-scale", args->time_scale, "divide inter-arrival times by K (exclusive with --load)");
  q->add_option("--max-wait", args->max_wait_s,
                "seconds a multi-GPU job may wait for a placement at most --slowdown-ok slower than compact (topo placer); "
                "-1 = as long as it takes, 0 = never")
      ->capture_default_str();
  q->add_option("--slowdown-ok", args->slowdown_ok, "slowdown a waiting job accepts (with --max-wait)")->capture_default_str();
  q->add_option("--reclaim-slowdown-max", args->reclaim_slowdown_max,
                "tenant queues: the slowest placement (x compact) a job reclaiming its floor takes at once rather than "
                "waiting for whole hosts; 0 = the policy's default");
  q->add_option("--require-level", args->require_level,
                "every multi-GPU job must fit in one domain of this level (node, block, leaf, spine, core, zone)");
  q->add_option("--prefer-level", args->prefer_level, "every multi-GPU job prefers one domain of this level, falling back upwards");
  q->add_option("--queue", args->queue,
                "queue policy: fifo, fifo-backfill (one pool); static-partitions, slurm-multifactor, kueue, las, tidal "
                "(tenant queue, docs/tenancy.md)")
      ->capture_default_str();
  q->add_option("--tenants", args->tenants,
                "tenants: 'proportional' (one per value of the trace's tenant column, floors by GPU-hours) or a "
                "tenants file (docs/tenancy.md)");
  q->add_option("--checkpoint-interval", args->checkpoint_interval_s,
                "seconds of run time between checkpoints: a preempted job redoes the work since its last one")
      ->capture_default_str();
  q->add_option("--restart-penalty", args->restart_penalty_s, "seconds of run time each restart after preemption costs")
      ->capture_default_str();
  q->add_option("--seed", args->seed, "seed for the placer's random choices")->capture_default_str();
  q->add_option("--limit", args->limit, "replay only the first N jobs by submit time (0 = all)")
      ->capture_default_str();
  q->add_flag("--single-node-if-fits", args->single_node_if_fits,
              "a gang that fits on one node must run on one node (Philly's locality rule); larger gangs span");
  q->add_option("--estimate", args->estimate,
                "run-time estimates backfill plans with: exact, or f-model:F (estimate = run time x U[1, F], seeded)")
      ->capture_default_str();
  q->add_option("--explain", args->explain_job,
                "job id to explain: at --at, print whether it waits, every cause that blocks it (quota, capacity, "
                "topology, placement, reservation) and its estimated start (P50, P90)");
  q->add_option("--at", args->explain_at_s, "seconds from the first submission for --explain")->capture_default_str();
  q->add_option("--hoarding", args->hoarding,
                "zombies: SHARE[:MIN_S:MAX_S[:SEED]] - that share of jobs keep their GPUs idle after their work "
                "ends, for a time log-uniform in [MIN_S, MAX_S] (default 3600:172800)");
  q->add_option("--market", args->market,
                "run the market (tenant queues): a market config file (data/market/*.yaml) or 'default'");
  q->add_option("--start-estimates", args->start_estimates,
                "estimate the start of N jobs (drawn by the seed) at their submission by running the queue forward, "
                "and report the estimates' error against their actual start (start_estimate_error_s); 0 = off, each "
                "costs --start-estimate-samples forward runs")
      ->capture_default_str();
  q->add_option("--start-estimate-samples", args->start_estimate_samples,
                "forward runs per start estimate (each redraws the unknown true run times from the estimate model; "
                "exact estimates need one)")
      ->capture_default_str();
  q->add_flag("--json", args->json, "print the metrics as JSON");
  q->add_option("--out", args->out, "also write summary.json, jobs.csv (one row per job) and report.html here");
  q->callback([args] { SetExitCode(RunQueueCommand(*args)); });
}

}  // namespace tidal::cli
