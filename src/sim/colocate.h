// The co-location experiment (`tidal sim colocate`, docs/colocate.md): one
// fleet serves inference services whose demand follows real diurnal traces
// and runs a training workload on what they leave, through tidal's one
// scheduler (Replay + TenantQueue, the MIG placers of plugins/mig). Four
// policies on the same input:
//
//  static    inference fleet sized for each service's peak, all week; training
//            gets the rest (replicas start before any training job).
//  lyra      a fixed day/night schedule (Lyra-like loaning): during the day
//            hours every service runs its day peak, at night its night peak;
//            training borrows the difference and is preempted at once when
//            the day begins.
//  reactive  autoscaling on the observed demand only (no forecast), greedy
//            first-fit MIG placement (HAMi/nos-like), immediate preemption.
//  tidal     the seasonal forecast with a lead time, fragmentation-aware MIG
//            packing, and preemption at a checkpoint: a scale-out the forecast
//            asked for gives its victims notice (they write a checkpoint and
//            lose no work); a surprise (observed need above the forecast's)
//            preempts at once — the ladder's last step.
//
// Time: one-minute ticks (the traces' resolution) for inference; training
// arrivals and finishes at their own seconds, with one scheduling pass per
// batch of events as in the queue experiment. Inference replicas are jobs of
// priority 1000 (training 0) in one pool with priority preemption: the only
// way inference takes a GPU from training is the scheduler's preemption.
// A replica serves from its start + startup (+ the MIG reconfiguration it
// needed, + the victims' checkpoint write when it preempted with notice).
//
// Metrics: SLO minutes met per service (ready replicas x goodput >= demand);
// training GPU-hours delivered (training GPU-time allocated minus the GPU-time
// lost to preemption); training queueing delay (first start - submit, over
// the jobs that started); preemptions per day and lost GPU-hours; MIG
// reconfigurations per day (instances created + destroyed + mode changes);
// allocation rate (GPU capacity held by jobs, MIG instances at their compute
// share, time-averaged).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "inference/service.h"
#include "sim/inference_fleets.h"
#include "topology/topology.h"
#include "workload/job.h"

namespace tidal::sim {

enum class ColocatePolicy { kStatic, kLyra, kReactive, kTidal };
Result<ColocatePolicy> ParseColocatePolicy(std::string_view name);
std::string_view ColocatePolicyName(ColocatePolicy p);

struct ColocateConfig {
  std::string name = "colocate";
  std::vector<NodeSpec> nodes;
  std::shared_ptr<const topo::Topology> topology;  // may be null
  std::vector<inference::Service> services;
  std::vector<Job> training;  // arrival order; submit times relative to any origin
  double load = 0.8;          // training offered load vs the fleet's GPUs (0: as recorded)
  // The jobs arriving in the first backlog_s (after compression) are all
  // waiting at the start: the fleet starts busy, as a real one is.
  int64_t backlog_s = 0;
  // Training demand with no gaps: at a minute tick at which no training job
  // waits, the rest of the trace moves earlier so that its next arrival is
  // now (the organisation always has training to run; the job sequence and
  // its spacing are the trace's, only the empty stretches are cut).
  bool skip_gaps = false;
  int64_t days = 7;
  int64_t checkpoint_interval_s = 1800;
  int64_t restart_penalty_s = 60;
  int64_t checkpoint_write_s = 120;  // a checkpoint written on notice
  int64_t startup_s = 120;           // a new replica loads its model
  int64_t mig_create_s = 15;         // a new MIG instance
  int64_t mig_mode_s = 60;           // a GPU entering MIG mode (reset)
  int64_t lead_s = 1800;             // tidal's forecast lead
  int64_t cooldown_s = 1800;         // scale-in after this long below
  double error_quantile = 0.99;      // tidal: forecast-error margin (inference::AutoscalerConfig)
  int64_t error_window_s = 86400;
  int64_t error_tod_s = 0;
  bool error_of_window_max = false;
  double error_margin_max = std::numeric_limits<double>::infinity();
  int day_start_hour = 8, day_end_hour = 22;  // lyra's day (hours after each trace's midnight)
  std::vector<ColocatePolicy> policies = {ColocatePolicy::kStatic, ColocatePolicy::kLyra, ColocatePolicy::kReactive,
                                          ColocatePolicy::kTidal};
  uint64_t seed = 1;
};

// Reads a colocate config file (docs/colocate.md); paths in it are relative
// to the file.
Result<ColocateConfig> ReadColocateConfig(const std::string& path);

// Per hour: GPUs in MIG mode and held instances per profile name.
struct MigHour {
  int64_t hour = 0;
  int64_t mig_gpus = 0;
  std::map<std::string, int64_t> instances;
};

struct ColocateRow {
  std::string policy;
  std::vector<ServiceResult> services;
  double training_gpu_hours = 0;
  double training_queue_delay_s = 0;  // mean over started jobs
  int64_t training_started = 0, training_waiting_at_end = 0;
  int64_t preemptions = 0, preemptions_with_notice = 0;
  double preemptions_per_day = 0;
  double lost_gpu_hours = 0;
  double mig_reconfigs_per_day = 0;
  double allocation_rate = 0;
  double inference_gpu_hours = 0;
  double mig_idle_gpu_hours = 0;  // compute slices of GPUs in MIG mode that no job holds
  double idle_gpu_hours = 0;      // GPU capacity no job holds (MIG slices included)
  // The part of idle_gpu_hours while no training job waited: capacity the
  // workload had nothing for (see ColocateConfig::skip_gaps).
  double idle_no_training_waiting_gpu_hours = 0;
  std::vector<MigHour> mig_hours;
};

struct ColocateResult {
  std::string name;
  int64_t gpus = 0;
  int64_t days = 0;
  double offered_load = 0;
  // The trace's jobs within the window (gaps skipped: the whole trace, as
  // arrivals move earlier; a row's started + waiting_at_end arrived).
  int64_t training_jobs = 0;
  std::vector<ColocateRow> rows;
};

struct ColocateProgress {
  std::string policy;
  int64_t minute = 0, minutes = 0;
};

Result<ColocateResult> RunColocate(const ColocateConfig& config, const std::function<void(const ColocateProgress&)>& progress = {});
nlohmann::json ColocateJson(const ColocateResult& r);
// Per policy against static: SLO >= 99.9% of minutes for every service,
// training GPU-hours >= 1.25 x static's, lost GPU-hours < 1% of training's.
nlohmann::json ColocateTargets(const ColocateResult& r);
std::string ColocateTable(const ColocateResult& r);
std::string ColocateHtml(const ColocateResult& r);

}  // namespace tidal::sim
