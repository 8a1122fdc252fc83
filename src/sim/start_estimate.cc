#include "sim/start_estimate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/rng.h"
#include "sim/metrics.h"

namespace tidal::sim {

Result<double> EstimateFactor(std::string_view model) {
  if (model == "exact") return 1.0;
  double f = 0;
  if (model.starts_with("f-model:")) {
    try {
      f = std::stod(std::string(model.substr(8)));
    } catch (...) {
      f = 0;
    }
  }
  if (!(f >= 1 && f <= 1e4)) {
    return MakeError(ErrorCode::kInvalidArgument, "--estimate '{}': give exact or f-model:F with F in [1, 10000] (e.g. f-model:10)",
                     model);
  }
  return f;
}

int64_t DrawRunTime(int64_t estimate_s, double f, int64_t at_least_s, double v) {
  if (estimate_s < at_least_s) return estimate_s;  // only a zero-length job: it ends now
  const double e = static_cast<double>(estimate_s);
  const double hi = at_least_s > 0 ? std::min(f, e / static_cast<double>(at_least_s)) : f;
  const double u = 1 + (std::max(1.0, hi) - 1) * v;
  const auto d = static_cast<int64_t>(std::floor(e / u));
  return std::clamp(d, at_least_s, estimate_s);
}

Result<int64_t> ForwardStart(const Replay& replay, JobId job, std::vector<Job> jobs) {
  TIDAL_ASSIGN_OR_RETURN(std::unique_ptr<Replay> fork, replay.Fork(std::move(jobs)));
  std::vector<const Job*> finished;
  for (;;) {
    const int64_t now = fork->NextBatch(kNoReservation);  // no arrivals
    if (now == kNoReservation) return -1;
    finished.clear();
    TIDAL_RETURN_IF_ERROR(fork->FinishesAt(now, finished));
    TIDAL_ASSIGN_OR_RETURN(QueuePass pass, fork->Pass(now));
    for (const Job* j : pass.started)
      if (j->id == job) return now;
    for (const UnresolvableJob& u : pass.unresolvable)
      if (u.job->id == job) return -1;
  }
}

Result<std::map<JobId, int64_t>> ForwardStarts(const Replay& replay, std::vector<Job> jobs, std::vector<Job> arrivals,
                                               const std::function<Status(Replay&)>& change) {
  TIDAL_ASSIGN_OR_RETURN(std::unique_ptr<Replay> fork, replay.Fork(std::move(jobs)));
  if (change) TIDAL_RETURN_IF_ERROR(change(*fork));
  std::map<JobId, int64_t> starts;
  std::vector<UnresolvableJob> rejected;
  for (const Job& a : arrivals) {
    if (fork->live().contains(a.id)) return MakeError(ErrorCode::kInvalidArgument, "a what-if job reuses the live job id {}", a.id);
    TIDAL_RETURN_IF_ERROR(fork->Arrive(a, rejected));  // `arrivals` outlives the fork's run
  }
  std::vector<const Job*> finished;
  int64_t now = fork->now();
  for (;;) {
    TIDAL_ASSIGN_OR_RETURN(QueuePass pass, fork->Pass(now));
    for (const Job* j : pass.started) starts.try_emplace(j->id, now);
    if (fork->queue().waiting() == 0) break;
    now = fork->NextBatch(kNoReservation);
    if (now == kNoReservation) break;
    finished.clear();
    TIDAL_RETURN_IF_ERROR(fork->FinishesAt(now, finished));
  }
  return starts;
}

Result<StartEstimate> EstimateStart(const Replay& replay, JobId job, const StartEstimateOptions& options) {
  const bool exact = options.f <= 1;
  const int k = exact ? 1 : std::max(1, options.samples);
  // What the queue knows of each live job, in id order (the draw order).
  std::vector<std::pair<const Job*, int64_t>> known;
  known.reserve(replay.live().size());
  for (const auto& [id, j] : replay.live()) known.push_back({j, exact ? 0 : replay.queue().RunTimeAtLeast(id, replay.now())});
  Rng rng((options.seed ^ 0x5deece66dULL) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(job));
  StartEstimate out;
  std::vector<int64_t> started;
  for (int s = 0; s < k; ++s) {
    std::vector<Job> jobs;
    jobs.reserve(known.size());
    for (const auto& [j, at_least] : known) {
      jobs.push_back(*j);
      if (!exact) jobs.back().duration_s = DrawRunTime(j->PlannedDuration(), options.f, at_least, rng.UniformDouble());
    }
    TIDAL_ASSIGN_OR_RETURN(int64_t start, ForwardStart(replay, job, std::move(jobs)));
    out.starts.push_back(start);
    if (start >= 0) started.push_back(start);
  }
  out.samples = k;
  std::sort(out.starts.begin(), out.starts.end());
  std::sort(started.begin(), started.end());
  if (!started.empty()) {
    out.p50_s = std::llround(Percentile(started, 50));
    out.p90_s = std::llround(Percentile(started, 90));
  }
  return out;
}

}  // namespace tidal::sim
