#include "sim/colocate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <unordered_map>

#include "inference/forecast.h"
#include "plugins/registry.h"
#include "scheduler/tenant_queue.h"
#include "sim/placement_cost.h"
#include "sim/replay.h"
#include "sim/workload_input.h"

namespace tidal::sim {

namespace {

constexpr JobId kReplicaIdBase = 1'000'000'000;
constexpr int32_t kInferencePriority = 1000;
constexpr int64_t kMinute = 60;

// One service's replicas in one run.
struct Fleet {
  const inference::Service* svc = nullptr;
  Job shape;                                  // the replica template
  double gpus_per_replica = 1;
  std::vector<JobId> running;                 // in start order
  std::unordered_map<JobId, int64_t> ready_at;
  int64_t waiting = 0;
  std::optional<inference::Autoscaler> scaler;
  int fixed_day = 0, fixed_night = 0;         // static: both the peak; lyra: day / night peaks
  int64_t met = 0, minutes = 0;
  std::vector<int64_t> missed_by_day;
  double replica_minutes = 0;
  int max_replicas = 0;
};

double Demand(const Fleet& f, int64_t offset_s) { return inference::RateAt(f.svc->demand, offset_s); }
int Need(const Fleet& f, double rate) { return inference::ReplicasNeeded(*f.svc, rate); }
bool IsDay(const ColocateConfig& c, int64_t offset_s) {
  const int64_t hour = (offset_s % 86400) / 3600;
  return hour >= c.day_start_hour && hour < c.day_end_hour;
}

Result<Job> ReplicaShape(const inference::Service& s, const ClusterState& cluster, int64_t horizon_s) {
  Job j;
  j.name = s.name;
  j.group = "inference";
  j.priority = kInferencePriority;
  j.single_node = true;
  j.duration_s = 10 * horizon_s;  // replicas end when scaled in, never by themselves
  j.source = fmt::format("service '{}'", s.name);
  if (s.shape == "gpu") {
    j.num_gpu = 1;
    j.gpu_milli = kMilliPerGpu;
  } else if (s.shape.starts_with("tp")) {
    j.num_gpu = std::atoi(s.shape.c_str() + 2);
    j.gpu_milli = kMilliPerGpu;
  } else {
    const mig::Geometry* g = nullptr;
    for (NodeId n = 0; n < cluster.num_nodes() && !g; ++n)
      if (cluster.gpu_count(n) > 0) g = mig::FindGeometry(cluster.models().Name(cluster.gpu_model(n)));
    const int p = g ? g->FindProfile(s.shape) : -1;
    if (p < 0)
      return MakeError(ErrorCode::kInvalidArgument, "service '{}': replica shape '{}' is not a MIG profile of this fleet's GPUs", s.name,
                       s.shape);
    j.num_gpu = 1;
    j.gpu_milli = MigMilli(g->profile(p).compute);
    j.mig_profile = s.shape;
  }
  if (j.num_gpu <= 0) return MakeError(ErrorCode::kInvalidArgument, "service '{}': bad replica shape '{}'", s.name, s.shape);
  return j;
}

class Run {
 public:
  Run(const ColocateConfig& c, ColocatePolicy p, std::vector<Job> training, std::vector<NodeSpec> nodes)
      : c_(c), policy_(p), training_(std::move(training)), nodes_(std::move(nodes)) {}

  Result<ColocateRow> Go(const std::function<void(const ColocateProgress&)>& progress);

 private:
  Status Setup();
  Status Batch(int64_t now, std::vector<const Job*>& arrivals);  // one event batch (tick or not)
  void Integrate(int64_t now);
  Status Scale(int64_t now, int64_t offset_s);
  size_t ScaleInVictim(const Fleet& f, int64_t now) const;
  void Snapshot(int64_t hour);

  const ColocateConfig& c_;
  ColocatePolicy policy_;
  std::vector<Job> training_;
  std::vector<NodeSpec> nodes_;
  std::unique_ptr<PlannerPlacementCost> cost_;
  std::unique_ptr<Replay> replay_;
  TenantQueue* queue_ = nullptr;
  std::vector<Fleet> fleets_;
  std::deque<Job> replicas_;
  std::unordered_map<JobId, size_t> fleet_of_;
  std::unordered_map<JobId, int64_t> first_start_;
  int64_t t0_ = 0, prev_ = 0;
  double inference_gpus_ = 0;
  double mig_idle_gpu_s_ = 0;
  double alloc_gpu_s_ = 0, training_gpu_s_ = 0, inference_gpu_s_ = 0, lost_gpu_s_ = 0;
  bool notice_ = false;
  ColocateRow row_;
};

Status Run::Setup() {
  TIDAL_ASSIGN_OR_RETURN(ClusterState cluster, ClusterState::Build(nodes_));
  if (c_.topology) {
    TIDAL_RETURN_IF_ERROR(cluster.AttachTopology(c_.topology));
    cost_ = std::make_unique<PlannerPlacementCost>(cluster, WorkloadModel::Default());
    for (Job& j : training_)
      if (j.num_gpu > 1 && j.gpu_milli == kMilliPerGpu) j.tp_group = cost_->TensorParallel(j.num_gpu);
  }
  const int64_t horizon = c_.days * 86400;
  for (const inference::Service& s : c_.services) {
    Fleet f;
    f.svc = &s;
    f.missed_by_day.assign(static_cast<size_t>(c_.days), 0);
    TIDAL_ASSIGN_OR_RETURN(f.shape, ReplicaShape(s, cluster, horizon));
    f.gpus_per_replica = f.shape.IsMig() ? s.gpus_per_replica : f.shape.num_gpu;
    int peak = 0, day = 0, night = 0;
    for (int64_t off = 0; off < horizon; off += kMinute) {
      const int need = Need(f, Demand(f, off));
      peak = std::max(peak, need);
      int& window = IsDay(c_, off) ? day : night;
      window = std::max(window, need);
    }
    if (policy_ == ColocatePolicy::kStatic) f.fixed_day = f.fixed_night = peak;
    if (policy_ == ColocatePolicy::kLyra) f.fixed_day = day, f.fixed_night = night;
    if (policy_ == ColocatePolicy::kReactive || policy_ == ColocatePolicy::kTidal) {
      inference::AutoscalerConfig a;
      a.goodput_rps = s.goodput_rps;
      a.headroom = s.headroom;
      a.min_replicas = s.min_replicas;
      a.lead_s = policy_ == ColocatePolicy::kTidal ? c_.lead_s : 0;
      a.error_quantile = policy_ == ColocatePolicy::kTidal ? c_.error_quantile : 0;
      a.error_window_s = c_.error_window_s;
      a.error_tod_s = c_.error_tod_s;
      a.error_of_window_max = c_.error_of_window_max;
      a.error_margin_max = c_.error_margin_max;
      a.cooldown_s = c_.cooldown_s;
      TIDAL_ASSIGN_OR_RETURN(inference::Autoscaler sc, inference::Autoscaler::Create(a, kMinute));
      f.scaler.emplace(std::move(sc));
    }
    fleets_.push_back(std::move(f));
  }
  ReplaySetup setup{.placer = c_.topology ? "topo" : "bestfit",
                    .mig_placer = policy_ == ColocatePolicy::kReactive ? "first-fit" : "pack",
                    .queue = QueuePolicy::kTidal,
                    .cost = cost_.get(),
                    .seed = c_.seed};
  TenantQueueOptions& o = setup.tenant_options;
  o.order = TenantOrder::kFifo;
  o.quotas = false;
  o.backfill = true;
  o.priority_preemption = true;
  o.max_optional_searches = 64;
  o.checkpoint_interval_s = c_.checkpoint_interval_s;
  o.restart_penalty_s = c_.restart_penalty_s;
  t0_ = prev_ = training_.empty() ? 0 : *training_.front().submit_time_s;
  TIDAL_ASSIGN_OR_RETURN(replay_, Replay::Make(std::move(cluster), std::move(setup), t0_));
  queue_ = dynamic_cast<TenantQueue*>(&replay_->queue());
  return Ok();
}

void Run::Integrate(int64_t now) {
  const double dt = static_cast<double>(now - prev_);
  if (dt <= 0) return;
  const double in_use = replay_->cluster().gpus_in_use();
  alloc_gpu_s_ += in_use * dt;
  mig_idle_gpu_s_ += static_cast<double>(replay_->cluster().mig_idle_compute()) / mig::kComputeSlices * dt;
  inference_gpu_s_ += inference_gpus_ * dt;
  training_gpu_s_ += std::max(0.0, in_use - inference_gpus_) * dt;
  prev_ = now;
}

size_t Run::ScaleInVictim(const Fleet& f, int64_t now) const {
  return ChooseScaleInVictim(f.running, f.ready_at, now, replay_->cluster(), policy_ == ColocatePolicy::kTidal);
}

// Replica targets for the minute starting at offset_s, and the scaling.
Status Run::Scale(int64_t now, int64_t offset_s) {
  bool forecast_driven = false;
  for (size_t i = 0; i < fleets_.size(); ++i) {
    Fleet& f = fleets_[i];
    int target = 0;
    if (f.scaler) {
      // The autoscaler has seen the minute that just ended.
      const double seen = offset_s >= kMinute ? Demand(f, offset_s - kMinute) : Demand(f, 0);
      TIDAL_ASSIGN_OR_RETURN(target, f.scaler->Step(now - kMinute, seen));
      if (f.scaler->last_forecast_need() > f.scaler->last_reactive_need()) forecast_driven = true;
    } else {
      target = IsDay(c_, offset_s) ? f.fixed_day : f.fixed_night;
    }
    const int64_t have = static_cast<int64_t>(f.running.size()) + f.waiting;
    for (int64_t k = have; k < target; ++k) {
      Job j = f.shape;
      j.id = kReplicaIdBase + static_cast<JobId>(replicas_.size());
      j.name = fmt::format("{}-r{}", f.svc->name, replicas_.size());
      j.submit_time_s = now;
      replicas_.push_back(std::move(j));
      fleet_of_[replicas_.back().id] = i;
      std::vector<UnresolvableJob> rejected;
      TIDAL_RETURN_IF_ERROR(replay_->Arrive(replicas_.back(), rejected));
      if (!rejected.empty()) return MakeError(ErrorCode::kUnresolvable, "{}: {}", f.svc->name, rejected.front().reason);
      ++f.waiting;
    }
    for (int64_t k = target; k < have && !f.running.empty(); ++k) {
      const size_t v = ScaleInVictim(f, now);
      const JobId id = f.running[v];
      f.running.erase(f.running.begin() + static_cast<std::ptrdiff_t>(v));
      f.ready_at.erase(id);
      inference_gpus_ -= f.gpus_per_replica;
      TIDAL_RETURN_IF_ERROR(replay_->EndNow(id, now));
    }
  }
  // The ladder: a scale-out the forecast asked for preempts with notice;
  // one the observed demand forces (a surprise) preempts at once.
  notice_ = policy_ == ColocatePolicy::kTidal && forecast_driven;
  return Ok();
}

Status Run::Batch(int64_t now, std::vector<const Job*>& arrivals) {
  std::vector<const Job*> finished;
  TIDAL_RETURN_IF_ERROR(replay_->FinishesAt(now, finished));
  std::vector<UnresolvableJob> rejected;
  for (const Job* j : arrivals) TIDAL_RETURN_IF_ERROR(replay_->Arrive(*j, rejected));
  arrivals.clear();
  queue_->set_preempt_checkpoint_s(notice_ ? c_.checkpoint_write_s : -1);
  const MigCounters before = replay_->cluster().mig_counters();
  TIDAL_ASSIGN_OR_RETURN(QueuePass pass, replay_->Pass(now));
  const MigCounters& after = replay_->cluster().mig_counters();
  // When a new replica serves: its start, its model load, the victims'
  // checkpoint write when it preempted with notice, and a MIG
  // reconfiguration in this pass (charged to every MIG replica of the pass).
  int64_t mig_delay = 0;
  if (after.mode_changes > before.mode_changes) mig_delay = c_.mig_mode_s;
  else if (after.instances_created > before.instances_created) mig_delay = c_.mig_create_s;
  const int64_t notice_delay = notice_ && !pass.preempted.empty() ? c_.checkpoint_write_s : 0;
  for (const PreemptedJob& v : pass.preempted) {
    ++row_.preemptions;
    row_.preemptions_with_notice += notice_;
    lost_gpu_s_ += static_cast<double>(v.lost_gpu_s);
  }
  for (const Job* j : pass.started) {
    auto fi = fleet_of_.find(j->id);
    if (fi == fleet_of_.end()) {
      first_start_.try_emplace(j->id, now);
      continue;
    }
    Fleet& f = fleets_[fi->second];
    --f.waiting;
    f.running.push_back(j->id);
    // The fleet exists before the run: replicas placed at its start serve at once.
    f.ready_at[j->id] = now == t0_ ? now : now + c_.startup_s + notice_delay + (j->IsMig() ? mig_delay : 0);
    inference_gpus_ += f.gpus_per_replica;
  }
  TIDAL_RETURN_IF_ERROR(replay_->ReleaseIdleMig());
  return Ok();
}

void Run::Snapshot(int64_t hour) {
  const ClusterState& c = replay_->cluster();
  MigHour h{hour, c.mig_gpus(), {}};
  for (NodeId n = 0; n < c.num_nodes() && c.mig_gpus() > 0; ++n) {
    for (int32_t g = 0; g < c.gpu_count(n); ++g) {
      const MigDevice* d = c.mig_device(n, g);
      if (!d) continue;
      for (size_t i = 0; i < d->owner.size(); ++i)
        if (d->owner[i] != MigDevice::kNoOwner) ++h.instances[d->geometry->profile(d->layout.instances[i].profile).name];
    }
  }
  row_.mig_hours.push_back(std::move(h));
}

Result<ColocateRow> Run::Go(const std::function<void(const ColocateProgress&)>& progress) {
  TIDAL_RETURN_IF_ERROR(Setup());
  row_.policy = std::string(ColocatePolicyName(policy_));
  const int64_t minutes = c_.days * 86400 / kMinute;
  const int64_t end = t0_ + minutes * kMinute;
  size_t next = 0;
  std::vector<const Job*> arrivals;
  auto next_arrival = [&] { return next < training_.size() ? *training_[next].submit_time_s : kNoReservation; };
  for (int64_t m = 0; m <= minutes; ++m) {
    const int64_t tick = t0_ + m * kMinute;
    // Training events before the tick, one batch each.
    for (;;) {
      const int64_t at = replay_->PeekBatch(next_arrival());
      if (at == kNoReservation || at >= tick) break;
      const int64_t now = replay_->NextBatch(next_arrival());
      Integrate(now);
      while (next < training_.size() && *training_[next].submit_time_s == now) arrivals.push_back(&training_[next++]);
      notice_ = false;
      TIDAL_RETURN_IF_ERROR(Batch(now, arrivals));
    }
    Integrate(tick);
    if (m == minutes) break;
    if (m % 60 == 0) Snapshot(m / 60);
    const int64_t offset = m * kMinute;
    TIDAL_RETURN_IF_ERROR(Scale(tick, offset));
    const int64_t now = replay_->NextBatch(tick);
    if (now != tick) return MakeError(ErrorCode::kInternal, "colocate: batch at {} instead of the tick {}", now, tick);
    while (next < training_.size() && *training_[next].submit_time_s == now) arrivals.push_back(&training_[next++]);
    TIDAL_RETURN_IF_ERROR(Batch(now, arrivals));
    // SLO for this minute: replicas serving by its start.
    for (Fleet& f : fleets_) {
      int64_t ready = 0;
      for (JobId id : f.running) ready += f.ready_at.at(id) <= tick;
      ++f.minutes;
      const bool met = static_cast<double>(ready) * f.svc->goodput_rps >= Demand(f, offset) - 1e-9;
      f.met += met;
      if (!met) ++f.missed_by_day[static_cast<size_t>(m / 1440)];
      f.replica_minutes += static_cast<double>(f.running.size());
      f.max_replicas = std::max(f.max_replicas, static_cast<int>(f.running.size()));
    }
    if (progress && m % 1440 == 0) progress({row_.policy, m, minutes});
  }
  const double days = static_cast<double>(c_.days);
  for (const Fleet& f : fleets_) {
    row_.services.push_back({f.svc->name, f.minutes ? static_cast<double>(f.met) / static_cast<double>(f.minutes) : 0, f.minutes,
                             f.minutes ? f.replica_minutes / static_cast<double>(f.minutes) : 0, f.max_replicas,
                             f.replica_minutes * f.gpus_per_replica / 60.0, f.missed_by_day});
  }
  double delay_sum = 0;
  for (const Job& j : training_) {
    if (auto it = first_start_.find(j.id); it != first_start_.end()) {
      delay_sum += static_cast<double>(it->second - *j.submit_time_s);
      ++row_.training_started;
    } else if (*j.submit_time_s < end) {
      ++row_.training_waiting_at_end;
    }
  }
  row_.training_queue_delay_s = row_.training_started ? delay_sum / static_cast<double>(row_.training_started) : 0;
  row_.training_gpu_hours = (training_gpu_s_ - lost_gpu_s_) / 3600.0;
  row_.lost_gpu_hours = lost_gpu_s_ / 3600.0;
  row_.inference_gpu_hours = inference_gpu_s_ / 3600.0;
  row_.mig_idle_gpu_hours = mig_idle_gpu_s_ / 3600.0;
  row_.preemptions_per_day = static_cast<double>(row_.preemptions) / days;
  const MigCounters& mc = replay_->cluster().mig_counters();
  row_.mig_reconfigs_per_day = static_cast<double>(mc.instances_created + mc.instances_destroyed + mc.mode_changes) / days;
  row_.allocation_rate = alloc_gpu_s_ / (static_cast<double>(replay_->cluster().total_gpus()) * static_cast<double>(end - t0_));
  return row_;
}

}  // namespace

size_t ChooseScaleInVictim(const std::vector<JobId>& running, const std::unordered_map<JobId, int64_t>& ready_at, int64_t now,
                           const ClusterState& c, bool emptiest_first) {
  size_t best = running.size() - 1;
  double best_key = 0;
  for (size_t i = running.size(); i-- > 0;) {
    const JobId id = running[i];
    const bool serving = ready_at.at(id) <= now;
    double key = serving ? 1e9 : 0;  // lower = ended first
    if (serving && emptiest_first) {
      if (const Placement* p = c.FindAllocation(id); p && !p->assignments.empty()) {
        const NodeAssignment& a = p->assignments[0];
        key = !a.mig.empty() ? c.mig_device(a.node, a.mig[0].gpu)->BusyCompute() : -c.free_whole_gpus(a.node);
      }
    }
    if (i == running.size() - 1 || key < best_key) best = i, best_key = key;
  }
  return best;
}

Result<ColocateResult> RunColocate(const ColocateConfig& config, const std::function<void(const ColocateProgress&)>& progress) {
  if (config.days <= 0 || config.days > 366) return MakeError(ErrorCode::kInvalidArgument, "colocate: days must be in [1, 366]");
  if (config.services.empty()) return MakeError(ErrorCode::kInvalidArgument, "colocate: no inference services");
  if (config.day_start_hour < 0 || config.day_end_hour > 24 || config.day_start_hour >= config.day_end_hour)
    return MakeError(ErrorCode::kInvalidArgument, "colocate: day hours must satisfy 0 <= start < end <= 24");
  std::vector<Job> jobs = config.training;
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return *a.submit_time_s < *b.submit_time_s; });
  int64_t gpus = 0;
  for (const NodeSpec& n : config.nodes) gpus += n.gpu_count;
  ColocateResult r;
  r.name = config.name;
  r.gpus = gpus;
  r.days = config.days;
  TIDAL_ASSIGN_OR_RETURN(const ArrivalScale scale, ScaleArrivals(jobs, gpus, config.load, 0));
  r.offered_load = scale.offered_load;
  if (!jobs.empty()) {
    const int64_t t0 = *jobs.front().submit_time_s;
    // A backlog: the jobs of the first backlog_s are waiting when the run starts.
    for (Job& j : jobs)
      if (*j.submit_time_s < t0 + config.backlog_s) j.submit_time_s = t0;
    std::erase_if(jobs, [&](const Job& j) { return *j.submit_time_s >= t0 + config.days * 86400; });
  }
  r.training_jobs = static_cast<int64_t>(jobs.size());
  for (ColocatePolicy p : config.policies) {
    Run run(config, p, jobs, config.nodes);
    TIDAL_ASSIGN_OR_RETURN(ColocateRow row, run.Go(progress));
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace tidal::sim
