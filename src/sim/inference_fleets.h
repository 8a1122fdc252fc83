// Inference services as replicas in a replay: the one implementation the
// co-location experiment (sim/colocate.h) and the organisation experiment
// (sim/org.h, through QueueSimOptions::inference) scale their services with.
//
// Every minute (the demand traces' resolution) each service gets a replica
// target — its peak all the time, a day/night schedule, the observed demand,
// or the seasonal forecast with a lead time — and the fleets submit new
// replica jobs to the replay (they wait, or preempt, like any job) or end
// running ones (scale-in). A replica serves from its start + its model's
// startup (+ a MIG reconfiguration, + the victims' checkpoint write when it
// preempted with notice). A minute's SLO is met when the serving replicas x
// goodput cover its demand.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "inference/forecast.h"
#include "inference/service.h"
#include "scheduler/queue.h"
#include "workload/job.h"

namespace tidal {
class TenantQueue;
}  // namespace tidal

namespace YAML {
class Node;
}  // namespace YAML

namespace tidal::sim {

class Replay;
class ScalingTargets;

enum class ScalingMode {
  kPeak,      // each service's peak over the horizon, all the time (a fleet sized for its peak)
  kDayNight,  // the day's peak in the day hours, the night's at night (Lyra-like loaning)
  kReactive,  // the observed demand of the minute that just ended
  kForecast,  // the seasonal forecast with a lead time and an error margin
};

struct InferenceFleetsOptions {
  ScalingMode mode = ScalingMode::kForecast;
  int64_t horizon_s = 7 * 86400;  // kPeak / kDayNight size over [0, horizon)
  int64_t startup_s = 120;        // a new replica loads its model
  int64_t checkpoint_write_s = 120;
  int64_t mig_create_s = 15, mig_mode_s = 60;
  int64_t lead_s = 1800, cooldown_s = 1800;  // kForecast's lead; scale-in after this long below
  double error_quantile = 0.99;              // kForecast (inference::AutoscalerConfig)
  int64_t error_window_s = 86400, error_tod_s = 0;
  bool error_of_window_max = false;
  double error_margin_max = std::numeric_limits<double>::infinity();
  int day_start_hour = 8, day_end_hour = 22;  // kDayNight's day
  // Scale-in ends the replica on the emptiest GPU / node (ChooseScaleInVictim).
  bool emptiest_first = true;
  // A scale-out the forecast asked for preempts with notice (the victims
  // checkpoint first and lose no work).
  bool notice = true;
  // Each service's replicas belong to this trace group (tenant); "" = "inference".
  std::vector<std::string> groups;
  // kReactive / kForecast: the targets to follow, shared by replays of the
  // same services and knobs (null: the fleets make their own).
  std::shared_ptr<ScalingTargets> targets;
};

// The replica targets of the autoscaled modes (kReactive, kForecast), minute
// by minute: a pure function of the services' demand and the knobs (the
// autoscaler sees the demand, never the cluster), so replays of the same
// services with the same knobs — the org experiment's sides — share one and
// each service's autoscaler runs once. Minute m is the target for the minute
// starting m minutes after the replay's start, from the demand of the
// minutes before it. Extended as far as a replay asks; thread-safe.
class ScalingTargets {
 public:
  struct Minute {
    int target = 0;
    bool forecast_driven = false;  // the forecast asked for more than the observed demand
  };
  static Result<std::shared_ptr<ScalingTargets>> Make(const std::vector<inference::Service>& services, const InferenceFleetsOptions& o);
  Result<Minute> At(size_t service, int64_t minute);
  // Whether these are the targets of `services` under `o` (same demand,
  // goodput and autoscaler knobs).
  bool Matches(const std::vector<inference::Service>& services, const InferenceFleetsOptions& o) const;

 private:
  ScalingTargets() = default;
  std::mutex mu_;
  std::vector<inference::Service> services_;
  InferenceFleetsOptions options_;
  std::vector<inference::Autoscaler> scalers_;
  std::vector<std::vector<Minute>> minutes_;
};

// Reads the knobs of a config's `replica: {startup_s, mig_create_s,
// mig_mode_s}` and `autoscaler: {lead_s, cooldown_s, error_quantile,
// error_window_s, error_tod_s, error_of, error_margin_max}` maps (either may
// be null) into `o`; errors name path:line and the key (sim/colocate_config.cc).
Status ReadFleetKnobs(const YAML::Node& replica, const YAML::Node& autoscaler, const std::string& path, InferenceFleetsOptions& o);

struct ServiceResult {
  std::string name;
  double slo_minutes_met = 0;  // share of minutes
  int64_t minutes = 0;
  double mean_replicas = 0;
  int max_replicas = 0;
  double gpu_hours = 0;        // replicas x their GPU cost, over the run
  std::vector<int64_t> missed_by_day;  // minutes without enough SLO capacity, per day
};

// A running replica: its job, when it serves from, and where it runs (the
// node of its placement and, for a MIG replica, the GPU; node -1: not
// looked up yet — replicas never move, so once is enough).
struct RunningReplica {
  JobId id = -1;
  int64_t ready_at = 0;
  NodeId node = -1;
  int32_t mig_gpu = -1;
};

// Which replica a scale-in ends, an index into `running` (start order). Like
// Kubernetes' ReplicaSet scale-down, one not serving yet (ready_at > now)
// goes first, then the newest; with emptiest_first (tidal), among serving
// ones the replica whose GPU holds the fewest busy MIG compute slices, or
// whose node has the most free whole GPUs, so that GPUs drain and return
// to training whole. Ties go to the newest. Replicas not located yet are
// looked up in the cluster.
size_t ChooseScaleInVictim(const std::vector<RunningReplica>& running, int64_t now, const ClusterState& cluster, bool emptiest_first);

// The first k victims of repeated ChooseScaleInVictim calls, each removing
// its victim from `running`, in that order — in one pass (the cluster does
// not change between them: an ended replica frees its GPU only later).
std::vector<size_t> ChooseScaleInVictims(const std::vector<RunningReplica>& running, int64_t now, const ClusterState& cluster,
                                         bool emptiest_first, size_t k);

// The replica job of a service on this cluster: a TP group of whole GPUs on
// one node, one GPU, or a MIG instance of the fleet's GPU model.
Result<Job> ReplicaShape(const inference::Service& s, const ClusterState& cluster, int64_t horizon_s);

// What a pass reconfigured for one replica (MigBefore::Of).
struct MigReconfigured {
  bool created = false;       // its MIG instance did not exist before
  bool mode_changed = false;  // its GPU was not in MIG mode before
};

// Whether a pass's evictions made room for `started` with notice.
bool PreemptedWithNotice(const QueuePass& pass, const Job& started);

// The MIG instances of a cluster before a pass, to tell per started MIG
// replica what the pass reconfigured for it: its instance was created (it
// was not there before), or its GPU entered MIG mode (it was not in MIG mode
// before). Only the replica's own GPU counts, not the pass's other work.
class MigBefore {
 public:
  MigBefore() = default;
  explicit MigBefore(const ClusterState& c) { Take(c); }
  // Records c's MIG instances now (reusing the buffer: a driver keeps one
  // and takes it before each pass a replica may start in).
  void Take(const ClusterState& c);
  // For `replica`, bound in `after` (the same cluster after the pass); both
  // false for a replica that holds no MIG instance.
  MigReconfigured Of(const ClusterState& after, JobId replica) const;

 private:
  // (node * 1024 + gpu, instance) for every device in MIG mode, in that
  // order; a device with no instance has one entry with profile -1.
  std::vector<std::pair<int64_t, MigSlice>> slices_;
  // The cluster and its MIG layout version the record was taken of: a Take
  // of an unchanged layout keeps it (most passes change none).
  bool taken_ = false;
  uint64_t taken_cluster_ = 0, taken_version_ = 0;
};

class InferenceFleets {
 public:
  // Replica ids start here; the workload's own ids must stay below.
  static constexpr JobId kReplicaIdBase = 1'000'000'000;
  static constexpr int32_t kPriority = 1000;

  // `services` must outlive the fleets. Minute 0 starts at t0.
  static Result<InferenceFleets> Make(const std::vector<inference::Service>& services, const ClusterState& cluster,
                                      InferenceFleetsOptions options, int64_t t0);

  // The start of the minute the next Scale is for.
  int64_t next_tick() const { return t0_ + minute_ * 60; }
  // The replica targets for the minute starting at next_tick(): new
  // replicas arrive in the replay (appended to `arrived`), scaled-in ones
  // end now (their finishes come in the replay's FinishesAt(tick)). Whether
  // any replica arrived or ended.
  Result<bool> Scale(Replay& replay, std::vector<const Job*>& arrived);
  // The ladder, per replica: a scale-out the forecast asked for (its
  // service's target at the last Scale came from the forecast) gives the
  // jobs it preempts notice — the seconds of their checkpoint write; one
  // the observed demand forced (a surprise), and any job not a replica,
  // -1: preempt at once (TenantQueue::set_preempt_notice).
  int64_t NoticeFor(const Job& preemptor) const;
  bool Owns(JobId id) const { return fleet_of_.contains(id); }
  // Before a replay pass: on a minute tick's pass `queue` (may be null)
  // gives notice per replica (NoticeFor), on others none; and when a
  // replica may start in the pass the MIG instances are recorded for
  // Started.
  void BeforePass(TenantQueue* queue, const ClusterState& cluster, bool tick);
  // A replica the pass started at `now`. What the pass reconfigured for it
  // (its MIG instance created, its GPU put into MIG mode) and the victims'
  // checkpoint write, when it preempted with notice to make its room, each
  // add their delay before it serves.
  void Started(const Job& replica, int64_t now, const QueuePass& pass, const ClusterState& after);
  // A running replica was preempted: it waits again.
  void Preempted(JobId replica);
  // The SLO of the minute starting at next_tick() (replicas serving by its
  // start), and on to the next minute. `measure`: false leaves the minute
  // out of the results (outside the measurement window).
  void EndMinute(bool measure = true);

  // Each service's peak over the horizon, in GPUs (replicas x their cost).
  std::vector<double> PeakGpus() const;
  double gpus() const { return gpus_; }  // GPUs the running replicas hold (MIG at its compute share)
  int64_t waiting() const;  // replicas submitted, not running
  int64_t running() const;
  std::vector<ServiceResult> Results() const;

 private:
  struct Fleet {
    const inference::Service* svc = nullptr;
    Job shape;
    double gpus_per_replica = 1;
    std::vector<RunningReplica> running;  // in start order
    int64_t waiting = 0;
    bool scaled = false;  // follows options_.targets
    bool forecast_driven = false;  // its target at the last Scale came from the forecast
    int fixed_day = 0, fixed_night = 0, peak = 0;
    int64_t met = 0, minutes = 0;
    std::vector<int64_t> missed_by_day;
    double replica_minutes = 0;
    int max_replicas = 0;
  };
  InferenceFleets() = default;
  bool IsDay(int64_t offset_s) const;

  InferenceFleetsOptions options_;
  std::vector<Fleet> fleets_;
  std::deque<Job> replicas_;  // the replay holds pointers: a deque keeps them valid
  std::unordered_map<JobId, size_t> fleet_of_;
  int64_t t0_ = 0, minute_ = 0;
  double gpus_ = 0;
  MigBefore mig_before_;      // BeforePass's record, when mig_recorded_
  bool mig_recorded_ = false;
};

}  // namespace tidal::sim
