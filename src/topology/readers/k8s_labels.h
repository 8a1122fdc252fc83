// Kubernetes node labels: `kubectl get nodes -o json` (a NodeList), one
// node's labels as a JSON object, or `kubectl get nodes --show-labels`.
// Topology comes from the GPU operator's nvidia.com/gpu.clique (NVLink
// domain), topograph's fabric.topograph.run/tier-N and
// accelerator.topograph.run/domain, and Kueue-style block/rack/hostname
// labels (cloud.google.com/gce-topology-block|subblock|host,
// topology.kubernetes.io/zone, ...); GPUs from nvidia.com/gpu.count and
// nvidia.com/gpu.product.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadK8sNodeLabels(std::string_view text, const std::string& source);

}  // namespace tidal::topo
