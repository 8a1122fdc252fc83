// Metrics of queueing runs, as DESIGN.md defines them: distribution summaries
// (mean, p50, p95, p99) and the stranded GPU capacity of a cluster given the
// shapes of the jobs that wait.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "cluster/cluster_state.h"
#include "scheduler/queue.h"

namespace tidal::sim {

struct Summary {
  int64_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p95 = 0;
  double p99 = 0;
};

// Percentile q in [0, 100] of sorted values by linear interpolation between
// the closest ranks (NumPy's default "linear" method); 0 for no values.
double Percentile(const std::vector<int64_t>& sorted, double q);
// Sorts `values` and summarises them.
Summary Summarize(std::vector<int64_t> values);

// The measured error of start-time estimates on a replay (sim queue
// --start-estimates N, sim/start_estimate.h; JSON start_estimate_error_s).
struct EstimatedStart {
  int64_t p50_s = 0, p90_s = 0;  // the estimate, given after the job's arrival pass
  int64_t actual_s = 0;          // when it really started
};
struct StartEstimateError {
  int64_t sampled = 0;          // jobs sampled (those the queue accepted)
  int64_t started_at_once = 0;  // of them, started in their arrival pass: no estimate needed
  int64_t samples = 0;          // estimates compared: the sampled jobs that had to wait
  // |P50 estimate - actual start| over the compared jobs, seconds.
  double p50 = 0, p90 = 0, mean = 0;
  double bias_mean = 0;     // mean of (P50 estimate - actual): > 0 = estimates too late
  double coverage_p90 = 0;  // share of the compared jobs whose actual start <= their P90
};
StartEstimateError SummarizeStartEstimates(const std::vector<EstimatedStart>& estimates, int64_t sampled,
                                           int64_t started_at_once);

// Idle GPU capacity that no waiting job can use, in milli-GPU.
//
// "Usable" is decided per device. A waiting shape can use node n if
//  * it is a single-node request that passes the node filters on n now
//    (CPU, memory, GPU model, enough devices with enough free milli-GPU):
//    then it can use each device of n whose free milli-GPU >= its per-device
//    request; or
//  * it is a gang of whole GPUs (may span nodes) that could be placed now
//    (the whole free GPUs on nodes of models it allows add up to its size)
//    and n has such a model: it can use every fully free device of n (the
//    gang placer takes whole free GPUs from any such node).
// A device's idle milli-GPU is usable if some waiting shape can use it;
// the rest of the idle capacity is stranded: it sits idle while jobs wait
// because no waiting job fits it. CPU-only waiting jobs use no GPU. Only
// distinct shapes are considered, and a node is recomputed only when its
// version, the set of waiting shapes or the set of gangs that fit changed.
// `shapes` must stay as they are (and alive) while `shapes_version` holds:
// the tracker reads them through pointers between calls.
class StrandedTracker {
 public:
  int64_t Compute(const ClusterState& c, const std::map<JobShape, WaitingShape>& shapes, uint64_t shapes_version);

 private:
  // A waiting shape that asks for GPUs, as NodeStranded reads it.
  struct Usable {
    int32_t gpu_milli = 0;
    const PodRequest* pod = nullptr;
    bool gang_fits = false;
  };
  int64_t NodeStranded(const ClusterState& c, NodeId n) const;

  std::vector<uint8_t> gang_fits_, last_gang_fits_;  // per waiting shape, in map order
  std::vector<Usable> by_milli_;                     // the GPU shapes, fewest milli-GPU first
  // Whole free GPUs per model (index model + 1), kept from the nodes that
  // changed: each node's count as last read.
  std::vector<int64_t> whole_by_model_;
  std::vector<int32_t> whole_counted_;
  int64_t whole_total_ = 0;

  // Each node's version when last read (kUnread: never; a node's version
  // counts its changes from 0, so it never reaches this).
  static constexpr uint64_t kUnread = ~uint64_t{0};
  std::vector<uint64_t> version_;
  std::vector<NodeId> changed_;    // this call's nodes whose version moved
  std::vector<int64_t> stranded_;
  uint64_t instance_ = 0;
  const std::map<JobShape, WaitingShape>* shapes_ = nullptr;
  uint64_t shapes_version_ = 0;
  bool have_shapes_version_ = false;
  int64_t total_ = 0;
};

}  // namespace tidal::sim
