// Scheduling-cycle latency of the tenant queue with 10,000 waiting jobs
// across 200 tenants on the 100k-GPU fat tree (bench/fat_tree.h), one core.
// Targets (the issue): a cycle's p99 <= 10 ms without preemption and
// <= 100 ms with a preemption search. Figures are also given as ratios to
// JobQueue fifo-backfill measured in the same run on a state built the same
// way with the same events (value / baseline: < 1 is faster).
//
// A cycle is one TenantQueue::Schedule(now) (JobQueue::Schedule for the
// baseline) after one event, as sim/queue_sim.cc drives the queue: the
// event (Push of an arrival, or Finish of a running job) is applied
// untimed, then the pass is timed. Wall time (steady_clock) is the
// headline; thread CPU time is given beside it, since on a shared machine
// wall-clock tails are other processes' time slices.
//
// Tenants: 200 leaves under one root, floors in proportion to seeded
// weights in [1, 10) summing to the 100,000 GPUs (tenancy::
// ProportionalTenants: no borrowing or lending limits). Jobs: the fat
// tree's mix (1/2/4/8-GPU pods, 16/32/64-GPU gangs; bench::DrawJobGpus),
// 4 cores and 32 GiB per GPU, runs of 1 to 7 days (nothing ends by itself
// while measured), each of a tenant drawn in proportion to its weight, as
// ProportionalTenants assumes of the demand (--uniform-tenants: uniformly;
// then large-floor tenants sit below their floors and reclaim from each
// other in every pass, a much slower fill). Placer: "topo" for every queue.
//
// The state is built by the queue itself: batches of 500 arrivals, one pass
// after each, one second apart, until 10,000 jobs wait. With this mix the
// queue then has every GPU allocated (1-GPU jobs fill every hole), so the
// waiting jobs are the ones that do not fit: a loaded state below 100% with
// 10,000 jobs waiting is not one a work-conserving queue reaches. Each
// queue has its own state, built from the same arrivals; the JSON gives
// the states before and after the measurement.
//
// Scenarios:
//  * no_preemption: TenantQueue with slurm-multifactor (one pool, Slurm's
//    fair share + age order, EASY backfill, no preemption). Fill from all
//    200 tenants. Events, 1-5 s apart: with probability 1/2 an arrival (a
//    new job of the mix and tenant draw), else the Finish of a random
//    running job (it frees room; the pass starts what now fits). Figures
//    per kind of event are given too.
//  * no_preemption_tidal: the same state procedure and events with the
//    tidal policy's quota admission and fair-share order but reclaim,
//    priority preemption and LAS-on-borrowed off.
//  * preemption: the tidal policy (elastic quotas, fair share, backfill,
//    reclaim, priority and LAS-on-borrowed preemption). 50 tenants (every
//    4th) submit nothing during the fill, so the other 150 borrow their
//    floors and fill the cluster. Each event, 1-5 s apart, is the arrival
//    of a job of one of these 50 tenants (uniformly) that fits within what
//    is left of its floor (pushed GPUs never exceed the floor) and that the
//    free quota does not admit (no GPU is free): the pass runs TryPreempt
//    for it (reclaim of its floor from the borrowers: a scan of every
//    running job for candidates, PlanPreemption, a what-if on the real
//    placer) and, as tidal does, the searches the evictions open for other
//    waiting jobs. The JSON counts the evictions (pass.preempted), the
//    cycles with one and the arrivals started in their own cycle, and
//    times one PlanPreemption alone on the final state (every running job
//    a candidate, every victim admissible) for 1, 8 and 64 GPUs.
//  * baseline (each scenario's): JobQueue fifo-backfill, state filled from
//    the same arrival stream, the same events (an arrival is the same job;
//    a Finish takes the running job at the same random rank). For the
//    preemption events it has nothing to do (its head is blocked and every
//    waiting shape is known not to fit), so that ratio only says so; the
//    preemption scenario is also compared with the tidal queue without any
//    preemption on its state procedure and events (what the search adds).
//
// Each measurement stops at a count or a time cap, whichever comes first
// (1,000 cycles; 8 s per queue, 20 s with preemption; after 3 warm-up
// cycles), so a slow queue has fewer samples (the JSON gives the counts).
//
//   build/bench/tenant_queue_bench --json          # one JSON object, ~30-60 s
//   build/bench/tenant_queue_bench --json --scenarios=preemption --time-scale=0.2
//   build/bench/tenant_queue_bench --json --scenarios=no_preemption --no-baseline --verbose
//   build/bench/tenant_queue_bench --benchmark_counters_tabular=true   # 200 cycles each
//   # profile: perf record -g build/bench/tenant_queue_bench --json --scenarios=preemption --no-baseline
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "fat_tree.h"
#include "plugins/registry.h"
#include "scheduler/preemption.h"
#include "scheduler/queue.h"
#include "scheduler/scheduler.h"
#include "scheduler/tenant_queue.h"
#include "tenancy/tenant_tree.h"
#include "tenancy/tenants_file.h"
#include "workload/job.h"

namespace {

using tidal::bench::Clock;
using tidal::bench::LoadAverage1m;
using tidal::bench::Micros;
using tidal::bench::Seconds;
using tidal::bench::ThreadCpuUs;

using tidal::ClusterState;
using tidal::Job;
using tidal::JobId;
using tidal::QueuePass;
using tidal::WorkQueue;
namespace tenancy = tidal::tenancy;

constexpr int kTenants = 200;
constexpr int kLenderEvery = 4;  // tenants 3, 7, 11, ...: lenders in the preemption scenario
constexpr size_t kWaiting = 10'000;
constexpr int kFillBatch = 500;
constexpr int kWarmUp = 3;
constexpr uint64_t kSeed = 20240611;
constexpr int64_t kDay = 86'400;
constexpr double kTargetNoPreemptionMs = 10;
constexpr double kTargetPreemptionMs = 100;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tenant_queue_bench: %s\n", what.c_str());
  std::exit(1);
}



double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// --- the cluster and the tenants -------------------------------------------

struct World {
  tidal::bench::Fabric fabric;
  ClusterState empty;
  double cluster_build_s = 0;
  std::shared_ptr<const tenancy::TenantTree> tree;
  std::vector<std::string> names;  // tenant number -> name
  std::vector<double> weight;      // demand weight; floors are in proportion to it
  std::vector<int64_t> floor_gpus;
  std::vector<int> all, busy, lenders;  // tenant numbers
  int64_t lenders_floor_gpus = 0;
};

const World& TheWorld() {
  static const World w = [] {
    World r;
    const auto t0 = Clock::now();
    r.empty = tidal::bench::BuildFatTree(r.fabric, "tenant_queue_bench");
    r.cluster_build_s = Seconds(Clock::now() - t0);
    tidal::Rng rng(kSeed);
    std::vector<tenancy::GroupUsage> groups;
    for (int i = 0; i < kTenants; ++i) {
      r.names.push_back(fmt::format("t{:03d}", i));
      r.weight.push_back(1.0 + 9.0 * rng.UniformDouble());
      groups.push_back({r.names.back(), r.weight.back()});
      r.all.push_back(i);
      (i % kLenderEvery == kLenderEvery - 1 ? r.lenders : r.busy).push_back(i);
    }
    auto tree = tenancy::ProportionalTenants(std::move(groups), r.empty.total_gpus());
    if (!tree) Die(tree.error().message);
    r.tree = std::make_shared<const tenancy::TenantTree>(std::move(*tree));
    const auto gpu = r.tree->resource("gpu");
    if (!gpu) Die("the tenant tree has no gpu resource");
    for (const auto& n : r.names) r.floor_gpus.push_back(r.tree->subtree(r.tree->Find(n), *gpu) / tidal::kMilliPerGpu);
    for (int l : r.lenders) r.lenders_floor_gpus += r.floor_gpus[static_cast<size_t>(l)];
    return r;
  }();
  return w;
}

Job MakeJob(JobId id, int32_t gpus, const std::string& tenant, int64_t submit_s, int64_t duration_s) {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.num_gpu = gpus;
  j.gpu_milli = tidal::kMilliPerGpu;
  j.cpu_milli = tidal::bench::kCpuPerGpu * gpus;
  j.memory_mib = tidal::bench::kMemPerGpu * gpus;
  j.single_node = gpus <= tidal::bench::kGpusPerHost;
  j.group = tenant;
  j.submit_time_s = submit_s;
  j.duration_s = duration_s;
  j.source = "tenant_queue_bench";
  return j;
}

int64_t DrawDuration(tidal::Rng& rng) { return kDay + static_cast<int64_t>(rng.Uniform(6 * kDay)); }

// A tenant of `pool`, drawn in proportion to its weight (the demand its
// floor is proportional to), or uniformly with --uniform-tenants.
bool g_uniform_tenants = false;
bool g_verbose = false;  // --verbose: each fill pass on stderr
class TenantDraw {
 public:
  explicit TenantDraw(const std::vector<int>& pool) : pool_(pool) {
    double sum = 0;
    for (int t : pool) cumulative_.push_back(sum += g_uniform_tenants ? 1.0 : TheWorld().weight[static_cast<size_t>(t)]);
  }
  int operator()(tidal::Rng& rng) const {
    const double u = rng.UniformDouble() * cumulative_.back();
    const auto k = std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
    return pool_[std::min(static_cast<size_t>(k), pool_.size() - 1)];
  }

 private:
  const std::vector<int>& pool_;
  std::vector<double> cumulative_;
};

// The fill's arrivals: the job mix, tenants of `pool` by TenantDraw.
class FillStream {
 public:
  explicit FillStream(const std::vector<int>& pool) : draw_(pool), rng_(kSeed + 1) {}
  Job Next(int64_t now) {
    const int32_t g = tidal::bench::DrawJobGpus(rng_);
    const int t = draw_(rng_);
    const int64_t d = DrawDuration(rng_);
    return MakeJob(++id_, g, TheWorld().names[static_cast<size_t>(t)], now, d);
  }

 private:
  TenantDraw draw_;
  tidal::Rng rng_;
  JobId id_ = 0;
};

// --- the measured events -----------------------------------------------------

enum class EventKind { kArrival, kFinish };
struct Event {
  EventKind kind = EventKind::kArrival;
  int64_t dt_s = 1;   // after the previous event
  double rank = 0;    // finish: the running job at this rank (0..1) of the running list
  Job job;            // arrival (submit time set when applied)
};

// No preemption: arrivals of any tenant or finishes, half and half.
// Preemption: arrivals of lender tenants within what is left of their floors.
class EventStream {
 public:
  explicit EventStream(bool preemption) : preemption_(preemption), draw_(TheWorld().all), rng_(kSeed + 2) {
    const World& w = TheWorld();
    for (int l : w.lenders) room_.push_back(w.floor_gpus[static_cast<size_t>(l)]);
  }
  // nullopt when the lenders' floors are used up (preemption only).
  std::optional<Event> Next() {
    const World& w = TheWorld();
    Event e;
    e.dt_s = 1 + static_cast<int64_t>(rng_.Uniform(5));
    if (!preemption_) {
      if (rng_.Uniform(2) == 0) {
        e.kind = EventKind::kFinish;
        e.rank = rng_.UniformDouble();
        return e;
      }
      const int32_t g = tidal::bench::DrawJobGpus(rng_);
      const int t = draw_(rng_);
      e.job = MakeJob(++id_, g, w.names[static_cast<size_t>(t)], 0, DrawDuration(rng_));
      return e;
    }
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int32_t g = tidal::bench::DrawJobGpus(rng_);
      const size_t k = rng_.Uniform(w.lenders.size());
      if (room_[k] < g) continue;
      room_[k] -= g;
      e.job = MakeJob(++id_, g, w.names[static_cast<size_t>(w.lenders[k])], 0, DrawDuration(rng_));
      return e;
    }
    // Nearly used up: the first lender with room, one GPU.
    for (size_t k = 0; k < room_.size(); ++k) {
      if (room_[k] < 1) continue;
      --room_[k];
      e.job = MakeJob(++id_, 1, w.names[static_cast<size_t>(w.lenders[k])], 0, DrawDuration(rng_));
      return e;
    }
    return std::nullopt;
  }

 private:
  bool preemption_;
  TenantDraw draw_;
  tidal::Rng rng_;
  std::vector<int64_t> room_;  // per lender: floor GPUs not yet pushed
  JobId id_ = 1'000'000'000;   // above the fill's ids
};

// --- one queue on its own copy of the cluster -------------------------------

enum class Policy { kSlurm, kTidalNoPreemption, kTidal, kFifoBackfill };
const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kSlurm: return "slurm-multifactor";
    case Policy::kTidalNoPreemption: return "tidal (reclaim, priority and LAS preemption off)";
    case Policy::kTidal: return "tidal";
    case Policy::kFifoBackfill: return "fifo-backfill (JobQueue)";
  }
  return "?";
}

struct StateInfo {
  size_t waiting = 0;
  size_t running = 0;
  double allocated = 0;
  // Tenant queues only (-1 otherwise).
  int tenants_waiting = -1;
  int tenants_borrowing = -1;      // usage above floor
  int tenants_below_floor = -1;    // usage below floor with jobs of theirs waiting or not
  int64_t floor_held_by_borrowers_gpus = -1;  // floors of tenants below theirs that the free GPUs do not cover
};

nlohmann::ordered_json StateJson(const StateInfo& s) {
  nlohmann::ordered_json j = {{"waiting", s.waiting}, {"running", s.running}, {"allocated", s.allocated}};
  if (s.tenants_waiting >= 0) {
    j["tenants_with_waiting_jobs"] = s.tenants_waiting;
    j["tenants_borrowing"] = s.tenants_borrowing;
    j["tenants_below_floor"] = s.tenants_below_floor;
    j["floor_gpus_held_by_borrowers"] = s.floor_held_by_borrowers_gpus;
  }
  return j;
}

class QueueRun {
 public:
  QueueRun(Policy policy, bool lenders_idle) : policy_(policy), lenders_idle_(lenders_idle) {
    const World& w = TheWorld();
    auto profile = tidal::plugins::MakePolicyProfile("topo", nullptr);
    if (!profile) Die(profile.error().message);
    scheduler_ = std::make_unique<tidal::Scheduler>(w.empty, std::move(*profile), kSeed);
    if (policy == Policy::kFifoBackfill) {
      queue_ = std::make_unique<tidal::JobQueue>(*scheduler_, tidal::QueuePolicy::kFifoBackfill);
    } else {
      auto o = tidal::TenantQueueOptionsFor(policy == Policy::kSlurm ? tidal::QueuePolicy::kSlurmMultifactor
                                                                     : tidal::QueuePolicy::kTidal);
      if (!o) Die(o.error().message);
      if (policy == Policy::kTidalNoPreemption) {
        o->reclaim = false;
        o->priority_preemption = false;
        o->las_on_borrowed = false;
      }
      auto tq = std::make_unique<tidal::TenantQueue>(*scheduler_, w.tree, *o);
      tq_ = tq.get();
      queue_ = std::move(tq);
    }
  }

  // Arrivals in batches, a pass after each, until kWaiting jobs wait.
  __attribute__((noinline)) void Fill() {
    const auto t0 = Clock::now();
    const World& w = TheWorld();
    FillStream stream(lenders_idle_ ? w.busy : w.all);
    std::vector<tidal::UnresolvableJob> rejected;
    for (int batch = 0; queue_->waiting() < kWaiting; ++batch) {
      if (batch > 200) Die(fmt::format("{}: the fill never got {} jobs waiting", PolicyName(policy_), kWaiting));
      for (int i = 0; i < kFillBatch; ++i) {
        jobs_.push_back(stream.Next(now_));
        Push(jobs_.back(), rejected);
      }
      const auto p0 = Clock::now();
      const size_t preempted = Pass(now_);
      fill_preempted_ += static_cast<int64_t>(preempted);
      fill_max_pass_s_ = std::max(fill_max_pass_s_, Seconds(Clock::now() - p0));
      if (g_verbose)
        std::fprintf(stderr, "fill pass %d: %.3f s, waiting %zu, running %zu, preempted %zu\n", batch,
                     Seconds(Clock::now() - p0), queue_->waiting(), queue_->running(), preempted);
      ++fill_passes_;
      now_ += 1;
    }
    fill_jobs_ = static_cast<int64_t>(jobs_.size());
    fill_s_ = Seconds(Clock::now() - t0);
    before_ = State();
  }

  struct Sample {
    double wall_us = 0, cpu_us = 0;
    EventKind kind = EventKind::kArrival;
  };
  struct Counts {
    int64_t arrivals = 0, finishes = 0;
    int64_t started = 0, backfilled = 0, preempted = 0;
    int64_t cycles_with_preemption = 0;
    int64_t arrivals_started_in_their_cycle = 0;
    int64_t arrivals_started_with_preemption = 0;  // ... in a cycle that evicted someone
    int64_t lost_gpu_s = 0;
  };

  // Applies one event untimed, then times the pass. False when out of events.
  bool Step(EventStream& events, bool record) {
    std::optional<Event> ev = events.Next();
    if (!ev) return false;
    now_ += ev->dt_s;
    const Job* arrived = nullptr;
    if (ev->kind == EventKind::kFinish) {
      if (running_.empty()) Die("nothing runs to finish");
      const auto k = std::min(running_.size() - 1, static_cast<size_t>(ev->rank * static_cast<double>(running_.size())));
      const Job* j = running_[k];
      if (auto s = queue_->Finish(*j); !s) Die(s.error().message);
      Forget(*j);
    } else {
      ev->job.submit_time_s = now_;
      jobs_.push_back(std::move(ev->job));
      std::vector<tidal::UnresolvableJob> rejected;
      Push(jobs_.back(), rejected);
      arrived = &jobs_.back();
    }
    const double c0 = ThreadCpuUs();
    const auto t0 = Clock::now();
    auto pass = queue_->Schedule(now_);
    const auto t1 = Clock::now();
    const double c1 = ThreadCpuUs();
    if (!pass) Die(pass.error().message);
    last_wall_s_ = Seconds(t1 - t0);
    if (record) {
      samples_.push_back({Micros(t1 - t0), c1 - c0, ev->kind});
      ++(arrived ? counts_.arrivals : counts_.finishes);
      counts_.started += static_cast<int64_t>(pass->started.size());
      counts_.backfilled += pass->backfilled;
      counts_.preempted += static_cast<int64_t>(pass->preempted.size());
      counts_.cycles_with_preemption += !pass->preempted.empty();
      for (const auto& p : pass->preempted) counts_.lost_gpu_s += p.lost_gpu_s;
      if (arrived && std::find(pass->started.begin(), pass->started.end(), arrived) != pass->started.end()) {
        ++counts_.arrivals_started_in_their_cycle;
        counts_.arrivals_started_with_preemption += !pass->preempted.empty();
      }
    }
    Apply(*pass);
    return true;
  }

  __attribute__((noinline)) void Measure(EventStream& events, int max_cycles, double max_s) {
    for (int i = 0; i < kWarmUp; ++i)
      if (!Step(events, false)) return;
    const auto begin = Clock::now();
    while (static_cast<int>(samples_.size()) < max_cycles) {
      if (!Step(events, true)) {
        out_of_events_ = true;
        break;
      }
      if (samples_.size() >= 20 && Seconds(Clock::now() - begin) > max_s) break;
    }
    measure_s_ = Seconds(Clock::now() - begin);
    after_ = State();
  }

  double last_wall_s() const { return last_wall_s_; }

  // What one victim search costs on this state: PlanPreemption for a pod
  // of `gpus` GPUs with every running job a candidate and every victim
  // admissible (TryPreempt's own candidate scan and what-if not included).
  nlohmann::ordered_json SearchCost(int32_t gpus) const {
    const ClusterState& c = scheduler_->cluster();
    const Job job = MakeJob(2'000'000'000, gpus, TheWorld().names.front(), now_, kDay);
    auto pod = tidal::ResolveRequest(job, c.models());
    if (!pod) Die(pod.error().message);
    std::vector<tidal::VictimCandidate> cands;
    for (const Job* j : running_) cands.push_back({j, 3600 * int64_t{j->num_gpu}, 0});
    auto admissible = [](const tidal::VictimCandidate&, std::span<const size_t>) { return true; };
    std::vector<double> us, cpu;
    size_t victims = 0;
    for (int i = 0; i < 7; ++i) {
      const double c0 = ThreadCpuUs();
      const auto t0 = Clock::now();
      auto plan = tidal::PlanPreemption(c, *pod, cands, admissible);
      const auto t1 = Clock::now();
      const double c1 = ThreadCpuUs();
      victims = plan ? plan->victims.size() : 0;
      benchmark::DoNotOptimize(plan);
      us.push_back(Micros(t1 - t0));
      cpu.push_back(c1 - c0);
    }
    return {{"gpus", gpus},
            {"candidates", cands.size()},
            {"first_us", us.front()},
            {"p50_us", Percentile(us, 0.5)},
            {"p50_cpu_us", Percentile(cpu, 0.5)},
            {"plan_victims", victims}};
  }

  nlohmann::ordered_json Json() const {
    using J = nlohmann::ordered_json;
    std::vector<double> wall, cpu, wall_arr, wall_fin, cpu_arr, cpu_fin;
    for (const Sample& s : samples_) {
      wall.push_back(s.wall_us);
      cpu.push_back(s.cpu_us);
      (s.kind == EventKind::kArrival ? wall_arr : wall_fin).push_back(s.wall_us);
      (s.kind == EventKind::kArrival ? cpu_arr : cpu_fin).push_back(s.cpu_us);
    }
    auto dist = [](const std::vector<double>& w, const std::vector<double>& c) {
      return J{{"p50_us", Percentile(w, 0.50)},     {"p99_us", Percentile(w, 0.99)},
               {"max_us", Percentile(w, 1.0)},      {"p50_cpu_us", Percentile(c, 0.50)},
               {"p99_cpu_us", Percentile(c, 0.99)}, {"max_cpu_us", Percentile(c, 1.0)},
               {"cycles", w.size()}};
    };
    J j = {{"policy", PolicyName(policy_)}};
    j["cycle"] = dist(wall, cpu);
    if (!wall_arr.empty() && !wall_fin.empty()) {
      j["after_arrival"] = dist(wall_arr, cpu_arr);
      j["after_finish"] = dist(wall_fin, cpu_fin);
    }
    j["counts"] = {{"arrivals", counts_.arrivals},
                   {"finishes", counts_.finishes},
                   {"started", counts_.started},
                   {"backfilled", counts_.backfilled},
                   {"preempted", counts_.preempted},
                   {"cycles_with_preemption", counts_.cycles_with_preemption},
                   {"arrivals_started_in_their_cycle", counts_.arrivals_started_in_their_cycle},
                   {"arrivals_started_with_preemption", counts_.arrivals_started_with_preemption},
                   {"lost_gpu_hours", static_cast<double>(counts_.lost_gpu_s) / 3600.0}};
    j["fill"] = {{"jobs_pushed", fill_jobs_},
                 {"passes", fill_passes_},
                 {"preempted", fill_preempted_},
                 {"slowest_pass_s", fill_max_pass_s_},
                 {"seconds", fill_s_}};
    j["state_before"] = StateJson(before_);
    j["state_after"] = StateJson(after_);
    j["measure_s"] = measure_s_;
    j["out_of_events"] = out_of_events_;
    return j;
  }

  const std::vector<Sample>& samples() const { return samples_; }

 private:
  void Push(const Job& job, std::vector<tidal::UnresolvableJob>& rejected) {
    if (auto s = queue_->Push(job, rejected); !s) Die(s.error().message);
    if (!rejected.empty()) Die(fmt::format("job {} is unresolvable: {}", job.id, rejected.front().reason));
  }
  size_t Pass(int64_t now) {
    auto pass = queue_->Schedule(now);
    if (!pass) Die(pass.error().message);
    Apply(*pass);
    return pass->preempted.size();
  }
  void Apply(const QueuePass& pass) {
    if (!pass.unresolvable.empty()) Die("a job was found unresolvable: " + pass.unresolvable.front().reason);
    for (const auto& p : pass.preempted) Forget(*p.job);
    for (const Job* j : pass.started) {
      pos_[j->id] = running_.size();
      running_.push_back(j);
    }
  }
  void Forget(const Job& j) {
    auto it = pos_.find(j.id);
    if (it == pos_.end()) Die(fmt::format("job {} was not running", j.id));
    const size_t k = it->second;
    pos_.erase(it);
    if (k + 1 != running_.size()) {
      running_[k] = running_.back();
      pos_[running_[k]->id] = k;
    }
    running_.pop_back();
  }
  StateInfo State() const {
    StateInfo s;
    s.waiting = queue_->waiting();
    s.running = queue_->running();
    const ClusterState& c = scheduler_->cluster();
    s.allocated = static_cast<double>(c.total_gpu_milli_allocated()) / static_cast<double>(c.total_gpu_milli());
    if (tq_ != nullptr) {
      s.tenants_waiting = s.tenants_borrowing = s.tenants_below_floor = 0;
      int64_t below = 0;
      for (const auto& t : tq_->TenantStatuses()) {
        s.tenants_waiting += t.waiting > 0;
        s.tenants_borrowing += t.usage_gpu_milli > t.floor_gpu_milli;
        s.tenants_below_floor += t.usage_gpu_milli < t.floor_gpu_milli;
        below += std::max<int64_t>(0, t.floor_gpu_milli - t.usage_gpu_milli);
      }
      s.floor_held_by_borrowers_gpus = std::max<int64_t>(0, below - c.total_gpu_milli_free()) / tidal::kMilliPerGpu;
    }
    return s;
  }

  Policy policy_;
  bool lenders_idle_;
  std::unique_ptr<tidal::Scheduler> scheduler_;
  std::unique_ptr<WorkQueue> queue_;
  tidal::TenantQueue* tq_ = nullptr;
  std::deque<Job> jobs_;  // stable addresses: the queue keeps pointers
  std::vector<const Job*> running_;
  std::unordered_map<JobId, size_t> pos_;
  int64_t now_ = 0;
  int64_t fill_jobs_ = 0, fill_passes_ = 0, fill_preempted_ = 0;
  double fill_max_pass_s_ = 0;
  double fill_s_ = 0, measure_s_ = 0, last_wall_s_ = 0;
  bool out_of_events_ = false;
  StateInfo before_, after_;
  std::vector<Sample> samples_;
  Counts counts_;
};

// --- scenarios ---------------------------------------------------------------

struct Scenario {
  const char* name;
  Policy policy;
  bool preemption;  // lenders idle in the fill, lender arrivals as events
  double target_ms;
};

const std::vector<Scenario> kScenarios = {
    {"no_preemption", Policy::kSlurm, false, kTargetNoPreemptionMs},
    {"no_preemption_tidal", Policy::kTidalNoPreemption, false, kTargetNoPreemptionMs},
    {"preemption", Policy::kTidal, true, kTargetPreemptionMs},
};

struct Options {
  std::vector<std::string> scenarios;
  int cycles = 1000;
  double max_s = 8.0;             // per queue without preemption
  double max_s_preemption = 20.0; // per queue with (cycles are ~10x longer)
  bool baseline = true;
  bool Has(const std::string& s) const {
    return scenarios.empty() || std::find(scenarios.begin(), scenarios.end(), s) != scenarios.end();
  }
};

nlohmann::ordered_json Measured(Policy policy, bool preemption, const Options& o, bool search_cost = false) {
  QueueRun run(policy, preemption);
  run.Fill();
  EventStream events(preemption);
  run.Measure(events, o.cycles, preemption ? o.max_s_preemption : o.max_s);
  std::vector<double> wall, cpu;
  for (const auto& s : run.samples()) wall.push_back(s.wall_us), cpu.push_back(s.cpu_us);
  std::fprintf(stderr, "tenant_queue_bench: %-9s %-50s p50 %9.1f p99 %9.1f us (cpu p99 %9.1f), %zu cycles\n",
               preemption ? "preempt" : "no-preempt", PolicyName(policy), Percentile(wall, 0.5), Percentile(wall, 0.99),
               Percentile(cpu, 0.99), wall.size());
  auto j = run.Json();
  if (search_cost) j["one_victim_search"] = {run.SearchCost(1), run.SearchCost(8), run.SearchCost(64)};
  return j;
}

nlohmann::ordered_json RunJson(const Options& o) {
  using J = nlohmann::ordered_json;
  const auto t_start = Clock::now();
  const double load_before = LoadAverage1m();
  const World& w = TheWorld();
  J scenarios = J::object();
  // One baseline per state procedure and event stream (the two no-preemption scenarios share theirs).
  std::optional<J> baseline_for[2];
  J headline = J::object();
  // value / reference's value for one key of the cycle figures.
  auto ratio = [](const J& m, const J& ref, const char* part, const char* key) -> J {
    if (!m.contains(part) || !ref.contains(part)) return J();
    const double x = m[part][key].get<double>(), y = ref[part][key].get<double>();
    return y > 0 ? J(x / y) : J();
  };
  auto ratios = [&](const J& m, const J& ref) {
    J r = J::object();
    for (const char* k : {"p50_us", "p99_us", "max_us", "p50_cpu_us", "p99_cpu_us"}) r[k] = ratio(m, ref, "cycle", k);
    for (const char* part : {"after_arrival", "after_finish"})
      if (m.contains(part) && ref.contains(part)) r[std::string(part) + "_p99_us"] = ratio(m, ref, part, "p99_us");
    return r;
  };
  for (const Scenario& s : kScenarios) {
    if (!o.Has(s.name)) continue;
    J m = Measured(s.policy, s.preemption, o, s.preemption);
    auto& b = baseline_for[s.preemption ? 1 : 0];
    if (o.baseline && !b) b = Measured(Policy::kFifoBackfill, s.preemption, o);
    // With preemption, also the same tenant queue without any preemption
    // on the same state procedure and events: what the search adds.
    std::optional<J> ref;
    if (s.preemption && o.baseline) ref = Measured(Policy::kTidalNoPreemption, true, o);
    const double p99_ms = m["cycle"]["p99_us"].get<double>() / 1000.0;
    const double p99_cpu_ms = m["cycle"]["p99_cpu_us"].get<double>() / 1000.0;
    J one = J::object();
    one["target_p99_ms_max"] = s.target_ms;
    one["p99_ms"] = p99_ms;
    one["p99_cpu_ms"] = p99_cpu_ms;
    one["met"] = p99_ms <= s.target_ms;
    one["met_cpu_time"] = p99_cpu_ms <= s.target_ms;
    one["ratio_to_baseline"] = b ? ratios(m, *b) : J();
    if (ref) one["ratio_to_tidal_without_preemption"] = ratios(m, *ref);
    one["measured"] = std::move(m);
    if (b) one["baseline"] = *b;
    if (ref) one["tidal_without_preemption"] = *ref;
    headline[s.name] = {{"p99_ms", p99_ms},
                        {"p99_cpu_ms", p99_cpu_ms},
                        {"target_p99_ms_max", s.target_ms},
                        {"met", p99_ms <= s.target_ms},
                        {"met_cpu_time", p99_cpu_ms <= s.target_ms},
                        {"p99_ratio_to_baseline", one["ratio_to_baseline"].is_null() ? J() : one["ratio_to_baseline"]["p99_us"]}};
    if (ref) headline[s.name]["p99_ratio_to_tidal_without_preemption"] = one["ratio_to_tidal_without_preemption"]["p99_us"];
    scenarios[s.name] = std::move(one);
  }
  J out = J::object();
  out["headline"] = std::move(headline);
  out["baseline_policy"] = PolicyName(Policy::kFifoBackfill);
  out["scenarios"] = std::move(scenarios);
  out["cluster"] = {{"hosts", tidal::bench::kHosts},
                    {"gpus", w.empty.total_gpus()},
                    {"hosts_per_leaf", tidal::bench::kHostsPerLeaf},
                    {"leaves_per_spine_group", tidal::bench::kLeavesPerSpine},
                    {"leaves", w.fabric.leaves},
                    {"spine_groups", w.fabric.spine_groups},
                    {"placer", "topo"},
                    {"build_s", w.cluster_build_s}};
  const auto [lo, hi] = std::minmax_element(w.floor_gpus.begin(), w.floor_gpus.end());
  out["tenants"] = {{"leaves", kTenants},
                    {"floor_gpus_min", *lo},
                    {"floor_gpus_max", *hi},
                    {"arrivals_by", g_uniform_tenants ? "uniform" : "weight (floors are in proportion to it)"},
                    {"lenders_in_preemption_scenario", w.lenders.size()},
                    {"lenders_floor_gpus", w.lenders_floor_gpus}};
  out["workload"] = {{"waiting_target", kWaiting},
                     {"fill_batch", kFillBatch},
                     {"job_gpus", "1 40%, 2 20%, 4 20%, 8 12%, 16 4%, 32 2.5%, 64 1.5% (gangs above 8)"},
                     {"duration_days", "1-7"},
                     {"event_spacing_s", "1-5"},
                     {"warm_up_cycles", kWarmUp},
                     {"max_cycles", o.cycles},
                     {"max_s_per_queue", o.max_s},
                     {"max_s_per_queue_preemption", o.max_s_preemption}};
  out["machine"] = {{"loadavg_1m_before", load_before}, {"loadavg_1m_after", LoadAverage1m()}};
  out["wall_s"] = Seconds(Clock::now() - t_start);
  return out;
}

// --- Google Benchmark registrations ----------------------------------------

// One iteration = one event (untimed) + one pass (manual time).
void BM_Cycle(benchmark::State& state, Policy policy, bool preemption) {
  QueueRun run(policy, preemption);
  run.Fill();
  EventStream events(preemption);
  for (auto _ : state) {
    if (!run.Step(events, true)) {
      state.SkipWithError("out of events");
      break;
    }
    state.SetIterationTime(run.last_wall_s());
  }
  std::vector<double> v;
  for (const auto& s : run.samples()) v.push_back(s.wall_us);
  state.counters["p50_us"] = Percentile(v, 0.50);
  state.counters["p99_us"] = Percentile(v, 0.99);
}

void Register() {
  for (const Scenario& s : kScenarios) {
    benchmark::RegisterBenchmark(fmt::format("BM_Cycle/{}", s.name).c_str(), BM_Cycle, s.policy, s.preemption)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime()
        ->Iterations(200);
  }
  for (bool preemption : {false, true}) {
    benchmark::RegisterBenchmark(fmt::format("BM_Cycle/baseline_{}", preemption ? "preemption" : "no_preemption").c_str(),
                                 BM_Cycle, Policy::kFifoBackfill, preemption)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime()
        ->Iterations(200);
  }
}


}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  Options o;
  std::vector<char*> rest = {argv[0]};
  auto value = [](const std::string& a, const char* flag) -> std::optional<std::string> {
    const std::string f = std::string(flag) + "=";
    if (a.rfind(f, 0) != 0) return std::nullopt;
    return a.substr(f.size());
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--verbose") {
      g_verbose = true;
    } else if (a == "--uniform-tenants") {
      g_uniform_tenants = true;
    } else if (a == "--no-baseline") {
      o.baseline = false;
    } else if (auto v = value(a, "--scenarios")) {
      o.scenarios = tidal::bench::SplitCommas(*v);
      if (o.scenarios.empty()) Die("--scenarios= names nothing");
      for (const auto& s : o.scenarios)
        if (std::none_of(kScenarios.begin(), kScenarios.end(), [&](const Scenario& k) { return s == k.name; }))
          Die(fmt::format("unknown scenario '{}'; choose from no_preemption, no_preemption_tidal, preemption", s));
    } else if (auto v = value(a, "--cycles")) {
      o.cycles = std::max(20, std::atoi(v->c_str()));
    } else if (auto v = value(a, "--time-scale")) {
      // Scales every measurement's time and count caps (a quick look: 0.2).
      const double k = std::atof(v->c_str());
      if (!(k > 0)) Die("--time-scale must be > 0");
      o.max_s *= k, o.max_s_preemption *= k;
      o.cycles = std::max(20, static_cast<int>(std::lround(o.cycles * k)));
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (json) {
    if (rest.size() > 1) Die(fmt::format("--json takes no Google Benchmark flags (got '{}')", rest[1]));
    std::printf("%s\n", RunJson(o).dump(2).c_str());
    return 0;
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
