// GPU fragmentation as defined by FGD (Weng et al., ATC'23, "Beware of
// Fragmentation"), matching the reference simulator's pkg/utils/frag.go.
//
// A workload is summarised by its *typical pods*: the most frequent request
// shapes (CPU, milli-GPU per device, device count, allowed models) that
// together make up `popularity_threshold` of all pods, each with its share.
// For one node and one typical pod, the node's idle GPU capacity counts as
// fragmented when the pod cannot use it: all of it if the pod cannot fit
// (lack of GPU, CPU, a model mismatch, or the pod needs no GPU at all), or —
// if it fits — the devices whose leftover is below the pod's per-device
// request. The node's fragmentation is the popularity-weighted sum; the
// cluster's is the sum over nodes. Memory is not part of the measure.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/cluster_state.h"
#include "workload/job.h"

namespace tidal {

struct TypicalPod {
  int64_t cpu_milli = 0;
  int32_t gpu_milli = 0;  // per device
  int32_t num_gpu = 0;
  std::string gpu_spec;    // models joined by '|' ("" = any), as in the trace
  ResolvedGpuSpec resolved;
  double popularity = 0;  // share among typical pods; they sum to 1
};

struct TypicalPodOptions {
  double popularity_threshold = 0.95;  // FGD experiments: 95%
  bool include_cpu_pods = true;        // FGD experiments: true
};

// Builds typical pods from a workload exactly as FGD's GetTypicalPods: count
// each distinct shape, sort by count (ties broken by the larger shape first),
// take the smallest prefix whose count reaches the threshold, renormalise.
Result<std::vector<TypicalPod>> BuildTypicalPods(const std::vector<Job>& jobs,
                                                 const GpuModelRegistry& models,
                                                 TypicalPodOptions options = {});

// The free resources of one node that the measure depends on.
struct NodeFreeState {
  int64_t cpu_left = 0;
  GpuModelId model = kNoGpuModel;
  int32_t gpu_count = 0;
  std::array<int32_t, 16> gpu_left{};  // first gpu_count entries are used

  static constexpr int kMaxGpus = 16;
  int64_t TotalGpuLeft() const;
  static NodeFreeState FromCluster(const ClusterState& c, NodeId n);
};

// Computes and memoises node fragmentation for one set of typical pods. Node
// states recur constantly in a fill (idle nodes, common packings), so results
// are cached by the node's sorted free state.
class FragmentationModel {
 public:
  explicit FragmentationModel(std::vector<TypicalPod> typical);

  const std::vector<TypicalPod>& typical_pods() const { return typical_; }

  // Fragmented idle milli-GPU on a node in this state (FGD's
  // FragAmountSumExceptQ3). Idle milli-GPU is TotalGpuLeft().
  double NodeFragMilli(const NodeFreeState& s);
  size_t memo_size() const { return memo_.size(); }

 private:
  double Compute(const NodeFreeState& s) const;

  struct Key {
    int64_t cpu_left;
    int32_t model_and_count;
    std::array<int16_t, NodeFreeState::kMaxGpus> sorted;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::vector<TypicalPod> typical_;
  std::unordered_map<Key, double, KeyHash> memo_;
};

// The state of a node after taking `cpu` and, from each device i, take[i].
NodeFreeState Subtract(const NodeFreeState& s, int64_t cpu, std::span<const int32_t> take);

}  // namespace tidal
