#include "sim/queue_sim.h"
#include "sim/workload_input.h"

#include "sim/queue_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/ranges.h>

#include "common/rng.h"
#include "framework/fragmentation.h"
#include "plugins/registry.h"
#include "scheduler/scheduler.h"
#include "scheduler/tenant_queue.h"
#include "sim/placement_cost.h"
#include "sim/replay.h"
#include "sim/start_estimate.h"
#include "sim/tenant_metrics.h"
#include "tenancy/tenants_file.h"
#include "topology/builder.h"

namespace tidal::sim {
namespace {

// Checks that every job can be replayed and returns them in arrival order
// (submit time, then id), cut to `limit`.
Result<std::vector<Job>> ArrivalOrder(const std::vector<Job>& jobs, int64_t limit) {
  if (limit < 0) return MakeError(ErrorCode::kInvalidArgument, "--limit {} is negative; use 0 for all jobs", limit);
  for (const Job& j : jobs) {
    if (!j.submit_time_s || !j.duration_s) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "job '{}' ({}) has no {}; the queue experiment needs a time-stamped trace (submit "
                       "and run time per job — e.g. an openb list with creation_time/deletion_time, not "
                       "a multigpu* list)",
                       j.name, j.source.empty() ? "no source" : j.source,
                       !j.submit_time_s ? "submission/creation time" : "duration (deletion time)");
    }
  }
  std::vector<const Job*> order;
  order.reserve(jobs.size());
  for (const Job& j : jobs) order.push_back(&j);
  std::sort(order.begin(), order.end(), [](const Job* a, const Job* b) {
    if (*a->submit_time_s != *b->submit_time_s) return *a->submit_time_s < *b->submit_time_s;
    return a->id < b->id;
  });
  if (limit > 0 && static_cast<size_t>(limit) < order.size()) order.resize(static_cast<size_t>(limit));
  std::vector<Job> out;
  out.reserve(order.size());
  for (const Job* j : order) out.push_back(*j);
  // Ids must be unique: the cluster keys allocations by them.
  std::vector<JobId> ids;
  ids.reserve(out.size());
  for (const Job& j : out) ids.push_back(j.id);
  std::sort(ids.begin(), ids.end());
  if (auto d = std::adjacent_find(ids.begin(), ids.end()); d != ids.end()) {
    return MakeError(ErrorCode::kInvalidArgument, "job id {} appears twice in the workload; ids must be unique", *d);
  }
  return out;
}

// The tenant tree a policy runs with: built from the options, checked
// against the jobs (every job's tenant must be a leaf), without borrowing
// for static partitions.
Result<std::shared_ptr<const tenancy::TenantTree>> BuildTenants(const QueueSimOptions& options,
                                                                const std::vector<Job>& jobs, int64_t total_gpus,
                                                                std::vector<tenancy::TenantSpec> extra = {}) {
  int64_t extra_gpus = 0;
  for (const tenancy::TenantSpec& e : extra) extra_gpus += e.quotas.front().second.nominal / kMilliPerGpu;
  if (extra_gpus >= total_gpus) {
    return MakeError(ErrorCode::kInvalidArgument, "the inference services' peaks need {} GPUs, the cluster has {}: no room for "
                     "training", extra_gpus, total_gpus);
  }
  std::shared_ptr<const tenancy::TenantTree> tree = options.tenant_tree;
  if (!tree && !options.tenants.empty()) {
    if (options.tenants == "proportional") {
      std::map<std::string, double> by_group;
      for (const Job& j : jobs) {
        if (j.group.empty()) {
          return MakeError(ErrorCode::kInvalidArgument,
                           "job '{}' ({}) has no tenant (empty group column); --tenants proportional needs the trace's "
                           "tenant column (Philly: cluster)",
                           j.name, j.source);
        }
        by_group[j.group] += static_cast<double>(j.TotalGpuMilli()) / kMilliPerGpu * static_cast<double>(*j.duration_s);
      }
      std::vector<tenancy::GroupUsage> groups;
      for (const auto& [g, v] : by_group) groups.push_back({g, v});
      TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::ProportionalTenants(std::move(groups), total_gpus - extra_gpus));
      if (!extra.empty()) {
        TIDAL_ASSIGN_OR_RETURN(t, tenancy::WithLeaves(t, std::move(extra)));
      }
      tree = std::make_shared<const tenancy::TenantTree>(std::move(t));
    } else {
      TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::ReadTenantsFile(options.tenants));
      tree = std::make_shared<const tenancy::TenantTree>(std::move(t));
    }
  }
  if (!tree) {
    if (NeedsTenants(options.queue)) {
      return MakeError(ErrorCode::kInvalidArgument, "--queue {} needs tenants: give --tenants proportional or --tenants FILE",
                       QueuePolicyName(options.queue));
    }
    return tree;
  }
  for (const Job& j : jobs) {
    const tenancy::TenantId t = tree->Find(j.group);
    if (t == tenancy::kNoTenant || !tree->is_leaf(t)) {
      return MakeError(ErrorCode::kNotFound,
                       "job '{}' ({}) belongs to tenant '{}', which is {} in the tenants file; add it (or a 'groups:' "
                       "alias) as a leaf tenant",
                       j.name, j.source, j.group, t == tenancy::kNoTenant ? "not" : "not a leaf");
    }
  }
  if (options.queue == QueuePolicy::kStaticPartitions) {
    TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::WithoutBorrowing(*tree));
    tree = std::make_shared<const tenancy::TenantTree>(std::move(t));
  }
  return tree;
}

}  // namespace

Result<QueueSimResult> RunQueueSim(const std::vector<NodeSpec>& nodes, const std::vector<Job>& input,
                                   const QueueSimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  TIDAL_ASSIGN_OR_RETURN(std::vector<Job> jobs, ArrivalOrder(input, options.limit));
  if (jobs.empty()) return MakeError(ErrorCode::kInvalidArgument, "the workload has no jobs to replay");
  TIDAL_ASSIGN_OR_RETURN(ClusterState cluster, ClusterState::Build(nodes));
  if (cluster.total_gpus() == 0) {
    return MakeError(ErrorCode::kInvalidArgument, "the node list has no GPUs; the queue experiment needs GPU nodes");
  }

  QueueSimResult r;
  {
    TIDAL_ASSIGN_OR_RETURN(const ArrivalScale scale, ScaleArrivals(jobs, cluster.total_gpus(), options.load, options.time_scale));
    r.offered_load_native = scale.native_load;
    r.time_scale = scale.factor;
    r.offered_load = scale.offered_load;
  }

  // Topology: hosts are the node list's nodes; GPU counts come from it.
  std::shared_ptr<const topo::Topology> topology;
  if (options.topology) {
    std::vector<topo::NodeGpus> ng;
    ng.reserve(nodes.size());
    for (const NodeSpec& n : nodes) ng.push_back({n.name, n.gpu_count, n.gpu_model});
    TIDAL_ASSIGN_OR_RETURN(topo::Topology t, topo::Materialize(*options.topology, ng));
    topology = std::make_shared<const topo::Topology>(std::move(t));
    TIDAL_RETURN_IF_ERROR(cluster.AttachTopology(topology));
    r.topology = topology->source();
  } else if (plugins::IsTopologyPlacer(options.policy) && options.policy != "topo" && options.policy != "first-fit") {
    return MakeError(ErrorCode::kInvalidArgument, "placer '{}' places by switches and needs --topology FILE", options.policy);
  }
  std::unique_ptr<PlannerPlacementCost> cost;
  if (topology) {
    cost = std::make_unique<PlannerPlacementCost>(
        cluster, options.workload_model ? *options.workload_model : WorkloadModel::Default(), options.reference_model);
    for (Job& j : jobs) {
      if (j.num_gpu < 2 || j.gpu_milli != kMilliPerGpu) continue;
      j.tp_group = cost->TensorParallel(j.num_gpu);
      j.topo_max_wait_s = options.max_wait_s;
      j.topo_slowdown_ok = options.slowdown_ok;
    }
  }
  if (options.require_level || options.prefer_level) {
    for (Job& j : jobs) {
      if (j.num_gpu < 2) continue;
      j.topo_required = options.require_level;
      j.topo_preferred = options.prefer_level;
    }
  }

  // Run-time estimates.
  TIDAL_ASSIGN_OR_RETURN(const double estimate_f, EstimateFactor(options.estimate));
  if (options.estimate != "exact") {
    for (Job& j : jobs) {
      Rng rng(options.seed * 1000003 + static_cast<uint64_t>(j.id));
      const double u = 1 + (estimate_f - 1) * static_cast<double>(rng.Uniform(1u << 30)) / static_cast<double>(1u << 30);
      j.estimate_s = static_cast<int64_t>(std::ceil(static_cast<double>(*j.duration_s) * u));
    }
  }
  r.estimate = options.estimate;

  if (options.single_node_if_fits) {
    int32_t largest = 0;
    for (NodeId n = 0; n < cluster.num_nodes(); ++n) largest = std::max(largest, cluster.gpu_count(n));
    for (Job& j : jobs)
      if (!j.single_node && j.num_gpu <= largest) j.single_node = true;
  }

  // FGD scores against the workload's typical pods; jobs asking for GPU
  // models the cluster lacks are left out here and reported later.
  std::shared_ptr<FragmentationModel> frag;
  if (options.policy == "fgd") {
    std::vector<Job> known;
    known.reserve(jobs.size());
    for (const Job& j : jobs)
      if (ResolveRequest(j, cluster.models())) known.push_back(j);
    std::vector<TypicalPod> typical;  // none if no job can run here: all are reported below
    if (!known.empty()) {
      TIDAL_ASSIGN_OR_RETURN(typical, BuildTypicalPods(known, cluster.models()));
    }
    frag = std::make_shared<FragmentationModel>(std::move(typical));
  }
  if (options.start_estimate_samples < 1 || options.start_estimates < 0) {
    return MakeError(ErrorCode::kInvalidArgument, "--start-estimate-samples must be >= 1 and --start-estimates >= 0");
  }

  r.policy = options.policy;
  r.queue = std::string(QueuePolicyName(options.queue));
  r.seed = options.seed;
  r.single_node_if_fits = options.single_node_if_fits;
  r.nodes = cluster.num_nodes();
  r.total_gpus = cluster.total_gpus();
  r.jobs_total = static_cast<int64_t>(jobs.size());
  r.jobs.resize(jobs.size());
  std::unordered_map<JobId, size_t> index;
  index.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    index[jobs[i].id] = i;
    r.jobs[i] = {jobs[i].id, jobs[i].name, jobs[i].num_gpu, jobs[i].gpu_milli, *jobs[i].submit_time_s};
  }

  // The window (QueueSimResult::window_*) and the inference fleets sized over it.
  const int64_t t0 = *jobs.front().submit_time_s;
  if (options.window_s < 0) return MakeError(ErrorCode::kInvalidArgument, "the window must be >= 0 seconds");
  r.window_s = options.window_s > 0 ? options.window_s : std::max<int64_t>(1, *jobs.back().submit_time_s - t0);
  const int64_t window_end = t0 + r.window_s;
  std::optional<InferenceFleets> fleets;
  std::vector<tenancy::TenantSpec> inference_tenants;
  std::vector<std::string> inference_groups;
  if (options.inference) {
    InferenceFleetsOptions fo = options.inference->fleets;
    fo.horizon_s = r.window_s;
    if (fo.groups.empty())
      for (const inference::Service& s : options.inference->services) fo.groups.push_back("inf-" + s.name);
    for (const Job& j : jobs) {
      if (j.id >= InferenceFleets::kReplicaIdBase)
        return MakeError(ErrorCode::kInvalidArgument, "job '{}' ({}): ids from {} on are the inference replicas'", j.name, j.source,
                         InferenceFleets::kReplicaIdBase);
    }
    TIDAL_ASSIGN_OR_RETURN(InferenceFleets f, InferenceFleets::Make(options.inference->services, cluster, fo, t0));
    fleets.emplace(std::move(f));
    inference_groups = fo.groups;
    if (options.tenants == "proportional" && !options.tenant_tree) {
      const std::vector<double> peaks = fleets->PeakGpus();
      for (size_t i = 0; i < peaks.size(); ++i) {
        tenancy::TenantSpec t{.name = fo.groups[i], .tier = tenancy::Tier::kGuaranteed,
                              .source = fmt::format("inference service '{}'", options.inference->services[i].name)};
        tenancy::Quota q{.nominal = static_cast<int64_t>(std::ceil(peaks[i] - 1e-9)) * kMilliPerGpu};
        if (!options.inference->lend) q.lending_limit = 0;
        t.quotas.push_back({"gpu", q});
        inference_tenants.push_back(std::move(t));
      }
    }
  }
  TIDAL_ASSIGN_OR_RETURN(std::shared_ptr<const tenancy::TenantTree> tenants,
                         BuildTenants(options, jobs, cluster.total_gpus(), std::move(inference_tenants)));
  if (!options.core_tenant.empty()) {
    if (!tenants) return MakeError(ErrorCode::kInvalidArgument, "a core project needs tenants (--tenants)");
    std::string core = options.core_tenant;
    if (core == "largest") {
      int64_t best = -1;
      const std::optional<tenancy::ResourceId> gpu = tenants->resource("gpu");
      for (tenancy::TenantId t : tenants->Leaves()) {
        const int64_t floor = gpu ? tenants->quota(t, *gpu).nominal : 0;
        if (tenants->spec(t).tier == tenancy::Tier::kGuaranteed) continue;  // inference services
        if (floor > best || (floor == best && tenants->name(t) < core)) best = floor, core = tenants->name(t);
      }
    }
    if (const tenancy::TenantId id = tenants->Find(core); id != tenancy::kNoTenant && !tenants->is_leaf(id))
      return MakeError(ErrorCode::kInvalidArgument, "the core project '{}' is not a leaf tenant; name a business group", core);
    TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::WithTier(*tenants, core, tenancy::Tier::kGuaranteed));
    tenants = std::make_shared<const tenancy::TenantTree>(std::move(t));
    r.core_tenant = core;
  }
  for (const auto& [name, tier] : options.tenant_tiers) {
    if (!tenants) return MakeError(ErrorCode::kInvalidArgument, "SLA tiers per business group need tenants (--tenants)");
    const tenancy::TenantId id = tenants->Find(name);
    if (id == tenancy::kNoTenant || !tenants->is_leaf(id)) {
      std::vector<std::string> leaves;
      for (tenancy::TenantId l : tenants->Leaves()) leaves.push_back(tenants->name(l));
      return MakeError(ErrorCode::kNotFound, "a tier is given for business group '{}', which is not a leaf tenant (they are: {})",
                       name, fmt::join(leaves, ", "));
    }
    if (name == r.core_tenant && tier != tenancy::Tier::kGuaranteed)
      return MakeError(ErrorCode::kInvalidArgument,
                       "business group '{}' is the core project, whose floor is hard: its tier is guaranteed, not {}", name,
                       tenancy::TierName(tier));
    TIDAL_ASSIGN_OR_RETURN(tenancy::TenantTree t, tenancy::WithTier(*tenants, name, tier));
    tenants = std::make_shared<const tenancy::TenantTree>(std::move(t));
  }
  if (tenants) r.tenants = options.tenants.empty() ? "given" : options.tenants;
  if (fleets && tenants) {
    for (const std::string& g : inference_groups) {
      const tenancy::TenantId t = tenants->Find(g);
      if (t == tenancy::kNoTenant || !tenants->is_leaf(t))
        return MakeError(ErrorCode::kNotFound, "inference tenant '{}' is not a leaf of the tenants file; add it as a leaf", g);
    }
  }
  if (tenants) {
    for (size_t i = 0; i < jobs.size(); ++i) r.jobs[i].tenant = jobs[i].group;
  }

  ReplaySetup setup{.placer = options.policy, .frag = frag, .queue = options.queue, .tenants = tenants,
                    .cost = cost.get(), .seed = options.seed};
  if (UsesTenantQueue(options.queue)) {
    TIDAL_ASSIGN_OR_RETURN(setup.tenant_options, TenantQueueOptionsFor(options.queue));
    setup.tenant_options.checkpoint_interval_s = options.checkpoint_interval_s;
    setup.tenant_options.restart_penalty_s = options.restart_penalty_s;
    if (options.reclaim_slowdown_max > 0) setup.tenant_options.reclaim_slowdown_max = options.reclaim_slowdown_max;
  }
  TIDAL_ASSIGN_OR_RETURN(std::unique_ptr<Replay> replay, Replay::Make(std::move(cluster), std::move(setup), t0));
  const ClusterState& c = replay->cluster();
  WorkQueue& queue = replay->queue();
  std::unordered_map<JobId, PlacementEval> evals;  // the placement each multi-GPU job got, evaluated
  replay->set_evals(&evals);
  // Locality and communication, GPU-time weighted over multi-GPU jobs.
  double multi_gpu_time = 0, multi_node_time = 0, multi_switch_time = 0, modelled_time = 0, comm_time = 0, slowdown_sum = 0;
  StrandedTracker stranded;
  // Per running job: what its run added to the locality sums, to take back
  // the part it did not run if it is preempted.
  struct RunShare {
    int64_t start = 0, end = 0;
    bool multi_node = false, multi_switch = false, modelled = false;
    double comm = 0;
  };
  std::unordered_map<JobId, RunShare> runs;
  double violation_tenant_s = 0;
  std::vector<double> tenant_violation_s(tenants ? static_cast<size_t>(tenants->size()) : 0, 0);
  std::vector<tenancy::TenantId> violating;
  std::optional<GuaranteeTracker> guarantees;
  if (tenants) {
    guarantees.emplace(*tenants);
    guarantees->SetTotal(c.total_gpu_milli());
  }

  const int64_t total_milli = c.total_gpu_milli();
  int64_t done = 0;
  auto unresolvable = [&](const UnresolvableJob& u) -> Status {
    if (fleets && fleets->Owns(u.job->id))
      return MakeError(ErrorCode::kUnresolvable, "inference replica '{}' can never be placed: {}", u.job->name, u.reason);
    QueueJobRecord& rec = r.jobs[index.at(u.job->id)];
    rec.outcome = JobOutcome::kUnresolvable;
    rec.reason = u.reason;
    ++r.jobs_unresolvable;
    ++done;
    return Ok();
  };

  // Piecewise-constant integrals between event times, in milli-GPU-seconds.
  // Exact integers: bounded by total milli-GPU x makespan (6.2e6 x 1.3e7 for
  // openb, 2.5e6 x 9.4e6 for Philly), far below 2^63.
  int64_t alloc_integral = 0, stranded_integral = 0, idle_waiting_integral = 0;
  int64_t waiting_time = 0;
  int64_t alloc_now = 0, stranded_now = 0;
  // The window's integrals, and the rates they integrate: FLOP/s of the
  // modelled jobs working now, peak FLOP/s of the GPUs modelled jobs hold,
  // GPUs held idle by zombies.
  struct Rate {
    double flops = 0, peak_bf16 = 0, peak_native = 0;
    bool working = true;
  };
  std::unordered_map<JobId, Rate> rates;
  double flops_now = 0, peak_bf16_now = 0, peak_native_now = 0;
  int64_t hoarding_now = 0;  // GPUs
  auto rate_idle = [&](JobId id, int32_t gpus) {
    hoarding_now += gpus;
    auto it = rates.find(id);
    if (it == rates.end() || !it->second.working) return;
    flops_now -= it->second.flops;
    it->second.working = false;
  };
  auto rate_end = [&](JobId id, int32_t gpus, bool was_idle) {
    if (was_idle) hoarding_now -= gpus;
    auto it = rates.find(id);
    if (it == rates.end()) return;
    if (it->second.working) flops_now -= it->second.flops;
    peak_bf16_now -= it->second.peak_bf16;
    peak_native_now -= it->second.peak_native;
    rates.erase(it);
  };
  bool waiting_now = false;

  size_t next_arrival = 0;
  int64_t prev = t0;
  const int64_t progress_every = std::max<int64_t>(1, r.jobs_total / 100);
  int64_t next_progress = 0;
  std::vector<UnresolvableJob> rejected;
  // A finite --max-wait ends without any event of its own: wake the queue
  // when each multi-GPU job's wait runs out.
  if (cost && options.max_wait_s > 0) {
    std::vector<std::pair<int64_t, int64_t>> wakes;
    for (const Job& j : jobs)
      if (j.num_gpu > 1) wakes.push_back({*j.submit_time_s + options.max_wait_s, *j.submit_time_s});
    replay->SetWakes(std::move(wakes));
  }
  // Zombies and the market.
  TIDAL_RETURN_IF_ERROR(options.hoarding.Validate());
  if (options.hoarding.share > 0) {
    std::unordered_map<JobId, int64_t> tails;
    for (const Job& j : jobs)
      if (const int64_t tail = options.hoarding.TailOf(j.id); tail > 0) tails[j.id] = tail;
    replay->SetTails(std::move(tails));
  }
  std::unique_ptr<MarketSim> market;
  TenantQueue* tenant_queue = dynamic_cast<TenantQueue*>(&queue);
  std::optional<tenancy::ResourceId> gpu_res;
  if (options.market) {
    if (!tenants || !tenant_queue)
      return MakeError(ErrorCode::kInvalidArgument,
                       "the market needs tenants and a tenant queue (--tenants with --queue {}), not --queue {}",
                       "static-partitions|slurm-multifactor|kueue|las|tidal", QueuePolicyName(options.queue));
    const int64_t span = std::max<int64_t>(3600, *jobs.back().submit_time_s - t0);
    TIDAL_ASSIGN_OR_RETURN(market, MarketSim::Make(*options.market, *tenants, c.total_gpu_milli(), t0, span));
    gpu_res = tenants->resource("gpu");
  }
  std::vector<int64_t> tenant_usage(tenants ? static_cast<size_t>(tenants->size()) : 0, 0);
  auto usage_of = [&](tenancy::TenantId t) -> int64_t {
    return gpu_res ? tenant_queue->usage_tree().usage(t, *gpu_res) : 0;
  };
  // A zombie's run ends (finished, preempted or reclaimed): what it held idle.
  auto end_idle = [&](QueueJobRecord& rec, const Job& j, int64_t now) {
    if (rec.idle_since_s < 0) return;
    rec.hoarded_gpu_s += static_cast<int64_t>(j.num_gpu) * (now - rec.idle_since_s);
    rec.idle_since_s = -1;
  };
  // Start-time estimates by forward runs of the replay's current state.
  const StartEstimateOptions estimate_options{.f = estimate_f, .samples = options.start_estimate_samples, .seed = options.seed};
  // --explain: the state after the last pass at or before --at.
  auto explain = [&](int64_t now, int64_t prev_pass) -> Status {
    if (options.explain_job >= 0 && r.explain.at_s < 0 && now - t0 > options.explain_at_s) {
      r.explain.job = options.explain_job;
      r.explain.at_s = prev_pass - t0;  // the state that holds at --at
      auto it = index.find(static_cast<JobId>(options.explain_job));
      if (it == index.end()) {
        r.explain.state = "not in the workload";
      } else {
        const QueueJobRecord& rec = r.jobs[it->second];
        const bool arrived = rec.submit_s <= prev_pass;
        const bool running = replay->running(rec.id);
        if (!arrived) r.explain.state = "not arrived";
        else if (rec.outcome == JobOutcome::kUnresolvable) r.explain.state = "unresolvable: " + rec.reason;
        else if (rec.finish_s >= 0 && rec.finish_s <= prev_pass) r.explain.state = "finished";
        else if (running) r.explain.state = "running";
        else {
          r.explain.state = "waiting";
          r.explain.causes = queue.Explain(jobs[it->second]);
          TIDAL_ASSIGN_OR_RETURN(StartEstimate e, EstimateStart(*replay, rec.id, estimate_options));
          r.explain.start_samples = e.samples;
          if (e.p50_s >= 0) r.explain.start_p50_s = e.p50_s - t0;
          if (e.p90_s >= 0) r.explain.start_p90_s = e.p90_s - t0;
        }
      }
    }
    return Ok();
  };
  // --start-estimates N: N jobs drawn by the seed get an estimate right
  // after the pass at their arrival; it is compared with their start at the end.
  std::vector<uint8_t> estimate_wanted(jobs.size(), 0);
  if (options.start_estimates > 0) {
    std::vector<size_t> order(jobs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    Rng pick(options.seed * 7919 + 17);
    pick.Shuffle(order);
    for (size_t i = 0; i < order.size() && static_cast<int64_t>(i) < options.start_estimates; ++i) estimate_wanted[order[i]] = 1;
  }
  std::vector<std::pair<size_t, StartEstimate>> arrival_estimates;  // (job index, estimate)
  int64_t estimates_sampled = 0, estimates_at_once = 0;
  std::vector<const Job*> finished, replicas_arrived;
  int64_t next_hour = t0;
  auto sample_hour = [&] {
    const double inf = fleets ? fleets->gpus() : 0;
    r.hourly.push_back({static_cast<double>(alloc_now) / kMilliPerGpu - inf, inf, static_cast<double>(hoarding_now),
                        static_cast<int64_t>(queue.waiting()) - (fleets ? fleets->waiting() : 0)});
  };
  // With inference the replicas never end by themselves: the run ends with
  // the training.
  while (fleets ? done < r.jobs_total : (next_arrival < jobs.size() || replay->has_finishes())) {
    const int64_t arrival = next_arrival < jobs.size() ? *jobs[next_arrival].submit_time_s : kNoReservation;
    // Inference scales at each minute's tick; a tick that changes nothing
    // needs no batch.
    const int64_t tick = fleets ? fleets->next_tick() : kNoReservation;
    // The market may want the clock sooner (a meter boundary, a zombie's
    // sample): it advances alone, and the replay only if it reclaims a zombie.
    const int64_t replay_next = replay->PeekBatch(std::min(arrival, tick));
    const int64_t market_next = market ? market->NextWake() : kNoReservation;
    const bool market_first = market_next < replay_next;
    TIDAL_RETURN_IF_ERROR(explain(market_first ? market_next : replay_next, prev));
    std::vector<JobId> reclaim;
    if (market_first) {
      TIDAL_ASSIGN_OR_RETURN(reclaim, market->Advance(market_next));
      if (reclaim.empty()) continue;  // nothing changed for the queue
    }
    for (JobId id : reclaim) TIDAL_RETURN_IF_ERROR(replay->EndNow(id, market_next));
    bool ticked = false;
    replicas_arrived.clear();
    if (!market_first && tick == replay_next) {
      TIDAL_ASSIGN_OR_RETURN(const bool changed, fleets->Scale(*replay, replicas_arrived));
      if (!changed && replay->PeekBatch(arrival) > tick) {
        fleets->EndMinute(tick < window_end);
        continue;
      }
      ticked = true;
    }
    const int64_t now = replay->NextBatch(std::min(arrival, ticked ? tick : kNoReservation));
    const int64_t dt = now - prev;
    // The hours before this batch: the state that held since the last one.
    for (; next_hour < now; next_hour += 3600) sample_hour();
    alloc_integral += alloc_now * dt;
    if (const int64_t wdt = std::min(now, window_end) - std::min(prev, window_end); wdt > 0) {
      const double w = static_cast<double>(wdt);
      r.window_allocated_gpu_s += static_cast<double>(alloc_now) / kMilliPerGpu * w;
      r.window_stranded_gpu_s += static_cast<double>(stranded_now) / kMilliPerGpu * w;
      r.window_hoarded_gpu_s += static_cast<double>(hoarding_now) * w;
      r.window_model_flops += flops_now * w;
      r.window_peak_bf16_flops += peak_bf16_now * w;
      r.window_peak_native_flops += peak_native_now * w;
      if (fleets) r.window_inference_gpu_s += fleets->gpus() * w;
    }
    for (tenancy::TenantId t : violating) tenant_violation_s[static_cast<size_t>(t)] += static_cast<double>(dt);
    violation_tenant_s += static_cast<double>(dt) * static_cast<double>(violating.size());
    if (waiting_now) {
      stranded_integral += stranded_now * dt;
      idle_waiting_integral += (total_milli - alloc_now) * dt;
      waiting_time += dt;
    }
    prev = now;

    if (market && !market_first) {
      TIDAL_ASSIGN_OR_RETURN(reclaim, market->Advance(now));
      for (JobId id : reclaim) TIDAL_RETURN_IF_ERROR(replay->EndNow(id, now));
    }
    for (JobId id : reclaim) {
      r.jobs[index.at(id)].reclaimed = true;
      ++r.zombies_reclaimed;
    }
    finished.clear();
    TIDAL_RETURN_IF_ERROR(replay->FinishesAt(now, finished));
    for (const Job* idle : replay->TakeIdled()) {
      QueueJobRecord& rec = r.jobs[index.at(idle->id)];
      rec.idle_since_s = now;
      rate_idle(idle->id, idle->num_gpu);
      ++r.zombies;
      if (market) TIDAL_RETURN_IF_ERROR(market->Idle(idle->id, now));
    }
    std::vector<MarketSim::StopRequest> stops;
    for (const Job* j : finished) {
      runs.erase(j->id);
      if (guarantees) guarantees->Running(*j, -1);
      if (fleets && fleets->Owns(j->id)) continue;  // a replica scaled in
      QueueJobRecord& rec = r.jobs[index.at(j->id)];
      rate_end(j->id, j->num_gpu, rec.idle_since_s >= 0);
      end_idle(rec, *j, now);
      if (market) stops.push_back({.job = j->id});
      rec.finish_s = now;
      rec.run_s += now - rec.run_start_s;
      ++r.jobs_finished;
      ++done;
    }
    if (market) TIDAL_RETURN_IF_ERROR(market->StopMany(now, stops));
    rejected.clear();
    const size_t first_arrival = next_arrival;
    for (; next_arrival < jobs.size() && *jobs[next_arrival].submit_time_s == now; ++next_arrival) {
      const size_t before = rejected.size();
      TIDAL_RETURN_IF_ERROR(replay->Arrive(jobs[next_arrival], rejected));
      if (guarantees && rejected.size() == before) guarantees->Waiting(jobs[next_arrival], +1);
    }
    for (const UnresolvableJob& u : rejected) TIDAL_RETURN_IF_ERROR(unresolvable(u));
    if (guarantees)
      for (const Job* j : replicas_arrived) guarantees->Waiting(*j, +1);
    // A scale-out the forecast asked for preempts with notice.
    if (fleets) fleets->BeforePass(tenant_queue, c, ticked);

    TIDAL_ASSIGN_OR_RETURN(QueuePass pass, replay->Pass(now));
    stops.clear();
    for (const PreemptedJob& pj : pass.preempted) {
      if (guarantees) {
        guarantees->Running(*pj.job, -1);
        guarantees->Waiting(*pj.job, +1);
      }
      if (fleets && fleets->Owns(pj.job->id)) {
        fleets->Preempted(pj.job->id);
        continue;
      }
      QueueJobRecord& rec = r.jobs[index.at(pj.job->id)];
      // The work it loses is done again later: delivered once.
      if (auto rt = rates.find(pj.job->id); rt != rates.end() && now < window_end && pj.job->num_gpu > 0)
        r.window_model_flops -= rt->second.flops * static_cast<double>(pj.lost_gpu_s) / pj.job->num_gpu;
      rate_end(pj.job->id, pj.job->num_gpu, rec.idle_since_s >= 0);
      end_idle(rec, *pj.job, now);
      if (market) stops.push_back({.job = pj.job->id, .preempted = true, .lost_gpu_s = pj.lost_gpu_s});
      ++rec.preemptions;
      rec.lost_gpu_s += pj.lost_gpu_s;
      rec.run_s += now - rec.run_start_s;
      ++r.preemptions;
      r.lost_gpu_hours += static_cast<double>(pj.lost_gpu_s) / 3600.0;
      // Take back the part of its run's GPU time it did not run.
      if (auto rs = runs.find(pj.job->id); rs != runs.end()) {
        const double unrun = static_cast<double>(pj.job->num_gpu) * static_cast<double>(rs->second.end - now);
        multi_gpu_time -= unrun;
        if (rs->second.multi_node) multi_node_time -= unrun;
        if (rs->second.multi_switch) multi_switch_time -= unrun;
        if (rs->second.modelled) {
          modelled_time -= unrun;
          comm_time -= unrun * rs->second.comm;
        }
        runs.erase(rs);
      }
    }
    if (market) TIDAL_RETURN_IF_ERROR(market->StopMany(now, stops));
    if (market) {
      // A start borrows when its tenant is above its floor with it: of a
      // tenant's starts in this pass, the last ones are the borrowing ones.
      std::vector<int64_t> after(tenant_usage.size(), 0);
      for (tenancy::TenantId t = 0; t < tenants->size(); ++t) after[static_cast<size_t>(t)] = usage_of(t);
      std::vector<uint8_t> borrowed(pass.started.size(), 0);
      for (size_t si = pass.started.size(); si-- > 0;) {
        const Job* j = pass.started[si];
        const tenancy::TenantId t = tenant_queue->tenant_of(*j);
        int64_t& u = after[static_cast<size_t>(t)];
        borrowed[si] = u > tenants->nominal(t, *gpu_res);
        u -= j->TotalGpuMilli();
      }
      std::vector<MarketSim::StartRequest> starts;
      for (size_t si = 0; si < pass.started.size(); ++si) {
        const Job* j = pass.started[si];
        if (fleets && fleets->Owns(j->id)) continue;  // inference is not metered
        starts.push_back({.job = j->id, .tenant = tenant_queue->tenant_of(*j), .milli = j->TotalGpuMilli(),
                          .planned_end = pass.ends[si], .borrowed = borrowed[si] != 0});
      }
      TIDAL_RETURN_IF_ERROR(market->StartMany(now, starts));
    }
    for (size_t si = 0; si < pass.started.size(); ++si) {
      const Job* j = pass.started[si];
      if (guarantees) {
        guarantees->Waiting(*j, -1);
        guarantees->Running(*j, +1);
      }
      if (fleets && fleets->Owns(j->id)) {
        fleets->Started(*j, now, pass, c);
        continue;
      }
      QueueJobRecord& rec = r.jobs[index.at(j->id)];
      if (rec.start_s < 0) rec.start_s = now;  // queueing delay ends at the first start
      rec.run_start_s = now;
      if (auto e = evals.find(j->id); e != evals.end() && e->second.flops_per_s > 0) {
        const PlacementEval& ev = e->second;
        Rate rate{ev.flops_per_s, j->num_gpu * ev.peak_bf16_flops, j->num_gpu * ev.peak_native_flops, true};
        flops_now += rate.flops;
        peak_bf16_now += rate.peak_bf16;
        peak_native_now += rate.peak_native;
        rates[j->id] = rate;
        rec.mfu = ev.mfu;
        rec.model_flops = ev.flops_per_s * static_cast<double>(*j->duration_s) * ev.run_factor;
      }
      if (j->num_gpu < 2) continue;
      const Placement* p = c.FindAllocation(j->id);
      rec.nodes = static_cast<int32_t>(p->assignments.size());
      if (c.has_topology()) {
        std::vector<topo::DomainId> sw;
        for (const auto& a : p->assignments) sw.push_back(c.topology().parent(c.topology().host(c.host_of(a.node))));
        std::sort(sw.begin(), sw.end());
        rec.switches = static_cast<int32_t>(std::unique(sw.begin(), sw.end()) - sw.begin());
      }
      const double gpu_time = static_cast<double>(j->num_gpu) * static_cast<double>(pass.ends[si] - now);
      RunShare& share = runs[j->id];
      share = {now, pass.ends[si], rec.nodes > 1, rec.switches > 1, false, 0};
      if (rec.preemptions == 0) ++r.jobs_multi_gpu;
      multi_gpu_time += gpu_time;
      if (rec.nodes > 1) multi_node_time += gpu_time;
      if (rec.switches > 1) multi_switch_time += gpu_time;
      if (auto e = evals.find(j->id); e != evals.end()) {
        share.modelled = true;
        share.comm = e->second.comm_share;
        if (rec.preemptions == 0) {
          ++r.jobs_modelled;
          slowdown_sum += e->second.slowdown;
        }
        rec.slowdown = e->second.slowdown;
        rec.comm_share = e->second.comm_share;
        modelled_time += gpu_time;
        comm_time += gpu_time * e->second.comm_share;
      }
    }
    for (const UnresolvableJob& u : pass.unresolvable) {
      TIDAL_RETURN_IF_ERROR(unresolvable(u));
      if (guarantees) guarantees->Waiting(*u.job, -1);
    }
    r.backfilled += pass.backfilled;
    if (fleets) {
      TIDAL_RETURN_IF_ERROR(replay->ReleaseIdleMig());
      if (ticked) fleets->EndMinute(tick < window_end);
    }

    if (const Job* head = queue.head();
        head != nullptr && queue.reservation_s() != kNoReservation && !(fleets && fleets->Owns(head->id))) {
      QueueJobRecord& rec = r.jobs[index.at(head->id)];
      if (rec.reserved_s < 0) rec.reserved_s = queue.reservation_s();
    }

    alloc_now = c.total_gpu_milli_allocated();
    if (market) {
      for (tenancy::TenantId t = 0; t < tenants->size(); ++t) {
        tenant_usage[static_cast<size_t>(t)] = usage_of(t);
        if (market->OverBudget(t)) tenant_queue->DemoteToSpot(t);
      }
      TIDAL_RETURN_IF_ERROR(market->Observe(now, alloc_now, tenant_usage));
    }
    waiting_now = queue.waiting() > 0;
    if (next_hour == now) {  // an hour at this batch: the state after it
      sample_hour();
      next_hour += 3600;
    }
    violating.clear();
    if (guarantees) {
      violating = guarantees->Violating(total_milli - alloc_now);
      r.guarantee_violations += static_cast<int64_t>(violating.size());
    }
    stranded_now = waiting_now ? stranded.Compute(c, queue.waiting_shapes(), queue.shapes_version()) : 0;
    r.max_waiting = std::max<int64_t>(r.max_waiting, static_cast<int64_t>(queue.waiting()));

    for (size_t i = first_arrival; i < next_arrival; ++i) {
      if (!estimate_wanted[i] || !replay->live().contains(jobs[i].id)) continue;  // not sampled, or rejected
      ++estimates_sampled;
      if (replay->running(jobs[i].id)) {
        ++estimates_at_once;
        continue;
      }
      TIDAL_ASSIGN_OR_RETURN(StartEstimate e, EstimateStart(*replay, jobs[i].id, estimate_options));
      r.jobs[i].estimate_p50_s = e.p50_s;
      r.jobs[i].estimate_p90_s = e.p90_s;
      arrival_estimates.push_back({i, std::move(e)});
    }

    if (options.progress && done >= next_progress) {
      options.progress({done, r.jobs_total, now - t0, static_cast<int64_t>(queue.waiting()),
                        static_cast<int64_t>(queue.running())});
      next_progress = done + progress_every;
    }
  }
  TIDAL_RETURN_IF_ERROR(explain(kNoReservation, prev));
  const int64_t replicas_live = fleets ? fleets->waiting() + fleets->running() : 0;
  if (static_cast<int64_t>(queue.waiting() + queue.running()) != replicas_live) {
    return MakeError(ErrorCode::kInternal, "replay ended with {} jobs waiting and {} running; this is a bug",
                     queue.waiting(), queue.running());
  }
  if (options.progress) options.progress({done, r.jobs_total, prev - t0, 0, 0});
  for (const QueueJobRecord& rec : r.jobs) r.hoarded_gpu_hours += static_cast<double>(rec.hoarded_gpu_s) / 3600.0;
  if (fleets) r.inference = fleets->Results();
  if (market) {
    TIDAL_ASSIGN_OR_RETURN(MarketSimResult m, market->Finish());
    r.market = std::move(m);
  }

  if (options.start_estimates > 0) {
    std::vector<EstimatedStart> compared;
    for (const auto& [i, e] : arrival_estimates) {
      const QueueJobRecord& rec = r.jobs[i];
      if (e.p50_s < 0 || rec.start_s < 0) continue;  // never started (rejected later)
      compared.push_back({e.p50_s, e.p90_s, rec.start_s});
    }
    r.start_estimate_error = SummarizeStartEstimates(compared, estimates_sampled, estimates_at_once);
  }

  r.start_s = t0;
  r.end_s = prev;
  r.makespan_s = prev - t0;
  if (r.makespan_s > 0) {
    r.allocation_rate = static_cast<double>(alloc_integral) /
                        (static_cast<double>(total_milli) * static_cast<double>(r.makespan_s));
    r.waiting_time_share = static_cast<double>(waiting_time) / static_cast<double>(r.makespan_s);
  }
  if (waiting_time > 0) {
    r.stranded_gpu_share = static_cast<double>(stranded_integral) /
                           (static_cast<double>(total_milli) * static_cast<double>(waiting_time));
    r.idle_gpu_share_while_waiting = static_cast<double>(idle_waiting_integral) /
                                     (static_cast<double>(total_milli) * static_cast<double>(waiting_time));
  }
  std::vector<int64_t> delays, jcts, waits;
  delays.reserve(jobs.size());
  jcts.reserve(jobs.size());
  for (const QueueJobRecord& rec : r.jobs) {
    if (rec.outcome != JobOutcome::kFinished) continue;
    delays.push_back(rec.start_s - rec.submit_s);
    jcts.push_back(rec.finish_s - rec.submit_s);
    waits.push_back(rec.finish_s - rec.submit_s - rec.run_s);
  }
  if (multi_gpu_time > 0) {
    r.locality_node = multi_node_time / multi_gpu_time;
    if (c.has_topology()) r.locality_leaf = multi_switch_time / multi_gpu_time;
  }
  if (modelled_time > 0) {
    r.comm_share = comm_time / modelled_time;
    r.slowdown_mean = slowdown_sum / static_cast<double>(r.jobs_modelled);
  }
  r.queue_delay_s = Summarize(std::move(delays));
  r.jct_s = Summarize(std::move(jcts));
  r.wait_s = Summarize(std::move(waits));
  r.guarantee_violation_hours = violation_tenant_s / 3600.0;
  if (tenants) SummarizeTenants(*tenants, jobs, tenant_violation_s, r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return r;
}

nlohmann::json QueueSimJson(const QueueSimResult& r) {
  auto summary = [](const Summary& s) {
    return nlohmann::json{{"mean", s.mean}, {"p50", s.p50}, {"p95", s.p95}, {"p99", s.p99}};
  };
  nlohmann::json j;
  j["policy"] = r.policy;
  j["queue"] = r.queue;
  j["seed"] = r.seed;
  if (r.single_node_if_fits) j["single_node_if_fits"] = true;
  j["nodes"] = r.nodes;
  j["total_gpus"] = r.total_gpus;
  j["jobs_total"] = r.jobs_total;
  j["jobs_finished"] = r.jobs_finished;
  j["jobs_unresolvable"] = r.jobs_unresolvable;
  j["jobs_backfilled"] = r.backfilled;
  j["queue_delay_s"] = summary(r.queue_delay_s);
  j["jct_s"] = summary(r.jct_s);
  j["wait_s"] = summary(r.wait_s);
  j["allocation_rate"] = r.allocation_rate;
  j["stranded_gpu_share"] = r.stranded_gpu_share;
  j["waiting_time_share"] = r.waiting_time_share;
  j["idle_gpu_share_while_waiting"] = r.idle_gpu_share_while_waiting;
  j["makespan_s"] = r.makespan_s;
  j["max_waiting"] = r.max_waiting;
  auto measured = [](double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
  j["offered_load"] = r.offered_load;
  j["offered_load_native"] = r.offered_load_native;
  j["time_scale"] = r.time_scale;
  j["topology"] = r.topology.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.topology);
  j["jobs_multi_gpu"] = r.jobs_multi_gpu;
  j["jobs_modelled"] = r.jobs_modelled;
  j["locality_node"] = measured(r.locality_node);
  j["locality_leaf"] = measured(r.locality_leaf);
  j["comm_share"] = measured(r.comm_share);
  j["slowdown_mean"] = measured(r.slowdown_mean);
  j["tenants"] = r.tenants.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.tenants);
  j["estimate"] = r.estimate;
  j["preemptions"] = r.preemptions;
  j["lost_gpu_hours"] = r.lost_gpu_hours;
  j["guarantee_violations"] = r.guarantee_violations;
  j["guarantee_violation_hours"] = r.guarantee_violation_hours;
  j["fairness_max_min_slowdown"] = measured(r.fairness_max_min_slowdown);
  j["finish_time_fairness_max"] = measured(r.finish_time_fairness_max);
  nlohmann::json per = nlohmann::json::object();
  for (const TenantResult& t : r.per_tenant) {
    per[t.name] = {{"floor_gpus", t.floor_gpus},
                   {"jobs", t.jobs},
                   {"queue_delay_s", summary(t.queue_delay_s)},
                   {"jct_mean_s", t.jct_mean_s},
                   {"wait_mean_s", t.wait_mean_s},
                   {"slowdown_mean", t.slowdown_mean},
                   {"finish_time_fairness", t.ftf_mean},
                   {"gpu_hours", t.gpu_hours},
                   {"preemptions", t.preemptions},
                   {"lost_gpu_hours", t.lost_gpu_hours},
                   {"guarantee_violation_hours", t.guarantee_violation_hours}};
  }
  j["per_tenant"] = per;
  if (r.explain.job >= 0) {
    nlohmann::json causes = nlohmann::json::array();
    for (const BlockingCause& b : r.explain.causes) {
      causes.push_back({{"kind", b.kind}, {"detail", b.detail}, {"shortfall", b.shortfall}, {"resolvable", b.resolvable}});
    }
    j["explain"] = {{"job", r.explain.job}, {"at_s", r.explain.at_s}, {"state", r.explain.state}, {"causes", causes}};
    if (r.explain.start_samples > 0) {
      auto at = [](int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); };
      j["explain"]["start_estimate"] = {
          {"p50_s", at(r.explain.start_p50_s)}, {"p90_s", at(r.explain.start_p90_s)}, {"samples", r.explain.start_samples}};
    }
  }
  j["zombies"] = r.zombies;
  j["zombies_reclaimed"] = r.zombies_reclaimed;
  j["hoarded_gpu_hours"] = r.hoarded_gpu_hours;
  j["market"] = r.market ? MarketSimJson(*r.market) : nlohmann::json(nullptr);
  if (r.start_estimate_error.sampled > 0) {
    const StartEstimateError& e = r.start_estimate_error;
    j["start_estimate_error_s"] = {{"p50", e.p50},         {"p90", e.p90},         {"mean", e.mean},
                                   {"bias_mean", e.bias_mean}, {"coverage_p90", e.coverage_p90}, {"samples", e.samples},
                                   {"sampled", e.sampled}, {"started_at_once", e.started_at_once}};
  } else {
    j["start_estimate_error_s"] = nullptr;
  }
  return j;
}

Status WriteQueueSimOutputs(const QueueSimResult& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return MakeError(ErrorCode::kIo, "cannot create output directory '{}': {}", dir, ec.message());
  {
    const std::string path = dir + "/summary.json";
    std::ofstream out(path);
    if (!out) return MakeError(ErrorCode::kIo, "cannot write '{}'", path);
    out << QueueSimJson(r).dump(2) << "\n";
    if (!out) return MakeError(ErrorCode::kIo, "writing '{}' failed (disk full?)", path);
  }
  const std::string path = dir + "/jobs.csv";
  std::ofstream out(path);
  if (!out) return MakeError(ErrorCode::kIo, "cannot write '{}'", path);
  // reserved_s: the first backfill reservation the job got as the blocked
  // head; empty if it never had one. estimate_p50_s / _p90_s: the start
  // estimated at its arrival (--start-estimates), empty if none.
  out << "id,name,num_gpu,gpu_milli,submit_s,start_s,finish_s,queue_delay_s,jct_s,reserved_s,nodes,switches,slowdown,comm_share,outcome,reason,tenant,preemptions,lost_gpu_s,estimate_p50_s,estimate_p90_s\n";
  for (const QueueJobRecord& j : r.jobs) {
    std::string reason = j.reason;
    std::replace(reason.begin(), reason.end(), '"', '\'');
    if (j.outcome == JobOutcome::kFinished) {
      const std::string reserved = j.reserved_s >= 0 ? std::to_string(j.reserved_s) : std::string();
      const std::string comm = j.comm_share >= 0 ? fmt::format("{:.4f}", j.comm_share) : std::string();
      const std::string nodes = j.num_gpu > 1 ? std::to_string(j.nodes) : std::string();
      const std::string switches = j.num_gpu > 1 && j.switches > 0 ? std::to_string(j.switches) : std::string();
      auto opt = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string(); };
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{:.4f},{},finished,,{},{},{},{},{}\n", j.id, j.name, j.num_gpu,
                         j.gpu_milli, j.submit_s, j.start_s, j.finish_s, j.start_s - j.submit_s, j.finish_s - j.submit_s,
                         reserved, nodes, switches, j.slowdown, comm, j.tenant, j.preemptions, j.lost_gpu_s,
                         opt(j.estimate_p50_s), opt(j.estimate_p90_s));
    } else {
      out << fmt::format("{},{},{},{},{},,,,,,,,,,unresolvable,\"{}\",{},,,,\n", j.id, j.name, j.num_gpu, j.gpu_milli,
                         j.submit_s, reason, j.tenant);
    }
  }
  if (!out) return MakeError(ErrorCode::kIo, "writing '{}' failed (disk full?)", path);
  return WriteQueueReportHtml(r, dir + "/report.html");
}

}  // namespace tidal::sim
