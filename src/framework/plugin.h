// Scheduler framework: the extension points a policy implements, after the
// Kubernetes scheduling framework (PreFilter/Filter/PreScore/Score/Normalize/
// Reserve) plus device selection and whole-gang placement.
//
// A policy implements only the points it needs. Plugins read the cluster
// through `const ClusterState&` handed to them in the CycleContext, never a
// global, so the same plugin can score a hypothetical ("what if these victims
// were gone?") copy. Plugins keep caches keyed by node version; nothing else
// is shared between them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "workload/job.h"

namespace tidal {

inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kMinNodeScore = 0;

// A job's request as plugins see it: the job plus its GPU models resolved
// against this cluster's registry.
struct PodRequest {
  const Job* job = nullptr;
  ResolvedGpuSpec gpu_spec;
  std::string gpu_spec_key;  // models joined by '|', as written in the trace

  int64_t cpu_milli() const { return job->cpu_milli; }
  int64_t memory_mib() const { return job->memory_mib; }
  int32_t num_gpu() const { return job->num_gpu; }
  int32_t gpu_milli() const { return job->gpu_milli; }
  bool IsGpuSharing() const { return job->IsGpuSharing(); }
};

// Resolves a job's gpu_spec against `models`; an unknown model is an error
// naming the job, because such a job could never be placed.
Result<PodRequest> ResolveRequest(const Job& job, const GpuModelRegistry& models);

// How much slower a job runs on a placement than on a compact one of the
// same size: predicted step time on `placement` / on the most compact
// placement the topology allows (1 = no penalty). nullopt when the job has no
// performance model (a single GPU, an unknown workload). Injected by the
// driver (the simulator's is planner-backed, sim/placement_cost.h), so
// placers can score candidate placements without depending on the planner.
class PlacementCost {
 public:
  virtual ~PlacementCost() = default;
  virtual std::optional<double> Slowdown(const ClusterState& cluster, const Job& job, const Placement& placement) = 0;
};

// Everything a plugin may read during one scheduling cycle.
struct CycleContext {
  const ClusterState& cluster;
  Rng& rng;  // the cycle's only source of randomness (seeded, reproducible)
  int64_t now_s = 0;               // the driver's clock (virtual in simulation)
  PlacementCost* cost = nullptr;   // may be null: placers then use topology alone
  // A placer that could place the job now but chooses to wait for a better
  // placement says why here (and returns no placement); the cycle then ends
  // kDeferred instead of kUnschedulable, so queues do not hold capacity for it.
  std::string* deferred = nullptr;
  // Nodes a blocked head's backfill reservation counts on (per NodeId, 1 =
  // reserved), while the queue backfills behind it: a placer that can
  // should prefer other nodes, so a backfilled job does not take the
  // capacity the head is waiting for. Empty outside backfill.
  std::span<const uint8_t> reserved_nodes;
  // The queue needs a placement now if there is one (a job reclaiming its
  // tenant's floor): placers must not defer it for a better one — unless
  // the best one now is more than `no_defer_slowdown_max` times slower than
  // a compact one (a gang spread over many hosts can run 4-8x longer, which
  // costs more GPU-hours than waiting for its floor to come back whole).
  bool no_defer = false;
  double no_defer_slowdown_max = std::numeric_limits<double>::infinity();
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view name() const = 0;
};

// Decides whether a node can host the job at all, right now.
class FilterPlugin : public virtual Plugin {
 public:
  virtual bool Filter(const CycleContext& ctx, const PodRequest& pod, NodeId node) const = 0;
};

// Ranks feasible nodes; higher is better, in [kMinNodeScore, kMaxNodeScore]
// after Normalize.
class ScorePlugin : public virtual Plugin {
 public:
  // Called once per cycle with the feasible nodes before any Score call.
  virtual void PreScore(const CycleContext& /*ctx*/, const PodRequest& /*pod*/,
                        std::span<const NodeId> /*feasible*/) {}
  virtual int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId node) = 0;
  // Rescales the scores of all feasible nodes in place, if the plugin needs it.
  virtual void Normalize(std::span<int64_t> /*scores*/) const {}
};

// Chooses the devices on the chosen node (Open-GPU-Share's Reserve step).
// Returns nullopt if the node cannot host the job after all.
class DeviceSelectPlugin : public virtual Plugin {
 public:
  virtual std::optional<NodeAssignment> SelectDevices(const CycleContext& ctx, const PodRequest& pod,
                                                      NodeId node) = 0;
};

// Observes binds and unbinds to keep per-node state (Reserve/Unreserve).
// Both must be idempotent with respect to the job id.
class ReservePlugin : public virtual Plugin {
 public:
  virtual void Reserve(const ClusterState& cluster, const Job& job, const Placement& placement) = 0;
  virtual void Unreserve(const ClusterState& cluster, const Job& job, const Placement& placement) = 0;
};

// All-or-nothing placement of a job that may span nodes (a gang). Returns
// nullopt if the gang cannot be placed now.
class GangPlacePlugin : public virtual Plugin {
 public:
  virtual std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) = 0;
  // True for a topology placer that places every whole-GPU job itself,
  // single-node ones included (honouring Job::single_node), from the
  // per-domain aggregates instead of a scan over all nodes. Sharing and
  // CPU-only jobs still take the node path.
  virtual bool PlacesWholeGpuJobs() const { return false; }
};

// Places a job that asks for one MIG instance (Job::mig_profile): which GPU,
// which instance. Returns nullopt if no GPU can host it now.
class MigPlacePlugin : public virtual Plugin {
 public:
  virtual std::optional<Placement> PlaceMig(const CycleContext& ctx, const PodRequest& pod) = 0;
};

}  // namespace tidal
