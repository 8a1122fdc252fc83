// Kubernetes node labels: `kubectl get nodes -o json` (a NodeList), one
// node's labels as a JSON object, or `kubectl get nodes --show-labels`.
// Topology comes from the GPU operator's nvidia.com/gpu.clique (NVLink
// domain), topograph's fabric.topograph.run/tier-N and
// accelerator.topograph.run/domain, and Kueue-style block/rack/hostname
// labels (cloud.google.com/gce-topology-block|subblock|host,
// topology.kubernetes.io/zone, ...); GPUs from nvidia.com/gpu.count and
// nvidia.com/gpu.product.
//
// Also read: `kubectl get nodes -o yaml`, single Node objects, JSON streams
// and multi-document YAML of Node, HyperNode (Volcano) and Topology (Kueue,
// KAI) objects, so that every writer in writers/k8s.h reads back.
//
// Label -> level (values are global ids unless "scoped": then a value names a
// domain within its parent, Kueue's convention, and the domain is named
// "<parent>/<value>"):
//
//   nvidia.com/gpu.clique                      block, NVLink  <ClusterUUID>.<CliqueID>: one NVL partition (GFD)
//   accelerator.topograph.run/domain           block, NVLink  topograph >= 2026-08; also its earlier keys
//     xclr.topology.nvidia.com/domain,                          (NVIDIA/topograph pkg/topology/topology.go history)
//     network.topology.nvidia.com/accelerator
//   fabric.topograph.run/tier-0 .. tier-3      leaf, spine, core, zone ("tier 0 is the switch closest to the node",
//     network.topology.nvidia.com/tier-N                        topograph docs/reference/node-labels.md); tier-4+: error
//   network.topology.nvidia.com/leaf|spine|core  leaf, spine, core (topograph before tiers)
//   tidal.io/topology-block|leaf|spine|core|zone  that level (tidal's writers); tidal.io/topology-block-nvlink=true
//                                                   marks an NVLink block
//   cloud.google.com/gce-topology-subblock     leaf   (GKE TAS: a block is a collection of sub-blocks)
//   cloud.google.com/gce-topology-block        spine
//   topology.k8s.aws/network-node-layer-3|2|1  leaf, spine, core (as topograph's label reference lists them)
//   topology.kubernetes.io/zone                zone
//   <any>/topology-rack                        leaf,  scoped  (Kueue docs: cloud.provider.com/topology-rack ...)
//   <any>/topology-block                       spine, scoped  (Kueue's block holds racks: not tidal's block)
//   kubernetes.io/hostname                     the node's name for a bare label mapping (objects use metadata.name)
//
// Noted, not modelled: accelerator.topograph.run/sub-domain (tidal has one
// block level), cloud.google.com/gce-topology-host (the machine under a VM),
// topology.kubernetes.io/region (above tidal's zone). Where a node has both
// gpu.clique and a different topograph accelerator domain, the clique (the
// finer NVLink partition) wins, with a note.
//
// Hosts in an NVLink block are NVLink hosts. GPUs: nvidia.com/gpu.count, or
// status.capacity nvidia.com/gpu (divided by nvidia.com/gpu.replicas), else
// unknown (gpus -1, with a note; Materialize fills them in). MIG: under the
// "single" strategy gpu.count counts MIG devices, so whole GPUs are
// ceil(count / devices per GPU) from nvidia.com/gpu.slices.gi; under "mixed"
// it is already whole GPUs; both are noted. The model is gpu.product without
// "-MIG-<profile>" and "-SHARED".
//
// Decisions: a node without topology labels among labelled ones is kept at
// the root with a note naming it (control-plane and CPU nodes have none; the
// root is the farthest place, so no locality is invented). Two labels of one
// level that disagree on a node, and a domain under two parents across nodes,
// are errors naming the nodes. Values naming domains of two levels (or a
// host) are prefixed "<level>:". A text starting with "..." is a
// documentation excerpt with labels left out: an error, not a guess.
#pragma once

#include <string>
#include <string_view>

#include "topology/topology.h"

namespace tidal::topo {

Result<Topology> ReadK8sNodeLabels(std::string_view text, const std::string& source);

}  // namespace tidal::topo
