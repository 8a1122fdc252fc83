// The scheduling core tidal runs for a Kubernetes cluster: GPU pods grouped
// into units (a gang, tidal.io/gang, or a lone pod), each unit placed whole
// by tidal's Scheduler (the same plugins as the simulator and tidal serve)
// and held in its ClusterState, one slot (a node) per pod. Both ways tidal
// drives Kubernetes go through it: the extender verbs (extender.h) and the
// scheduling-gate controller (gate_controller.h); what the API server says
// (bindings, deletions) reaches it through the gate controller's pod watch.
//
// Reservations that no pod of a unit is bound to within the TTL (kube-
// scheduler gave up on the pod, a gang never assembled) are released.
// Not thread-safe: callers serialise.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/k8s/objects.h"
#include "scheduler/scheduler.h"

namespace tidal::k8s {

class PodScheduler {
 public:
  PodScheduler(Scheduler scheduler, int64_t reservation_ttl_s);

  struct Decision {
    std::optional<NodeId> node;  // the pod's slot, when it is among the candidates
    bool unresolvable = false;   // can never fit as asked
    bool passthrough = false;    // not a GPU pod: tidal has no say
    std::string why;             // where tidal put the pod, or why it could not
  };
  // The pod's node: its unit (placed whole, on the candidate nodes, the
  // first time one of its pods is asked about) holds a slot for it.
  Decision Decide(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s);
  // The pod is bound to `node` in the API server. A pod tidal holds a slot
  // for must be bound there; a GPU pod tidal does not know (bound before
  // tidal started, or by someone else) is adopted where it runs.
  Status MarkBound(const PodInfo& pod, const std::string& node, int64_t now_s);
  // The same for a pod tidal holds a slot for on `node`; false (nothing
  // changes) if it holds none there.
  bool MarkHeldBound(const std::string& uid, const std::string& node, int64_t now_s);
  // The pod is gone (deleted, or finished): its slot is free; a unit with no
  // pods left gives its GPUs back. Unknown UIDs are ignored.
  void Forget(const std::string& uid);
  // Whether tidal lets `preemptor` evict `victim_uid`: a pod tidal does not
  // hold is kube-scheduler's call; one it holds must be of lower priority,
  // not guaranteed-tier, past its minimum run time, and the preemptor not spot.
  bool MayPreempt(const PodInfo& preemptor, const std::string& victim_uid, int64_t now_s) const;
  // Releases unbound reservations older than the TTL.
  void Expire(int64_t now_s);

  const Scheduler& scheduler() const { return scheduler_; }
  Status Cordon(const std::string& node);
  Status Uncordon(const std::string& node);
  std::string SlotOf(const std::string& uid) const;  // "" if none
  bool IsBound(const std::string& uid) const;
  size_t num_units() const { return units_.size(); }

 private:
  struct Unit {
    std::string key;
    std::unique_ptr<Job> job;
    int32_t gpus_per_pod = 0;
    std::string tier;
    int32_t priority = 0;
    int64_t min_runtime_s = 0;
    int64_t reserved_at = 0;
    std::vector<NodeId> slots;       // one per pod of the unit
    std::vector<std::string> owner;  // the pod UID holding each slot ("" free)
    std::vector<int64_t> bound_at;   // -1 until bound
  };
  Result<Unit*> Place(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s);
  // A placement of `job` on the allowed nodes only (allowed[node] != 0).
  Result<Placement> TryOn(const Job& job, const std::vector<uint8_t>& allowed);
  // Binds the placement and records the unit (slots free, none bound).
  Result<Unit*> AddUnit(std::string key, const PodInfo& pod, std::unique_ptr<Job> job, Placement placement, std::vector<NodeId> slots,
                        int64_t now_s);
  void Release(Unit& u);
  const Unit* UnitOf(const std::string& uid, size_t* slot) const;

  Scheduler scheduler_;
  int64_t ttl_s_;
  JobId next_job_ = 1;
  std::map<std::string, Unit> units_;
  std::unordered_map<std::string, std::string> unit_of_pod_;  // uid -> unit key
};

}  // namespace tidal::k8s
