// "When will it start?": a waiting job's start time estimated by running
// the queue forward from now, on a fork of the replay (replay.h) — the same
// scheduler, queue and event order as the replay itself, not a simplified
// model of them. A forward run takes the state after the last pass (cluster
// allocations, running jobs, the waiting queue, tenant usage and fair-share
// meters, the scheduler's random state), admits no new arrivals, and runs
// until the job starts.
//
// What the scheduler does not know is redrawn per sample: every live job's
// true run time. The queues already plan with the estimates (Job::
// estimate_s); a forward run must also let jobs *end* somewhere, and the
// truth is not known. Under the f-model (queue_sim.h: estimate E =
// ceil(D x u), u ~ U[1, F], D the true base run time), a sample draws
//
//     D' = floor(E / u'),   u' ~ U[1, min(F, E / L)]
//
// i.e. u' is the f-model's factor, uniform as the model draws it (no prior
// on D beyond that), conditioned on what the queue has seen: D' >= L, where
// L = WorkQueue::RunTimeAtLeast — 0 for a job that never ran; the base
// seconds done plus one for a running job (it has not ended yet) or a
// preempted one (it had work left). Truncating u' to [1, E / L] is exact
// conditioning on D' >= L (floor(E/u') >= L iff u' <= E/L for integer L).
// D' never exceeds E (an estimate is never short under the f-model); if
// E < L, which the f-model cannot produce but for a zero-length job, D' = E.
// A running job's current run then ends at start + its new remaining work
// stretched as its placement stretched the old, which is after now.
//
// With exact estimates (F = 1, or `exact`) D' = D: one sample is the whole
// distribution, and with no arrivals after now the forward run is the
// replay itself, so the estimate is the actual start (tested).
//
// Cost: one fork (a copy of the cluster state, the queue and the live jobs,
// and a fresh placer profile) plus the passes until the job starts, per
// sample: K samples cost about K x (the job's wait / the replay's span) of a
// replay, plus K copies of the queue.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "sim/replay.h"

namespace tidal::sim {

// The f-model factor F of a --estimate value: 1 for `exact`.
Result<double> EstimateFactor(std::string_view model);

// D' for an estimate E, the model's F, the lower bound L and v in [0, 1)
// (u' = 1 + (min(F, E/L) - 1) v); see the header.
int64_t DrawRunTime(int64_t estimate_s, double f, int64_t at_least_s, double v);

struct StartEstimateOptions {
  double f = 1;          // the estimate model's F (1: exact, one sample)
  int samples = 20;      // K
  uint64_t seed = 0;     // the run's seed; each job's draws are seeded by it and the job id
};

struct StartEstimate {
  int64_t p50_s = -1, p90_s = -1;  // sampled start times (replay clock), -1: none
  int samples = 0;                 // forward runs
  std::vector<int64_t> starts;     // per sample, sorted; -1: it never started (rejected)
};

// The job (waiting in `replay`) starts when? Forward runs of forks of the
// replay's current state, K samples (one with exact estimates).
Result<StartEstimate> EstimateStart(const Replay& replay, JobId job, const StartEstimateOptions& options);

// One forward run: forks `replay` with `jobs` (copies of its live jobs, run
// times as given) and runs it until `job` starts; its start, or -1 if it
// is rejected or nothing is left to run.
Result<int64_t> ForwardStart(const Replay& replay, JobId job, std::vector<Job> jobs);

// A what-if (the daemon's POST /v1/simulate): forks `replay` with `jobs`
// (copies of its live jobs, run times as given), lets `arrivals` arrive at
// the replay's now, and runs forward with no other arrivals until every
// waiting job has started or nothing is left to run. Returns the first
// start of every job that started in the fork (arrivals included); jobs
// that never start are absent.
// `change`, when given, is applied to the fork before its first pass (a
// what-if's drained nodes or quota change).
Result<std::map<JobId, int64_t>> ForwardStarts(const Replay& replay, std::vector<Job> jobs, std::vector<Job> arrivals,
                                               const std::function<Status(Replay&)>& change = {});

}  // namespace tidal::sim
