// tidal as a kube-scheduler extender: the scheduler core decides where each
// GPU pod goes — the whole gang at once — and kube-scheduler, which still
// runs its own filters (taints, affinity, volumes) and binds, is told.
//
//  filter      The first time tidal sees a pod of a unit (a gang, or a lone
//              pod) it places the whole unit with its policy (the same
//              Scheduler and plugins as the simulator and tidal serve), on
//              the candidates kube-scheduler offers, and reserves that
//              placement in its cluster state: each pod of the unit gets a
//              slot on one node. The answer passes only the pod's slot node;
//              every other candidate fails, saying where tidal put the pod.
//              A unit that does not fit now fails every candidate with
//              tidal's reason (preemption may help); one that can never fit
//              fails them as unresolvable.
//  prioritize  The pod's slot node scores MaxExtenderPriority, the rest 0.
//  bind        The pod's reservation becomes a binding (tidal tells the API
//              server through the bind callback); a bind to any other node
//              is refused.
//  preempt     kube-scheduler's victims are kept per node only where tidal
//              agrees: no victim is a guaranteed-tier pod, none has
//              priority >= the preemptor's, none is inside its minimum run
//              time, and a spot pod evicts nothing.
//
// Reservations that no pod binds within `reservation_ttl_s` (kube-scheduler
// gave up on the pod, or a gang never assembled) are released. Forget()
// releases a pod that is gone (deleted or finished); the pod watch of the
// gate controller calls it.
//
// Not thread-safe: the HTTP layer serialises calls.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/k8s/extender_wire.h"
#include "adapters/k8s/objects.h"
#include "scheduler/scheduler.h"

namespace tidal::k8s {

struct ExtenderOptions {
  int64_t reservation_ttl_s = 120;
};

// Makes a binding in the API server (POST .../pods/{name}/binding). An error
// is reported to kube-scheduler in ExtenderBindingResult.Error.
using BindFn = std::function<Status(const ExtenderBindingArgs&)>;

class Extender {
 public:
  Extender(Scheduler scheduler, ExtenderOptions options, BindFn bind);

  // `now_s`: the caller's clock, in seconds.
  ExtenderFilterResult Filter(const ExtenderArgs& args, int64_t now_s);
  Result<HostPriorityList> Prioritize(const ExtenderArgs& args, int64_t now_s);
  ExtenderBindingResult Bind(const ExtenderBindingArgs& args, int64_t now_s);
  Result<ExtenderPreemptionResult> Preempt(const ExtenderPreemptionArgs& args, int64_t now_s);
  // The pod is gone: its slot is free; a unit with no pods left gives its
  // GPUs back.
  void Forget(const std::string& uid);

  const Scheduler& scheduler() const { return scheduler_; }
  // The node tidal holds for the pod, "" if none.
  std::string SlotOf(const std::string& uid) const;
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
  // The pod's slot node (placing its unit first if needed), or why none.
  struct Decision {
    std::optional<NodeId> node;
    bool unresolvable = false;
    bool passthrough = false;  // not a GPU pod: tidal has no say
    std::string why;
  };
  Decision Decide(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s);
  Result<Unit*> Place(const PodInfo& pod, const std::vector<std::string>& candidates, int64_t now_s);
  void Expire(int64_t now_s);
  void Release(Unit& u);

  Scheduler scheduler_;
  ExtenderOptions options_;
  BindFn bind_;
  JobId next_job_ = 1;
  std::map<std::string, Unit> units_;
  std::unordered_map<std::string, std::string> unit_of_pod_;  // uid -> unit key
};

// Candidate node names of filter/prioritize args (NodeNames, else the
// NodeList's items).
Result<std::vector<std::string>> Candidates(const ExtenderArgs& args);

}  // namespace tidal::k8s
