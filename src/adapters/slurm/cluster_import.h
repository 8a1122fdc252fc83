// A Slurm cluster as tidal's ClusterState sees it: its nodes (CPUs, memory,
// GRES GPUs and their type as the GPU model), and the switch tree of its
// topology.conf (topology/tree) — so that tidal places on the real nodes and
// Slurm's own placement agrees with tidal's topology (export it back with
// `tidal topo export --to slurm-conf`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/slurm/slurm_json.h"
#include "cluster/cluster_state.h"
#include "topology/topology.h"

namespace tidal::slurm {

struct ImportedCluster {
  std::vector<NodeSpec> nodes;
  std::shared_ptr<const topo::Topology> topology;  // null without a topology file
  std::vector<std::string> drained;                // drained or down in Slurm: tidal cordons them
};

// The nodes in `partition` ("" = all). A node's GPU model is its GRES type
// in upper case ("h100" -> "H100"), or `default_model` for untyped GRES.
// `topology_conf` (may be empty) is the text of topology.conf, read with
// `topology_source` as its name; its hosts must be exactly those nodes.
Result<ImportedCluster> ImportCluster(const std::vector<SlurmNode>& nodes, const std::string& partition,
                                      const std::string& default_model, std::string_view topology_conf = {},
                                      const std::string& topology_source = "topology.conf");

}  // namespace tidal::slurm
