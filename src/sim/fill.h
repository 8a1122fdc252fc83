// The fill experiment of the FGD paper (Weng et al., ATC'23), reproduced on
// tidal's scheduler: the pod list is topped up with pods sampled from it until
// the requested GPUs reach `tune` x the cluster's GPUs, the trace pods are
// shuffled by the seed (top-up pods follow, in sampling order — as the
// reference simulator does), then pods arrive one at a time, nothing departs,
// and a pod that does not fit is dropped. After every arrival we record the
// allocated and arrived GPU capacity and the cluster's fragmentation; the
// curves are then bucketed per 1% of arrived demand exactly as the paper's
// analysis scripts do.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "workload/job.h"

namespace tidal::sim {

inline constexpr int kFillBuckets = 131;  // 0% .. 130% of cluster GPUs arrived
using Curve = std::array<std::optional<double>, kFillBuckets>;

struct FillOptions {
  std::string policy = "fgd";
  double tune = 1.3;
  uint64_t seed = 42;
};

struct FillSample {
  int64_t arrived_gpu_milli = 0;
  int64_t used_gpu_milli = 0;
  double frag_milli = 0;      // rounded to 0.01 as the reference logs it
  double frag_ratio_pct = 0;  // rounded to 0.01
};

struct FillResult {
  std::string policy;
  std::string label;  // "06-FGD"
  double tune = 0;
  uint64_t seed = 0;
  int64_t total_gpus = 0;
  int64_t trace_pods = 0;
  int64_t arrived_pods = 0;  // trace + top-up
  int64_t placed_pods = 0;
  int64_t failed_pods = 0;
  std::vector<FillSample> samples;  // one per arrival
  Curve alloc_pct;       // GPU allocation rate (%), analysis_allo_discrete
  Curve frag_ratio_pct;  // fragmented share of idle GPU (%), analysis_frag_ratio_discrete
  Curve frag_pct;        // fragmented GPU as % of cluster GPUs, analysis_frag_discrete
  double seconds = 0;    // wall time of the replay
  // Time spent in each plugin over the run (filters are charged to the first
  // filter), so a slow policy shows where its time goes.
  std::vector<std::pair<std::string, double>> plugin_seconds;
};

// The arrival sequence for one seed: trace pods shuffled, then the top-up.
// Ids are reassigned to arrival order.
std::vector<Job> BuildFillWorkload(const std::vector<Job>& trace, int64_t cluster_gpu_milli, double tune,
                                   uint64_t seed);

Result<FillResult> RunFill(const std::vector<NodeSpec>& nodes, const std::vector<Job>& trace,
                           const FillOptions& options);

// Buckets samples into the 0..130% curves (exposed for tests).
void BucketCurves(FillResult& r);

// Rounds half to even at `digits` decimals, as Python's round() does on the
// float values the reference analysis sees.
double RoundHalfEven(double x, int digits);

}  // namespace tidal::sim
