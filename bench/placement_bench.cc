// Placement speed on a 100k-GPU fat tree: 12,500 hosts x 8 NVLink GPUs, 32
// hosts per leaf, 16 leaves per spine group (390 full leaves + one of 20
// hosts; 25 spine groups, the last partial), under one core. Targets (the
// issue): a 1,024-GPU gang decision p99 <= 1 ms, single-GPU decisions
// >= 50k/s on one core, on an empty and on a loaded (70% allocated,
// fragmented) cluster. Every topology placer is measured in the same run and
// figures are given as ratios to first-fit (value / first-fit's value: < 1 is
// faster for latencies, > 1 for rates).
//
// Operations, per placer and state:
//  * gang1024: one PlaceGang call for a 1,024-GPU gang (no bind), the same
//    request on the same state each time; per-call latencies, p50/p99.
//  * single_gpu: a stream of 1-GPU jobs through Scheduler::ScheduleAndBind
//    with the placer's profile, released every batch of 256 (outside the
//    timed part) so the state stays at its load; decisions/s.
//  * gpu8: the same with 8-GPU single-node jobs (batches of 32).
//
// The loaded state is built once by a Scheduler with the "random" profile
// (kube-scheduler-style random spreading, so small jobs are scattered over
// the hosts): a seeded mix of 1/2/4/8-GPU pods and 16-64-GPU gangs bound
// until 77.8% of the GPUs are allocated, then a random 10% of the jobs
// released (about 70% left, free GPUs in holes everywhere). Each placer
// gets a copy.
//
// Each measurement stops at a count or a time cap, whichever comes first
// (gang: 2,000 calls / 2 s; 1-GPU: 50,000 / 1.5 s; 8-GPU: 10,000 / 1 s), so a
// slow placer has fewer samples (the JSON gives the counts). Wall time
// (steady_clock) is the headline; thread CPU time is given beside it,
// because on a shared machine wall-clock tails are other processes' slices.
//
//   build/bench/placement_bench --json            # one JSON object, ~30 s
//   build/bench/placement_bench --benchmark_counters_tabular=true
//   build/bench/placement_bench --json --placers=topo,first-fit --states=loaded --ops=gang1024
//   # profile the measured loops only (--callgrind switches instrumentation on around them):
//   valgrind --tool=callgrind --instr-atstart=no build/bench/placement_bench --json --callgrind
//       --placers=topo --states=loaded --ops=gang1024 --gang-reps=50
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "fat_tree.h"
#include "framework/framework.h"
#include "plugins/registry.h"
#include "scheduler/scheduler.h"
#include "topology/topology.h"
#include "workload/job.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

namespace {

using tidal::bench::Clock;
using tidal::bench::LoadAverage1m;
using tidal::bench::Micros;
using tidal::bench::Seconds;
using tidal::bench::ThreadCpuUs;

// --callgrind: instrument only the measured loops, for
//   valgrind --tool=callgrind --instr-atstart=no build/bench/placement_bench --json --callgrind ...
bool g_callgrind = false;
void ProfileOn() {
  if (g_callgrind) CALLGRIND_START_INSTRUMENTATION;
}
void ProfileOff() {
  if (g_callgrind) CALLGRIND_STOP_INSTRUMENTATION;
}

using tidal::ClusterState;
using tidal::Job;
using tidal::NodeId;

using tidal::bench::Fabric;
using tidal::bench::kCpuPerGpu;
using tidal::bench::kGpusPerHost;
using tidal::bench::kHosts;
using tidal::bench::kHostsPerLeaf;
using tidal::bench::kLeavesPerSpine;
using tidal::bench::kMemPerGpu;
constexpr double kTargetLoad = 0.70;
constexpr double kReleaseFrac = 0.10;
constexpr uint64_t kSeed = 20240611;
constexpr int kGangGpus = 1024;

const std::vector<std::string> kPlacers = {"topo", "first-fit", "slurm-tree", "kueue-tas", "hived"};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "placement_bench: %s\n", what.c_str());
  std::exit(1);
}



Job MakeJob(tidal::JobId id, int32_t gpus, bool single_node) {
  Job j;
  j.id = id;
  j.name = fmt::format("j{}", id);
  j.num_gpu = gpus;
  j.gpu_milli = tidal::kMilliPerGpu;
  j.cpu_milli = kCpuPerGpu * gpus;
  j.memory_mib = kMemPerGpu * gpus;
  j.single_node = single_node;
  j.submit_time_s = 0;
  return j;
}

// --- the cluster (bench/fat_tree.h) ------------------------------------------

ClusterState BuildEmpty(Fabric& fabric) { return tidal::bench::BuildFatTree(fabric, "placement_bench"); }

struct LoadedInfo {
  int64_t jobs_bound = 0;
  int64_t jobs_rejected = 0;
  int64_t jobs_released = 0;
  int64_t jobs_left = 0;
  double allocated = 0;
  int32_t free_hosts = 0;      // all 8 GPUs free
  int32_t partial_hosts = 0;   // 1..7 free
  int32_t full_hosts = 0;      // none free
  int64_t free_gpus_on_partial = 0;
  int32_t leaves_with_free_host = 0;
  double build_s = 0;
};

ClusterState BuildLoaded(const ClusterState& empty, LoadedInfo& info) {
  const auto start = Clock::now();
  auto profile = tidal::plugins::MakePolicyProfile("random", nullptr);
  if (!profile) Die(profile.error().message);
  tidal::Scheduler s(empty, std::move(*profile), kSeed);
  tidal::Rng rng(kSeed + 1);
  std::deque<Job> jobs;  // stable addresses: a job outlives its allocation
  std::vector<const Job*> bound;
  const double fill_to = kTargetLoad / (1.0 - kReleaseFrac);
  const auto total = static_cast<double>(s.cluster().total_gpu_milli());
  int64_t rejected_in_a_row = 0;
  while (static_cast<double>(s.cluster().total_gpu_milli_allocated()) < fill_to * total) {
    const int32_t g = tidal::bench::DrawJobGpus(rng);
    jobs.push_back(MakeJob(static_cast<tidal::JobId>(jobs.size() + 1), g, g <= kGpusPerHost));
    auto r = s.ScheduleAndBind(jobs.back());
    if (r) {
      bound.push_back(&jobs.back());
      rejected_in_a_row = 0;
    } else {
      if (r.error().code != tidal::ErrorCode::kUnschedulable) Die(r.error().message);
      ++info.jobs_rejected;
      if (++rejected_in_a_row > 10'000) Die("loaded state: nothing fits any more");
    }
  }
  info.jobs_bound = static_cast<int64_t>(bound.size());
  rng.Shuffle(bound);
  const auto release = static_cast<size_t>(std::llround(kReleaseFrac * static_cast<double>(bound.size())));
  for (size_t i = 0; i < release; ++i)
    if (auto st = s.Release(*bound[i]); !st) Die(st.error().message);
  info.jobs_released = static_cast<int64_t>(release);
  info.jobs_left = static_cast<int64_t>(bound.size() - release);
  if (auto st = s.cluster().CheckInvariants(); !st) Die("loaded state: " + st.error().message);
  ClusterState out = s.cluster();
  info.allocated = static_cast<double>(out.total_gpu_milli_allocated()) / total;
  for (NodeId n = 0; n < out.num_nodes(); ++n) {
    const int32_t f = out.free_whole_gpus(n);
    if (f == out.gpu_count(n)) ++info.free_hosts;
    else if (f == 0) ++info.full_hosts;
    else ++info.partial_hosts, info.free_gpus_on_partial += f;
  }
  for (auto leaf : out.topology().domains_at(tidal::topo::Level::kLeaf))
    info.leaves_with_free_host += out.domain_free_hosts(leaf) > 0;
  info.build_s = Seconds(Clock::now() - start);
  return out;
}

struct EmptyState {
  Fabric fabric;
  ClusterState cluster;
  double build_s = 0;
};
struct LoadedState {
  ClusterState cluster;
  LoadedInfo info;
};

// Built on first use, once per process (the loaded one only if asked for).
const EmptyState& Empty() {
  static const EmptyState s = [] {
    EmptyState r;
    const auto t0 = Clock::now();
    r.cluster = BuildEmpty(r.fabric);
    r.build_s = Seconds(Clock::now() - t0);
    return r;
  }();
  return s;
}

const LoadedState& Loaded() {
  static const LoadedState s = [] {
    LoadedState r;
    r.cluster = BuildLoaded(Empty().cluster, r.info);
    return r;
  }();
  return s;
}

const ClusterState& StateOf(bool loaded) { return loaded ? Loaded().cluster : Empty().cluster; }

tidal::Profile ProfileOf(const std::string& placer) {
  auto p = tidal::plugins::MakePolicyProfile(placer, nullptr);
  if (!p) Die(p.error().message);
  if (p->gang == nullptr) Die("placer " + placer + " has no gang plugin");
  return std::move(*p);
}

// --- measurements (shared by --json and the Google Benchmark runs) ---------

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

struct GangResult {
  std::vector<double> us;      // wall (steady_clock) per call
  std::vector<double> cpu_us;  // thread CPU time per call
  bool placed = false;
  bool valid = false;  // CanBind accepts it
  int32_t hosts = 0;
  std::string lca_level;  // lowest common domain of the hosts used
};

// What the gang placement looks like: hosts used and the level that joins them.
void Describe(const ClusterState& c, const std::optional<tidal::Placement>& p, GangResult& r) {
  r.placed = p.has_value();
  if (!p) return;
  r.valid = c.CanBind(*p).has_value();
  r.hosts = static_cast<int32_t>(p->assignments.size());
  const auto& t = c.topology();
  auto lo = t.num_domains(), hi = -1;
  for (const auto& a : p->assignments) {
    const auto d = t.host(c.host_of(a.node));
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  r.lca_level = std::string(tidal::topo::LevelName(t.level(t.LowestCommonDomain(lo, hi))));
}

GangResult MeasureGang(const ClusterState& c, const std::string& placer, int reps, double max_s) {
  tidal::Profile profile = ProfileOf(placer);
  const Job job = MakeJob(1'000'000'000, kGangGpus, false);
  auto pod = tidal::ResolveRequest(job, c.models());
  if (!pod) Die(pod.error().message);
  tidal::Rng rng(kSeed);
  tidal::CycleContext ctx{c, rng, 0, nullptr};
  GangResult r;
  Describe(c, profile.gang->PlaceGang(ctx, *pod), r);  // warm-up, and what it chose
  ProfileOn();
  const auto begin = Clock::now();
  for (int i = 0; i < reps; ++i) {
    const double c0 = ThreadCpuUs();
    const auto t0 = Clock::now();
    auto p = profile.gang->PlaceGang(ctx, *pod);
    const auto t1 = Clock::now();
    const double c1 = ThreadCpuUs();
    benchmark::DoNotOptimize(p);
    r.us.push_back(Micros(t1 - t0));
    r.cpu_us.push_back(c1 - c0);
    if (i >= 9 && Seconds(t1 - begin) > max_s) break;
  }
  ProfileOff();
  return r;
}

struct StreamResult {
  int64_t decisions = 0;  // placed and bound
  int64_t failed = 0;     // no placement (counted in the time)
  double seconds = 0;     // wall, inside ScheduleAndBind only
  double cpu_s = 0;       // thread CPU time of the timed batches
  std::vector<double> us; // wall per decision
  double per_s() const { return seconds > 0 ? static_cast<double>(decisions + failed) / seconds : 0; }
  double cpu_per_s() const { return cpu_s > 0 ? static_cast<double>(decisions + failed) / cpu_s : 0; }
};

// A stream of `gpus`-GPU single-node jobs placed and bound, released every
// `batch` jobs (untimed) so the load stays where it was.
StreamResult MeasureStream(const ClusterState& base, const std::string& placer, int32_t gpus, int batch,
                           int64_t max_decisions, double max_s) {
  tidal::Scheduler s(base, ProfileOf(placer), kSeed);
  std::vector<Job> jobs;
  for (int i = 0; i < batch; ++i) jobs.push_back(MakeJob(int64_t{2'000'000'000} + i, gpus, true));
  StreamResult r;
  std::vector<const Job*> bound;
  constexpr int kWarmUp = 8;  // calls not counted: the first ones fill caches
  int calls = 0;
  ProfileOn();
  const auto begin = Clock::now();
  bool out_of_time = false;
  while (!out_of_time && r.decisions + r.failed < max_decisions) {
    double c0 = ThreadCpuUs();
    for (const Job& j : jobs) {
      if (calls == kWarmUp) c0 = ThreadCpuUs();
      const bool counted = calls++ >= kWarmUp;
      const auto t0 = Clock::now();
      auto p = s.ScheduleAndBind(j);
      const auto t1 = Clock::now();
      if (counted) {
        r.seconds += Seconds(t1 - t0);
        r.us.push_back(Micros(t1 - t0));
        ++(p ? r.decisions : r.failed);
      }
      if (p) bound.push_back(&j);
      else if (p.error().code != tidal::ErrorCode::kUnschedulable) Die(p.error().message);
      if (counted && Seconds(t1 - begin) > max_s && r.decisions + r.failed >= 20) {
        out_of_time = true;
        break;
      }
    }
    if (calls > kWarmUp) r.cpu_s += (ThreadCpuUs() - c0) / 1e6;
    // Untimed: back to the load the stream started from.
    for (const Job* j : bound)
      if (auto st = s.Release(*j); !st) Die(st.error().message);
    bound.clear();
  }
  ProfileOff();
  return r;
}

// --- --json ----------------------------------------------------------------

struct Options {
  std::vector<std::string> placers = kPlacers;
  std::vector<bool> states = {false, true};  // loaded?
  std::vector<std::string> ops = {"gang1024", "single_gpu", "gpu8"};
  int gang_reps = 2000;
  double gang_s = 2.0;
  int64_t single_max = 50'000;
  double single_s = 1.5;
  int64_t gpu8_max = 10'000;
  double gpu8_s = 1.0;
  bool Has(const std::string& op) const { return std::find(ops.begin(), ops.end(), op) != ops.end(); }
};

nlohmann::ordered_json StreamJson(const StreamResult& s) {
  return {{"per_s", s.per_s()},           {"cpu_per_s", s.cpu_per_s()},   {"p50_us", Percentile(s.us, 0.50)},
          {"p99_us", Percentile(s.us, 0.99)}, {"decisions", s.decisions}, {"failed", s.failed}};
}

nlohmann::ordered_json RunJson(const Options& o) {
  using J = nlohmann::ordered_json;
  const auto t_start = Clock::now();
  const double load_before = LoadAverage1m();
  J per = J::object();
  for (const auto& placer : o.placers) {
    J one = J::object();
    for (bool loaded : o.states) {
      const ClusterState& c = StateOf(loaded);
      J m = J::object();
      std::string line;
      if (o.Has("gang1024")) {
        const GangResult g = MeasureGang(c, placer, o.gang_reps, o.gang_s);
        m["gang1024"] = {{"p50_us", Percentile(g.us, 0.50)},         {"p99_us", Percentile(g.us, 0.99)},
                         {"max_us", Percentile(g.us, 1.0)},          {"p50_cpu_us", Percentile(g.cpu_us, 0.50)},
                         {"p99_cpu_us", Percentile(g.cpu_us, 0.99)}, {"reps", g.us.size()},
                         {"placed", g.placed},                       {"valid", g.valid},
                         {"hosts", g.hosts},                         {"lca_level", g.lca_level}};
        line += fmt::format("  gang1024 p50 {:8.1f} p99 {:8.1f} us (cpu p99 {:8.1f})", Percentile(g.us, 0.5),
                            Percentile(g.us, 0.99), Percentile(g.cpu_us, 0.99));
      }
      if (o.Has("single_gpu")) {
        const StreamResult s1 = MeasureStream(c, placer, 1, 256, o.single_max, o.single_s);
        m["single_gpu"] = StreamJson(s1);
        line += fmt::format("  1-GPU {:9.0f}/s", s1.per_s());
      }
      if (o.Has("gpu8")) {
        const StreamResult s8 = MeasureStream(c, placer, 8, 32, o.gpu8_max, o.gpu8_s);
        m["gpu8"] = StreamJson(s8);
        line += fmt::format("  8-GPU {:9.0f}/s", s8.per_s());
      }
      one[loaded ? "loaded" : "empty"] = std::move(m);
      std::fprintf(stderr, "placement_bench: %-10s %-6s%s\n", placer.c_str(), loaded ? "loaded" : "empty", line.c_str());
    }
    per[placer] = std::move(one);
  }
  // null where not measured.
  auto at = [&](const std::string& placer, const char* state, const char* op, const char* key) -> J {
    const J::json_pointer ptr("/" + placer + "/" + state + "/" + op + "/" + key);
    return per.contains(ptr) ? per[ptr] : J();
  };
  // value / first-fit's value: < 1 is faster for latencies, > 1 for rates.
  auto ratio = [&](const std::string& placer, const char* state, const char* op, const char* key) -> J {
    const J a = at(placer, state, op, key), b = at("first-fit", state, op, key);
    if (!a.is_number() || !b.is_number() || b.get<double>() <= 0) return J();
    return a.get<double>() / b.get<double>();
  };
  struct Key {
    const char* name;
    const char* state;
    const char* op;
    const char* key;
  };
  const Key heads[] = {
      {"gang1024_p99_us", "loaded", "gang1024", "p99_us"},
      {"gang1024_p50_us", "loaded", "gang1024", "p50_us"},
      {"single_gpu_per_s", "loaded", "single_gpu", "per_s"},
      {"gpu8_per_s", "loaded", "gpu8", "per_s"},
      {"gang1024_p99_cpu_us", "loaded", "gang1024", "p99_cpu_us"},
      {"single_gpu_cpu_per_s", "loaded", "single_gpu", "cpu_per_s"},
      {"gang1024_p99_us_empty", "empty", "gang1024", "p99_us"},
      {"gang1024_p50_us_empty", "empty", "gang1024", "p50_us"},
      {"single_gpu_per_s_empty", "empty", "single_gpu", "per_s"},
      {"gpu8_per_s_empty", "empty", "gpu8", "per_s"},
  };
  const std::string head =
      std::find(o.placers.begin(), o.placers.end(), "topo") != o.placers.end() ? "topo" : o.placers.front();
  J out = J::object();
  for (const Key& k : heads) out[k.name] = at(head, k.state, k.op, k.key);
  out["headline_placer"] = head;
  J ratios = J::object();
  for (const Key& k : heads) ratios[k.name] = ratio(head, k.state, k.op, k.key);
  out["ratio_to_first_fit"] = std::move(ratios);
  auto meets = [&](const char* gang, const char* single) -> J {
    const J g = out[gang], s1 = out[single];
    if (!g.is_number() || !s1.is_number()) return J();
    return g.get<double>() <= 1000.0 && s1.get<double>() >= 50000.0;
  };
  out["targets"] = {{"gang1024_p99_us_max", 1000.0},
                    {"single_gpu_per_s_min", 50000.0},
                    {"met_loaded", meets("gang1024_p99_us", "single_gpu_per_s")},
                    {"met_loaded_cpu_time", meets("gang1024_p99_cpu_us", "single_gpu_cpu_per_s")},
                    {"met_empty", meets("gang1024_p99_us_empty", "single_gpu_per_s_empty")}};
  const EmptyState& e = Empty();
  out["cluster"] = {{"hosts", kHosts},
                    {"gpus", e.cluster.total_gpus()},
                    {"hosts_per_leaf", kHostsPerLeaf},
                    {"leaves_per_spine_group", kLeavesPerSpine},
                    {"leaves", e.fabric.leaves},
                    {"spine_groups", e.fabric.spine_groups},
                    {"domains", e.cluster.topology().num_domains()},
                    {"build_s", e.build_s}};
  if (std::find(o.states.begin(), o.states.end(), true) != o.states.end()) {
    const LoadedInfo& li = Loaded().info;
    out["loaded_state"] = {{"allocated", li.allocated},
                           {"built_with", "random"},
                           {"jobs_bound", li.jobs_bound},
                           {"jobs_rejected", li.jobs_rejected},
                           {"jobs_released", li.jobs_released},
                           {"jobs_left", li.jobs_left},
                           {"free_hosts", li.free_hosts},
                           {"partial_hosts", li.partial_hosts},
                           {"full_hosts", li.full_hosts},
                           {"free_gpus_on_partial_hosts", li.free_gpus_on_partial},
                           {"leaves_with_a_free_host", li.leaves_with_free_host},
                           {"build_s", li.build_s}};
  }
  // Ratios for every placer, state and operation, same convention.
  J rel = J::object();
  for (const auto& placer : o.placers) {
    for (bool loaded : o.states) {
      const char* st = loaded ? "loaded" : "empty";
      rel[placer][st] = {{"gang1024_p99_us", ratio(placer, st, "gang1024", "p99_us")},
                         {"gang1024_p99_cpu_us", ratio(placer, st, "gang1024", "p99_cpu_us")},
                         {"single_gpu_per_s", ratio(placer, st, "single_gpu", "per_s")},
                         {"gpu8_per_s", ratio(placer, st, "gpu8", "per_s")}};
    }
  }
  out["placers"] = std::move(per);
  out["ratios_to_first_fit"] = std::move(rel);
  out["machine"] = {{"loadavg_1m_before", load_before}, {"loadavg_1m_after", LoadAverage1m()}};
  out["wall_s"] = Seconds(Clock::now() - t_start);
  return out;
}

// --- Google Benchmark registrations ----------------------------------------

void BM_Gang1024(benchmark::State& state, std::string placer, bool loaded) {
  const ClusterState& c = StateOf(loaded);
  tidal::Profile profile = ProfileOf(placer);
  const Job job = MakeJob(1'000'000'000, kGangGpus, false);
  auto pod = tidal::ResolveRequest(job, c.models());
  if (!pod) Die(pod.error().message);
  tidal::Rng rng(kSeed);
  tidal::CycleContext ctx{c, rng, 0, nullptr};
  GangResult r;
  Describe(c, profile.gang->PlaceGang(ctx, *pod), r);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto p = profile.gang->PlaceGang(ctx, *pod);
    r.us.push_back(Micros(Clock::now() - t0));
    benchmark::DoNotOptimize(p);
  }
  state.counters["p50_us"] = Percentile(r.us, 0.50);
  state.counters["p99_us"] = Percentile(r.us, 0.99);
  state.counters["hosts"] = r.hosts;
  state.counters["placed"] = r.placed;
}

void BM_Stream(benchmark::State& state, std::string placer, bool loaded, int32_t gpus, int batch) {
  tidal::Scheduler s(StateOf(loaded), ProfileOf(placer), kSeed);
  std::vector<Job> jobs;
  for (int i = 0; i < batch; ++i) jobs.push_back(MakeJob(int64_t{2'000'000'000} + i, gpus, true));
  std::vector<const Job*> bound;
  size_t next = 0;
  int64_t failed = 0;
  for (auto _ : state) {
    if (next == jobs.size()) {
      state.PauseTiming();
      for (const Job* j : bound) benchmark::DoNotOptimize(s.Release(*j));
      bound.clear();
      next = 0;
      state.ResumeTiming();
    }
    const Job& j = jobs[next++];
    auto p = s.ScheduleAndBind(j);
    if (p) bound.push_back(&j);
    else ++failed;
  }
  state.counters["decisions_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["failed"] = static_cast<double>(failed);
}

void Register(const std::vector<std::string>& placers) {
  for (const auto& placer : placers) {
    for (bool loaded : {false, true}) {
      const char* st = loaded ? "loaded" : "empty";
      benchmark::RegisterBenchmark(fmt::format("BM_Gang1024/{}/{}", placer, st).c_str(), BM_Gang1024, placer, loaded)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(fmt::format("BM_SingleGpu/{}/{}", placer, st).c_str(), BM_Stream, placer, loaded, 1, 256)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(fmt::format("BM_Gpu8/{}/{}", placer, st).c_str(), BM_Stream, placer, loaded, 8, 32)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
}


}  // namespace

int main(int argc, char** argv) {
  // Our own flags first; the rest goes to Google Benchmark.
  bool json = false;
  Options o;
  std::vector<char*> rest = {argv[0]};
  auto value = [](const std::string& a, const char* flag) -> std::optional<std::string> {
    const std::string f = std::string(flag) + "=";
    if (a.rfind(f, 0) != 0) return std::nullopt;
    return a.substr(f.size());
  };
  auto check = [](const std::vector<std::string>& got, const std::vector<std::string>& allowed, const char* what) {
    if (got.empty()) Die(fmt::format("--{}= names nothing", what));
    for (const auto& g : got)
      if (std::find(allowed.begin(), allowed.end(), g) == allowed.end())
        Die(fmt::format("unknown {} '{}'; choose from {}", what, g, fmt::join(allowed, ", ")));
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--callgrind") {
      g_callgrind = true;
    } else if (auto v = value(a, "--placers")) {
      o.placers = tidal::bench::SplitCommas(*v);
      check(o.placers, kPlacers, "placers");
    } else if (auto v = value(a, "--states")) {
      const auto states = tidal::bench::SplitCommas(*v);
      check(states, {"empty", "loaded"}, "states");
      o.states.clear();
      for (const auto& x : states) o.states.push_back(x == "loaded");
    } else if (auto v = value(a, "--ops")) {
      o.ops = tidal::bench::SplitCommas(*v);
      check(o.ops, {"gang1024", "single_gpu", "gpu8"}, "ops");
    } else if (auto v = value(a, "--gang-reps")) {
      o.gang_reps = std::max(10, std::atoi(v->c_str()));
    } else if (auto v = value(a, "--time-scale")) {
      // Scales every measurement's time and count caps (a quick look: 0.2).
      const double k = std::atof(v->c_str());
      if (!(k > 0)) Die("--time-scale must be > 0");
      o.gang_s *= k, o.single_s *= k, o.gpu8_s *= k;
      o.single_max = std::max<int64_t>(256, static_cast<int64_t>(static_cast<double>(o.single_max) * k));
      o.gpu8_max = std::max<int64_t>(64, static_cast<int64_t>(static_cast<double>(o.gpu8_max) * k));
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
  Register(o.placers);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
