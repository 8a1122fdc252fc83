// tidal as a scheduling-gate controller: pods created with the gate
// tidal.io/admission (spec.schedulingGates) wait until tidal admits them.
// tidal admits a unit (a gang, tidal.io/gang + tidal.io/gang-size, or a lone
// pod) only when all its pods exist, places it whole with the shared
// PodScheduler, writes each pod's node affinity (metadata.name In [its
// node], allowed while a pod is gated) and removes the gate in the same
// JSON patch, guarded by the pod's resourceVersion. kube-scheduler then
// binds each pod where tidal put it — gang-safe, which the extender
// protocol alone is not (it sees one pod at a time).
//
// A unit tidal cannot place yet stays gated; each of its pods carries the
// annotation tidal.io/why-pending with tidal's reason (written when it
// changes). The pod watch also feeds the PodScheduler what the API server
// says: bindings (kube-scheduler's, or anyone's: tidal adopts GPU pods it
// did not place), pods that finish (phase Succeeded or Failed) or are
// deleted; nodes cordoned (spec.unschedulable) come from the node list, read
// at every poll.
//
// API calls (KEP-3521 pod scheduling readiness, KEP-3838 mutable pod
// scheduling directives): GET /api/v1/pods, GET /api/v1/pods?watch=1,
// PATCH /api/v1/namespaces/{ns}/pods/{name} (application/json-patch+json).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/k8s/kube_client.h"
#include "adapters/k8s/objects.h"
#include "adapters/k8s/pod_scheduler.h"

namespace tidal::k8s {

inline constexpr std::string_view kAdmissionGate = "tidal.io/admission";
inline constexpr std::string_view kWhyPendingAnnotation = "tidal.io/why-pending";

// The JSON patch that pins a gated pod to `node` and removes the gate:
// node affinity added without disturbing the pod's own (matchFields added
// to each of its required terms), the gate removed by index after a test
// of its name, all guarded by a test of the resourceVersion.
Result<ojson> AdmitPatch(const ojson& pod, const std::string& node);

class GateController {
 public:
  // Calls into `core` are serialised on `mu` (shared with the extender).
  GateController(KubeClient& api, PodScheduler& core, std::mutex& mu, std::function<int64_t()> clock);

  // Lists the pods (all namespaces): rebuilds what runs (bound GPU pods are
  // marked or adopted), collects the gated ones, then admits what it can.
  Status Sync();
  // Reads the nodes: spec.unschedulable cordons a node in tidal, its absence
  // uncordons it. Run does this at every poll.
  Status SyncNodes();
  // Watches pods from the last list until `stop` (checked between events and
  // at least every `poll_s`), admitting as pods arrive; re-lists when the
  // watch expires (410 Gone) or breaks.
  Status Run(const std::atomic<bool>& stop, int poll_s = 5);
  // One watch event (ADDED, MODIFIED, DELETED).
  void OnPod(std::string_view type, const ojson& pod);
  // Admits every unit whose pods are all present and that tidal can place
  // now; returns how many pods were admitted.
  int Admit();

  // What went wrong and was skipped (a pod tidal cannot read, a patch the
  // API server refused), newest last; bounded.
  const std::vector<std::string>& problems() const { return problems_; }
  size_t num_gated() const;

 private:
  void Problem(std::string message);
  void SetWhyPending(const ojson& pod, const std::string& why);

  KubeClient& api_;
  PodScheduler& core_;
  std::mutex& mu_;
  std::function<int64_t()> clock_;
  std::string resource_version_;
  // unit key -> uid -> the gated pod as last seen
  std::map<std::string, std::map<std::string, ojson>> gated_;
  std::map<std::string, std::string> why_;  // uid -> the reason last written
  std::vector<std::string> problems_;
  std::set<std::string> unknown_nodes_;  // nodes not in tidal's cluster, already reported
};

}  // namespace tidal::k8s
