#include "sim/inference_fleets.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "mig/geometry.h"
#include "scheduler/tenant_queue.h"
#include "sim/replay.h"

namespace tidal::sim {

namespace {
constexpr int64_t kMinute = 60;
}  // namespace

Result<Job> ReplicaShape(const inference::Service& s, const ClusterState& cluster, int64_t horizon_s) {
  Job j;
  j.name = s.name;
  j.group = "inference";
  j.priority = InferenceFleets::kPriority;
  j.single_node = true;
  // Replicas end when scaled in, never by themselves: a century.
  j.duration_s = std::max<int64_t>(10 * horizon_s, 100LL * 365 * 86400);
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

namespace {

// Fills in where r runs, unless known; false if it holds nothing.
bool Locate(RunningReplica& r, const ClusterState& c) {
  if (r.node >= 0) return true;
  const Placement* p = c.FindAllocation(r.id);
  if (!p || p->assignments.empty()) return false;
  r.node = p->assignments[0].node;
  r.mig_gpu = p->assignments[0].mig.empty() ? -1 : p->assignments[0].mig[0].gpu;
  return true;
}

// A replica's scale-in order: lower ends first.
double ScaleInKey(const RunningReplica& r, int64_t now, const ClusterState& c, bool emptiest_first) {
  const bool serving = r.ready_at <= now;
  double key = serving ? 1e9 : 0;
  if (serving && emptiest_first) {
    RunningReplica at = r;
    if (!Locate(at, c)) return key;
    key = at.mig_gpu >= 0 ? c.mig_device(at.node, at.mig_gpu)->BusyCompute() : -c.free_whole_gpus(at.node);
  }
  return key;
}

}  // namespace

size_t ChooseScaleInVictim(const std::vector<RunningReplica>& running, int64_t now, const ClusterState& c, bool emptiest_first) {
  size_t best = running.size() - 1;
  double best_key = 0;
  for (size_t i = running.size(); i-- > 0;) {
    const double key = ScaleInKey(running[i], now, c, emptiest_first);
    if (i == running.size() - 1 || key < best_key) best = i, best_key = key;
  }
  return best;
}

std::vector<size_t> ChooseScaleInVictims(const std::vector<RunningReplica>& running, int64_t now, const ClusterState& c,
                                         bool emptiest_first, size_t k) {
  std::vector<std::pair<double, size_t>> keys;
  keys.reserve(running.size());
  for (size_t i = 0; i < running.size(); ++i) keys.push_back({ScaleInKey(running[i], now, c, emptiest_first), i});
  k = std::min(k, keys.size());
  // ChooseScaleInVictim's order: the lowest key, ties to the newest.
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k), keys.end(),
                    [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
  std::vector<size_t> out;
  for (size_t i = 0; i < k; ++i) out.push_back(keys[i].second);
  return out;
}

Result<std::shared_ptr<ScalingTargets>> ScalingTargets::Make(const std::vector<inference::Service>& services,
                                                             const InferenceFleetsOptions& o) {
  if (o.mode != ScalingMode::kReactive && o.mode != ScalingMode::kForecast)
    return MakeError(ErrorCode::kInvalidArgument, "inference: scaling targets are for the reactive and forecast modes");
  std::shared_ptr<ScalingTargets> t(new ScalingTargets());
  t->services_ = services;
  t->options_ = o;
  t->options_.targets = nullptr;
  t->options_.groups.clear();
  const bool forecast = o.mode == ScalingMode::kForecast;
  for (const inference::Service& s : services) {
    inference::AutoscalerConfig a;
    a.goodput_rps = s.goodput_rps;
    a.headroom = s.headroom;
    a.min_replicas = s.min_replicas;
    a.lead_s = forecast ? o.lead_s : 0;
    a.error_quantile = forecast ? o.error_quantile : 0;
    a.error_window_s = o.error_window_s;
    a.error_tod_s = o.error_tod_s;
    a.error_of_window_max = o.error_of_window_max;
    a.error_margin_max = o.error_margin_max;
    a.cooldown_s = o.cooldown_s;
    auto sc = inference::Autoscaler::Create(a, kMinute);
    if (!sc) return MakeError(sc.error().code, "service '{}': {}", s.name, sc.error().message);
    t->scalers_.push_back(std::move(*sc));
  }
  t->minutes_.resize(services.size());
  return t;
}

Result<ScalingTargets::Minute> ScalingTargets::At(size_t service, int64_t minute) {
  std::lock_guard lock(mu_);
  if (service >= services_.size() || minute < 0)
    return MakeError(ErrorCode::kInvalidArgument, "scaling targets: no service #{} or minute {}", service, minute);
  std::vector<Minute>& done = minutes_[service];
  inference::Autoscaler& a = scalers_[service];
  while (static_cast<int64_t>(done.size()) <= minute) {
    // The autoscaler has seen the minute that just ended. Its answers
    // depend on time differences only, so minute 0 starts at 0 here.
    const int64_t m = static_cast<int64_t>(done.size());
    const double seen = inference::RateAt(services_[service].demand, m >= 1 ? (m - 1) * kMinute : 0);
    TIDAL_ASSIGN_OR_RETURN(const int target, a.Step((m - 1) * kMinute, seen));
    done.push_back({target, a.last_forecast_need() > a.last_reactive_need()});
  }
  return done[static_cast<size_t>(minute)];
}

bool ScalingTargets::Matches(const std::vector<inference::Service>& services, const InferenceFleetsOptions& o) const {
  if (services.size() != services_.size() || o.mode != options_.mode || o.lead_s != options_.lead_s || o.cooldown_s != options_.cooldown_s ||
      o.error_quantile != options_.error_quantile || o.error_window_s != options_.error_window_s || o.error_tod_s != options_.error_tod_s ||
      o.error_of_window_max != options_.error_of_window_max || o.error_margin_max != options_.error_margin_max)
    return false;
  for (size_t i = 0; i < services.size(); ++i) {
    const inference::Service &a = services[i], &b = services_[i];
    if (a.name != b.name || a.goodput_rps != b.goodput_rps || a.headroom != b.headroom || a.min_replicas != b.min_replicas ||
        a.demand.step_s != b.demand.step_s || a.demand.rate != b.demand.rate)
      return false;
  }
  return true;
}

bool InferenceFleets::IsDay(int64_t offset_s) const {
  const int64_t hour = (offset_s % 86400) / 3600;
  return hour >= options_.day_start_hour && hour < options_.day_end_hour;
}

Result<InferenceFleets> InferenceFleets::Make(const std::vector<inference::Service>& services, const ClusterState& cluster,
                                              InferenceFleetsOptions o, int64_t t0) {
  if (o.horizon_s <= 0) return MakeError(ErrorCode::kInvalidArgument, "inference: the horizon must be positive");
  if (o.day_start_hour < 0 || o.day_end_hour > 24 || o.day_start_hour >= o.day_end_hour)
    return MakeError(ErrorCode::kInvalidArgument, "inference: day hours must satisfy 0 <= start < end <= 24");
  if (!o.groups.empty() && o.groups.size() != services.size())
    return MakeError(ErrorCode::kInvalidArgument, "inference: {} groups for {} services", o.groups.size(), services.size());
  if (o.mode == ScalingMode::kReactive || o.mode == ScalingMode::kForecast) {
    if (!o.targets) {
      TIDAL_ASSIGN_OR_RETURN(o.targets, ScalingTargets::Make(services, o));
    } else if (!o.targets->Matches(services, o)) {
      return MakeError(ErrorCode::kInvalidArgument, "inference: the shared scaling targets were made for other services or knobs; make them "
                       "with ScalingTargets::Make from these services and options, or leave options.targets null");
    }
  }
  InferenceFleets f;
  f.options_ = std::move(o);
  f.t0_ = t0;
  const InferenceFleetsOptions& opt = f.options_;
  for (size_t i = 0; i < services.size(); ++i) {
    const inference::Service& s = services[i];
    Fleet fl;
    fl.svc = &s;
    fl.missed_by_day.assign(static_cast<size_t>((opt.horizon_s + 86399) / 86400), 0);
    TIDAL_ASSIGN_OR_RETURN(fl.shape, ReplicaShape(s, cluster, opt.horizon_s));
    if (!opt.groups.empty() && !opt.groups[i].empty()) fl.shape.group = opt.groups[i];
    fl.gpus_per_replica = fl.shape.IsMig() ? s.gpus_per_replica : fl.shape.num_gpu;
    int day = 0, night = 0;
    for (int64_t off = 0; off < opt.horizon_s; off += kMinute) {
      const int need = inference::ReplicasNeeded(s, inference::RateAt(s.demand, off));
      fl.peak = std::max(fl.peak, need);
      int& window = f.IsDay(off) ? day : night;
      window = std::max(window, need);
    }
    if (opt.mode == ScalingMode::kPeak || opt.mode == ScalingMode::kDayNight) {
      if (opt.mode == ScalingMode::kPeak) fl.fixed_day = fl.fixed_night = fl.peak;
      else fl.fixed_day = day, fl.fixed_night = night;
    } else {
      fl.scaled = true;
    }
    f.fleets_.push_back(std::move(fl));
  }
  return f;
}

Result<bool> InferenceFleets::Scale(Replay& replay, std::vector<const Job*>& arrived) {
  bool changed = false;
  const int64_t now = next_tick();
  const int64_t offset_s = now - t0_;
  for (size_t i = 0; i < fleets_.size(); ++i) {
    Fleet& f = fleets_[i];
    int target = 0;
    if (f.scaled) {
      TIDAL_ASSIGN_OR_RETURN(const ScalingTargets::Minute m, options_.targets->At(i, minute_));
      target = m.target;
      f.forecast_driven = m.forecast_driven;
    } else {
      target = IsDay(offset_s) ? f.fixed_day : f.fixed_night;
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
      TIDAL_RETURN_IF_ERROR(replay.Arrive(replicas_.back(), rejected));
      if (!rejected.empty()) return MakeError(ErrorCode::kUnresolvable, "{}: {}", f.svc->name, rejected.front().reason);
      arrived.push_back(&replicas_.back());
      ++f.waiting;
      changed = true;
    }
    if (target < have && !f.running.empty()) {
      // Ending a replica frees its GPU only at the replay's FinishesAt, so
      // the victims' keys stay as they are: choose them all in one pass.
      // Replicas never move: each is located once.
      const ClusterState& c = replay.cluster();
      for (RunningReplica& r : f.running) Locate(r, c);
      const std::vector<size_t> victims =
          ChooseScaleInVictims(f.running, now, c, options_.emptiest_first, static_cast<size_t>(have - target));
      std::vector<uint8_t> ended(f.running.size(), 0);
      for (size_t v : victims) {
        ended[v] = 1;
        gpus_ -= f.gpus_per_replica;
        TIDAL_RETURN_IF_ERROR(replay.EndNow(f.running[v].id, now));
        changed = true;
      }
      size_t w = 0;
      for (size_t r = 0; r < f.running.size(); ++r)
        if (!ended[r]) f.running[w++] = f.running[r];
      f.running.resize(w);
    }
  }
  return changed;
}

int64_t InferenceFleets::NoticeFor(const Job& preemptor) const {
  if (!options_.notice) return -1;
  const auto it = fleet_of_.find(preemptor.id);
  return it != fleet_of_.end() && fleets_[it->second].forecast_driven ? options_.checkpoint_write_s : -1;
}

void MigBefore::Take(const ClusterState& c) {
  // No layout changed since the last record of this cluster: it still holds.
  if (taken_ && c.instance_id() == taken_cluster_ && c.mig_layout_version() == taken_version_) return;
  taken_ = true;
  taken_cluster_ = c.instance_id();
  taken_version_ = c.mig_layout_version();
  slices_.clear();
  if (c.mig_gpus() == 0) return;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.mig_gpus(n) == 0) continue;
    for (int32_t g = 0; g < c.gpu_count(n); ++g) {
      const MigDevice* d = c.mig_device(n, g);
      if (!d) continue;
      const int64_t key = static_cast<int64_t>(n) * 1024 + g;
      if (d->layout.instances.empty()) slices_.push_back({key, {g, -1, -1}});
      for (const mig::Instance& i : d->layout.instances) slices_.push_back({key, {g, i.profile, i.start}});
    }
  }
}

MigReconfigured MigBefore::Of(const ClusterState& after, JobId replica) const {
  const Placement* p = after.FindAllocation(replica);
  if (!p) return {};
  MigReconfigured r;
  for (const NodeAssignment& a : p->assignments) {
    for (const MigSlice& m : a.mig) {
      const int64_t key = static_cast<int64_t>(a.node) * 1024 + m.gpu;
      auto it = std::lower_bound(slices_.begin(), slices_.end(), key, [](const auto& s, int64_t k) { return s.first < k; });
      if (it == slices_.end() || it->first != key) {
        r.mode_changed = r.created = true;
        continue;
      }
      bool found = false;
      for (; it != slices_.end() && it->first == key && !found; ++it) found = it->second == m;
      if (!found) r.created = true;
    }
  }
  return r;
}

bool PreemptedWithNotice(const QueuePass& pass, const Job& started) {
  return std::any_of(pass.preempted.begin(), pass.preempted.end(), [&](const PreemptedJob& p) { return p.by == &started && p.notice; });
}

void InferenceFleets::BeforePass(TenantQueue* queue, const ClusterState& cluster, bool tick) {
  if (queue) {
    if (tick) queue->set_preempt_notice([this](const Job& j) { return NoticeFor(j); });
    else queue->set_preempt_notice(nullptr);
  }
  mig_recorded_ = waiting() > 0;
  if (mig_recorded_) mig_before_.Take(cluster);
}

void InferenceFleets::Started(const Job& replica, int64_t now, const QueuePass& pass, const ClusterState& after) {
  Fleet& f = fleets_[fleet_of_.at(replica.id)];
  --f.waiting;
  const MigReconfigured mig = mig_recorded_ ? mig_before_.Of(after, replica.id) : MigReconfigured{};
  int64_t delay = options_.startup_s;
  if (PreemptedWithNotice(pass, replica)) delay += options_.checkpoint_write_s;
  if (replica.IsMig()) delay += mig.mode_changed ? options_.mig_mode_s : mig.created ? options_.mig_create_s : 0;
  // The fleet exists before the run: replicas placed at its start serve at once.
  f.running.push_back({replica.id, now == t0_ ? now : now + delay});
  gpus_ += f.gpus_per_replica;
}

void InferenceFleets::Preempted(JobId replica) {
  Fleet& f = fleets_[fleet_of_.at(replica)];
  auto it = std::find_if(f.running.begin(), f.running.end(), [&](const RunningReplica& r) { return r.id == replica; });
  if (it == f.running.end()) return;
  f.running.erase(it);
  ++f.waiting;
  gpus_ -= f.gpus_per_replica;
}

void InferenceFleets::EndMinute(bool measure) {
  const int64_t tick = next_tick();
  const int64_t offset = tick - t0_;
  for (Fleet& f : fleets_) {
    if (!measure) continue;
    int64_t ready = 0;
    for (const RunningReplica& r : f.running) ready += r.ready_at <= tick;
    ++f.minutes;
    const bool met = static_cast<double>(ready) * f.svc->goodput_rps >= inference::RateAt(f.svc->demand, offset) - 1e-9;
    f.met += met;
    const auto day = static_cast<size_t>(minute_ / 1440);
    if (f.missed_by_day.size() <= day) f.missed_by_day.resize(day + 1, 0);
    if (!met) ++f.missed_by_day[day];
    f.replica_minutes += static_cast<double>(f.running.size());
    f.max_replicas = std::max(f.max_replicas, static_cast<int>(f.running.size()));
  }
  ++minute_;
}

std::vector<double> InferenceFleets::PeakGpus() const {
  std::vector<double> out;
  for (const Fleet& f : fleets_) out.push_back(f.peak * f.gpus_per_replica);
  return out;
}

int64_t InferenceFleets::running() const {
  int64_t n = 0;
  for (const Fleet& f : fleets_) n += static_cast<int64_t>(f.running.size());
  return n;
}

int64_t InferenceFleets::waiting() const {
  int64_t w = 0;
  for (const Fleet& f : fleets_) w += f.waiting;
  return w;
}

std::vector<ServiceResult> InferenceFleets::Results() const {
  std::vector<ServiceResult> out;
  for (const Fleet& f : fleets_) {
    const double m = static_cast<double>(f.minutes);
    out.push_back({f.svc->name, f.minutes ? static_cast<double>(f.met) / m : 0, f.minutes, f.minutes ? f.replica_minutes / m : 0,
                   f.max_replicas, f.replica_minutes * f.gpus_per_replica / 60.0, f.missed_by_day});
  }
  return out;
}

}  // namespace tidal::sim
