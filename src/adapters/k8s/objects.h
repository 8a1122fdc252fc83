// The few fields of Kubernetes Pods and Nodes tidal schedules by, read from
// the objects kube-scheduler sends (v1.Pod, v1.NodeList), and a node list as
// a tidal cluster.
//
// A pod's request is what kube-scheduler counts (the resource model of
// k8s.io/component-helpers resource.PodRequests): per resource, the sum over
// its containers, at least the largest init container, plus
// spec.overhead; a container's request is resources.requests, or its
// limits where only limits are given (extended resources such as
// nvidia.com/gpu must be given as limits, and may not be overcommitted).
//
// tidal's own keys (docs/kubernetes.md):
//   label      tidal.io/gang        a gang: the pods scheduled all-or-nothing (with tidal.io/gang-size)
//   label      tidal.io/gang-size   how many pods the gang has (every pod says the same)
//   label      tidal.io/qos         guaranteed | standard | spot (default standard)
//   annotation tidal.io/gpu-milli   a fraction of one GPU (1..999) for a pod asking nvidia.com/gpu: 1
//   annotation tidal.io/min-runtime-s  seconds after binding before tidal lets the pod be preempted
// The tenant is the namespace; the priority is spec.priority.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/k8s/go_json.h"
#include "cluster/cluster_state.h"
#include "common/result.h"
#include "topology/topology.h"
#include "workload/job.h"

namespace tidal::k8s {

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// A resource.Quantity ("500m", "4", "32Gi", "1.5G", "2e3") scaled and
// rounded up (as Kubernetes rounds requests up: 0.1m of CPU is 1m): scale > 0
// multiplies by scale (a power of ten), scale < 0 divides by 2^-scale.
// Errors say what a quantity looks like.
Result<int64_t> ParseQuantity(std::string_view text, int64_t scale = 1);
// The same, in MiB (rounded up) and in milli-units.
Result<int64_t> QuantityMib(std::string_view text);
Result<int64_t> QuantityMilli(std::string_view text);

struct PodInfo {
  std::string name, namespace_, uid;
  int32_t priority = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;        // nvidia.com/gpu
  int32_t gpu_milli = 1000;  // per GPU; < 1000 only for a shared single GPU
  std::string gang;        // "" = not in a gang
  int32_t gang_size = 1;
  std::string tier = "standard";  // guaranteed | standard | spot
  int64_t min_runtime_s = 0;
  std::string node_name;   // spec.nodeName, where already bound
  // The key the pod's gang (or the pod alone) is scheduled under:
  // "<namespace>/<gang>" or "pod:<uid>".
  std::string UnitKey() const;
};

// Reads a v1.Pod object. Errors name the pod and the field.
Result<PodInfo> ReadPod(const ojson& pod);

struct ImportedNodes {
  std::vector<NodeSpec> nodes;
  std::shared_ptr<const topo::Topology> topology;
  std::vector<std::string> unschedulable;  // spec.unschedulable (cordoned): tidal cordons them too
  std::vector<std::string> notes;          // from the topology reader
};

// A v1.NodeList (`kubectl get nodes -o json`, or the Nodes of a filter
// request) as tidal's cluster: CPU and memory from status.allocatable, GPUs
// and their model from the GPU operator's labels (status.allocatable
// nvidia.com/gpu where labels are missing), the topology from the node
// labels (topology/readers/k8s_labels.h). `source` names the list in
// messages.
Result<ImportedNodes> ImportNodes(const ojson& node_list, const std::string& source);

}  // namespace tidal::k8s
