// Kubernetes topology writers, each a multi-document YAML stream:
//  * Kueue: a kueue.x-k8s.io/v1beta1 Topology with one level per tidal level
//    present (a node label key each, kubernetes.io/hostname last) and the
//    node label patches (kind: Node, metadata.labels) Kueue TAS reads.
//  * KAI scheduler: a kai.scheduler/v1alpha1 Topology (levels by node label)
//    plus the node labels.
//  * Volcano: topology.volcano.sh/v1alpha1 HyperNode objects, one per
//    switch domain (tier 1 = the lowest switch level present, often leaf or
//    block), members by exact node name (an anchored regexMatch for names
//    over 63 characters) or by HyperNode name.
// Label keys are tidal.io/topology-<level>; see k8s.cc for why and for how
// names Kubernetes cannot take are rewritten. Host names must be valid node
// names (an error otherwise); domains without hosts are left out, in a comment.
#pragma once

#include <string>

#include "topology/topology.h"

namespace tidal::topo {

Result<std::string> WriteKueueTopology(const Topology& t);
Result<std::string> WriteKaiTopology(const Topology& t);
Result<std::string> WriteVolcanoHyperNodes(const Topology& t);

}  // namespace tidal::topo
