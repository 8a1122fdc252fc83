// The scheduler: the only writer of ClusterState. It runs a scheduling cycle
// for a job, binds the result and tells reserve plugins; it releases jobs that
// finish. The same object serves the simulator (virtual clock) and, later,
// the daemon and the Slurm/Kubernetes adapters (where "bind" is a call to the
// real manager).
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <unordered_map>

#include "cluster/cluster_state.h"
#include "common/rng.h"
#include "framework/framework.h"

namespace tidal {

class Scheduler {
 public:
  Scheduler(ClusterState cluster, Profile profile, uint64_t seed)
      : cluster_(std::move(cluster)), framework_(std::move(profile)), rng_(seed) {}

  const ClusterState& cluster() const { return cluster_; }
  Framework& framework() { return framework_; }

  // Resolves the job against this cluster (unknown GPU models are
  // kUnresolvable), runs one cycle and binds. On kUnschedulable nothing
  // changes. The job must outlive its allocation.
  Result<const Placement*> ScheduleAndBind(const Job& job);
  // Runs a cycle without binding (what-if).
  Result<Placement> TrySchedule(const Job& job);
  // The same, on a copy of the random state: asking leaves the run's random
  // choices untouched (explanations must not change what happens).
  Result<Placement> Probe(const Job& job);
  Status Release(const Job& job);
  // Binds a placement decided earlier (a what-if that is undone: the victims
  // of a preemption plan that did not work out go back where they were).
  Status Bind(const Job& job, Placement placement);

  // A copy that goes its own way from here (a forward run of the queue,
  // sim/start_estimate.h): the same cluster state, random state and clock,
  // with `profile` — fresh plugins of the same placer, since plugins are not
  // copyable — whose reserve plugins are told of every allocation
  // (`job_of` gives the job bound under an id). Plugins whose only state is
  // what Reserve/Unreserve tell them and caches (all of tidal's) then
  // decide exactly as this scheduler's would. The placement cost is shared
  // (borrowed as here); no reserved nodes or no-defer flag carry over (both
  // are set and cleared within a pass).
  Scheduler Fork(Profile profile, const std::function<const Job*(JobId)>& job_of) const;

  // The driver's clock, handed to plugins (CycleContext::now_s).
  void set_now(int64_t now_s) { now_s_ = now_s; }
  int64_t now() const { return now_s_; }
  // A placement cost model for topology placers (borrowed; may be null).
  void set_placement_cost(PlacementCost* cost) { cost_ = cost; }
  // Nodes the queue's backfill reservation counts on (CycleContext::
  // reserved_nodes); borrowed, empty to clear.
  void set_reserved_nodes(std::span<const uint8_t> nodes) { reserved_ = nodes; }
  // CycleContext::no_defer (and its slowdown bound) for the next cycles,
  // until cleared.
  void set_no_defer(bool v, double slowdown_max = std::numeric_limits<double>::infinity()) {
    no_defer_ = v;
    no_defer_slowdown_max_ = slowdown_max;
  }
  // Returns an idle MIG GPU to the whole-GPU pool (ClusterState::DisableMig).
  Status DisableMig(NodeId n, int32_t gpu) { return cluster_.DisableMig(n, gpu); }
  // Drains node n (ClusterState::Cordon): nothing new is placed there; its
  // running jobs keep running, and what they release stays out of the pool
  // until Uncordon.
  Status Cordon(NodeId n) { return cluster_.Cordon(n); }
  Status Uncordon(NodeId n) { return cluster_.Uncordon(n); }
  // Attaches a topology to the cluster; only before anything is bound.
  Status AttachTopology(std::shared_ptr<const topo::Topology> t) { return cluster_.AttachTopology(std::move(t)); }

 private:
  ClusterState cluster_;
  Framework framework_;
  Rng rng_;
  int64_t now_s_ = 0;
  PlacementCost* cost_ = nullptr;
  std::span<const uint8_t> reserved_;
  bool no_defer_ = false;
  double no_defer_slowdown_max_ = std::numeric_limits<double>::infinity();
};

}  // namespace tidal
