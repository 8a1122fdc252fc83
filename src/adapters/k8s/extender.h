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
// The units, slots and reservations live in the PodScheduler it is given
// (pod_scheduler.h), which the gate controller shares.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "adapters/k8s/extender_wire.h"
#include "adapters/k8s/objects.h"
#include "adapters/k8s/pod_scheduler.h"

namespace tidal::k8s {

// Makes a binding in the API server (POST .../pods/{name}/binding). An error
// is reported to kube-scheduler in ExtenderBindingResult.Error.
using BindFn = std::function<Status(const ExtenderBindingArgs&)>;

class Extender {
 public:
  Extender(PodScheduler& core, BindFn bind) : core_(core), bind_(std::move(bind)) {}

  // `now_s`: the caller's clock, in seconds.
  ExtenderFilterResult Filter(const ExtenderArgs& args, int64_t now_s);
  Result<HostPriorityList> Prioritize(const ExtenderArgs& args, int64_t now_s);
  ExtenderBindingResult Bind(const ExtenderBindingArgs& args, int64_t now_s);
  Result<ExtenderPreemptionResult> Preempt(const ExtenderPreemptionArgs& args, int64_t now_s);


 private:
  PodScheduler& core_;
  BindFn bind_;
};

// Candidate node names of filter/prioritize args (NodeNames, else the
// NodeList's items).
Result<std::vector<std::string>> Candidates(const ExtenderArgs& args);

}  // namespace tidal::k8s
