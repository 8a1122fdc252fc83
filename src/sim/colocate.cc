#include "sim/colocate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

#include "inference/forecast.h"
#include "plugins/registry.h"
#include "scheduler/tenant_queue.h"
#include "sim/inference_fleets.h"
#include "sim/placement_cost.h"
#include "sim/replay.h"
#include "sim/workload_input.h"

namespace tidal::sim {

namespace {

constexpr int64_t kMinute = 60;

class Run {
 public:
  Run(const ColocateConfig& c, ColocatePolicy p, std::vector<Job> training, std::vector<NodeSpec> nodes)
      : c_(c), policy_(p), training_(std::move(training)), nodes_(std::move(nodes)) {}

  Result<ColocateRow> Go(const std::function<void(const ColocateProgress&)>& progress);

 private:
  Status Setup();
  Status Batch(int64_t now, std::vector<const Job*>& arrivals);  // one event batch (tick or not)
  void Integrate(int64_t now);
  void Snapshot(int64_t hour);
  // Whether a training job waits (the queue's waiting jobs are training
  // jobs and the replicas not started yet).
  bool TrainingWaits() const { return queue_->waiting() > static_cast<size_t>(fleets_->waiting()); }

  const ColocateConfig& c_;
  ColocatePolicy policy_;
  std::vector<Job> training_;
  std::vector<NodeSpec> nodes_;
  std::unique_ptr<PlannerPlacementCost> cost_;
  std::unique_ptr<Replay> replay_;
  TenantQueue* queue_ = nullptr;
  std::optional<InferenceFleets> fleets_;
  std::unordered_map<JobId, int64_t> first_start_;
  int64_t t0_ = 0, prev_ = 0;
  double mig_idle_gpu_s_ = 0;
  double alloc_gpu_s_ = 0, training_gpu_s_ = 0, inference_gpu_s_ = 0, lost_gpu_s_ = 0;
  double idle_gpu_s_ = 0, idle_no_demand_gpu_s_ = 0;
  bool tick_pass_ = false;  // a minute tick's pass: its scale-outs may preempt with notice
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
  InferenceFleetsOptions f{.mode = policy_ == ColocatePolicy::kStatic   ? ScalingMode::kPeak
                                   : policy_ == ColocatePolicy::kLyra   ? ScalingMode::kDayNight
                                   : policy_ == ColocatePolicy::kReactive ? ScalingMode::kReactive
                                                                          : ScalingMode::kForecast,
                           .horizon_s = c_.days * 86400,
                           .startup_s = c_.startup_s,
                           .checkpoint_write_s = c_.checkpoint_write_s,
                           .mig_create_s = c_.mig_create_s,
                           .mig_mode_s = c_.mig_mode_s,
                           .lead_s = c_.lead_s,
                           .cooldown_s = c_.cooldown_s,
                           .error_quantile = c_.error_quantile,
                           .error_window_s = c_.error_window_s,
                           .error_tod_s = c_.error_tod_s,
                           .error_of_window_max = c_.error_of_window_max,
                           .error_margin_max = c_.error_margin_max,
                           .day_start_hour = c_.day_start_hour,
                           .day_end_hour = c_.day_end_hour,
                           .emptiest_first = policy_ == ColocatePolicy::kTidal,
                           .notice = policy_ == ColocatePolicy::kTidal};
  TIDAL_ASSIGN_OR_RETURN(InferenceFleets fl, InferenceFleets::Make(c_.services, cluster, std::move(f), t0_));
  fleets_.emplace(std::move(fl));
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
  inference_gpu_s_ += fleets_->gpus() * dt;
  // Idle capacity (no job holds it, MIG slices included), and the part of
  // it while no training job waited: capacity the policy freed that the
  // workload had nothing to put on.
  const double idle = static_cast<double>(replay_->cluster().total_gpus()) - in_use;
  idle_gpu_s_ += idle * dt;
  if (!TrainingWaits()) idle_no_demand_gpu_s_ += idle * dt;
  training_gpu_s_ += std::max(0.0, in_use - fleets_->gpus()) * dt;
  prev_ = now;
}

Status Run::Batch(int64_t now, std::vector<const Job*>& arrivals) {
  std::vector<const Job*> finished;
  TIDAL_RETURN_IF_ERROR(replay_->FinishesAt(now, finished));
  std::vector<UnresolvableJob> rejected;
  for (const Job* j : arrivals) TIDAL_RETURN_IF_ERROR(replay_->Arrive(*j, rejected));
  arrivals.clear();
  fleets_->BeforePass(queue_, replay_->cluster(), tick_pass_);
  TIDAL_ASSIGN_OR_RETURN(QueuePass pass, replay_->Pass(now));
  // When a new replica serves: its start, its model load, its victims'
  // checkpoint write when it preempted with notice, and the MIG
  // reconfiguration the pass made for it.
  for (const PreemptedJob& v : pass.preempted) {
    if (fleets_->Owns(v.job->id)) fleets_->Preempted(v.job->id);
    ++row_.preemptions;
    row_.preemptions_with_notice += v.notice;
    lost_gpu_s_ += static_cast<double>(v.lost_gpu_s);
  }
  for (const Job* j : pass.started) {
    if (!fleets_->Owns(j->id)) {
      first_start_.try_emplace(j->id, now);
      continue;
    }
    fleets_->Started(*j, now, pass, replay_->cluster());
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
      tick_pass_ = false;
      TIDAL_RETURN_IF_ERROR(Batch(now, arrivals));
    }
    Integrate(tick);
    if (m == minutes) break;
    if (c_.skip_gaps && next < training_.size() && next_arrival() > tick && !TrainingWaits()) {
      const int64_t shift = next_arrival() - tick;
      for (size_t i = next; i < training_.size(); ++i) training_[i].submit_time_s = *training_[i].submit_time_s - shift;
    }
    if (m % 60 == 0) Snapshot(m / 60);
    std::vector<const Job*> replicas;
    TIDAL_RETURN_IF_ERROR(fleets_->Scale(*replay_, replicas));
    tick_pass_ = true;  // the replicas of this tick's scale-out (InferenceFleets::NoticeFor)
    const int64_t now = replay_->NextBatch(tick);
    if (now != tick) return MakeError(ErrorCode::kInternal, "colocate: batch at {} instead of the tick {}", now, tick);
    while (next < training_.size() && *training_[next].submit_time_s == now) arrivals.push_back(&training_[next++]);
    TIDAL_RETURN_IF_ERROR(Batch(now, arrivals));
    // SLO for this minute: replicas serving by its start.
    fleets_->EndMinute();
    if (progress && m % 1440 == 0) progress({row_.policy, m, minutes});
  }
  const double days = static_cast<double>(c_.days);
  row_.services = fleets_->Results();
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
  row_.idle_gpu_hours = idle_gpu_s_ / 3600.0;
  row_.idle_no_training_waiting_gpu_hours = idle_no_demand_gpu_s_ / 3600.0;
  row_.preemptions_per_day = static_cast<double>(row_.preemptions) / days;
  const MigCounters& mc = replay_->cluster().mig_counters();
  row_.mig_reconfigs_per_day = static_cast<double>(mc.instances_created + mc.instances_destroyed + mc.mode_changes) / days;
  row_.allocation_rate = alloc_gpu_s_ / (static_cast<double>(replay_->cluster().total_gpus()) * static_cast<double>(end - t0_));
  return row_;
}

}  // namespace

Result<ColocateResult> RunColocate(const ColocateConfig& config, const std::function<void(const ColocateProgress&)>& progress) {
  if (config.days <= 0 || config.days > 366) return MakeError(ErrorCode::kInvalidArgument, "colocate: days must be in [1, 366]");
  if (config.services.empty()) return MakeError(ErrorCode::kInvalidArgument, "colocate: no inference services");
  // The day hours are checked where they are used (InferenceFleets::Make).
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
    // With gaps skipped the arrivals move earlier as the run goes: a job
    // past the window may still arrive in it.
    if (!config.skip_gaps) std::erase_if(jobs, [&](const Job& j) { return *j.submit_time_s >= t0 + config.days * 86400; });
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
